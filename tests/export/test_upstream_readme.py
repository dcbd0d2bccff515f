"""The README of an exported task folder (``scifig_tasks/export/readme.py``): cut from the benchmark's package README by
the declared rule, self-contained and no longer than lmms-eval's neighbouring chart tasks' READMEs. In process, no
export: the package READMEs are read as the exporter reads them, with small data and code sections of its kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scifig_tasks.core import registry
from scifig_tasks.export.readme import MAX_LINES, PACKAGE_HOME, PACKAGE_ONLY_COLUMNS, upstream_readme
from tests.harness.benchmarks import own
from tests.harness.paths import FIXTURES

DATA = "## Data\n\nThe YAMLs load `org/dataset` (`dataset_path`), split `test`, with lmms-eval's own loader.\n"
CODE = "## Code layout\n\n`utils.py` holds the lmms-eval hooks; the rules are in `bench_core/`.\n"
OWN = sorted(name for name in registry.benchmarks() if own(name))
PACKAGE_ONLY_TEXT = {
    "a test path": r"\btests?/",
    "a test module": r"\btests\.[a-z_]",
    "a module path": r"\bscifig_tasks\b",
    "a scifig command": r"\bscifig (?:curate|eval|rescore|report|vlmeval|demo|compare)\b",
    "a scifig version": r"\bscifig \d",
    "a changelog": r"(?im)^#+ changelog",
}


def _package_readme(name: str) -> str:
    """The benchmark's package README as the exporter reads it (its title alone when the task folder has none)."""
    path = Path(registry.benchmark(name).task_folder) / "README.md"
    return path.read_text(encoding="utf-8") if path.is_file() else f"# {name}\n"


def _fidelity_rows(text: str) -> list[str]:
    """The rows of the package README's fidelity table (the one under ``## Fidelity``, before any ``###``), each
    without its last cell (the test that proves it)."""
    section = text.split("\n## Fidelity", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # after the header and its rule
    return [row.rsplit("|", 2)[0] + "|" for row in rows]


def _assert_self_contained(readme: str) -> None:
    for what, pattern in PACKAGE_ONLY_TEXT.items():
        found = re.search(pattern, readme)
        assert found is None, f"names {what}: {readme[max(found.start() - 60, 0) : found.end() + 60]!r}"


@pytest.mark.parametrize("name", OWN)
def test_each_benchmark_exports_a_short_self_contained_readme(name: str) -> None:
    """Within the limit, the title, the fidelity rows without the test column, the exporter's sections, the link to
    the full documentation and the citation last; nothing that exists only in the package."""
    package = _package_readme(name)
    readme = upstream_readme(package, bench=name, data_section=DATA, code_section=CODE)
    lines = readme.splitlines()
    assert len(lines) <= MAX_LINES, f"{name}: {len(lines)} lines"
    assert lines[0] == package.splitlines()[0] and lines[0].startswith("# ")
    _assert_self_contained(readme)
    assert not any(column in readme for column in PACKAGE_ONLY_COLUMNS)
    rows = _fidelity_rows(package)
    assert len(rows) >= 5, f"{name}: the package README's fidelity table has {len(rows)} rows"
    for row in rows:
        assert row in lines, f"{name}: fidelity row missing: {row[:80]}"
    assert "## Groups and tasks" in lines and ("## Fidelity" in lines)
    assert DATA.strip() in readme and CODE.strip() in readme
    assert sum(PACKAGE_HOME in line for line in lines) == 1
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[-1] == "## Citation" and readme.rstrip().endswith("```") and "@" in readme.split("## Citation")[1]
    assert readme.index(DATA.strip()) < readme.index(CODE.strip()) < readme.index("## Citation")


def test_the_toy_plugin_benchmark_exports_its_readme() -> None:
    """The toy benchmark, an outside package whose task folder has no README: the exporter's title, its sections,
    the link; no citation to put last. A README an outside author writes with headings of their own keeps the
    opening and the sections the rule names."""
    folder = FIXTURES / "toy_bench" / "toy_bench" / "tasks"
    package = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").is_file() else "# toybars\n"
    readme = upstream_readme(package, bench="toybars", data_section=DATA, code_section=CODE)
    assert readme.startswith(package.splitlines()[0] + "\n\n## Data\n") and PACKAGE_HOME in readme.splitlines()[-1]
    assert len(readme.splitlines()) <= MAX_LINES
    _assert_self_contained(readme)
    own_headings = (
        "# Toy bars\n\nTen bar charts, two questions each.\n\n## Setup of the author's lab\n\nOur cluster.\n\n"
        "## Scoring\n\nThe shared multiple-choice resolver.\n\n## Citation\n\n```bibtex\n@misc{toy}\n```\n"
    )
    readme = upstream_readme(own_headings, bench="toybars", data_section=DATA, code_section=CODE)
    assert "Ten bar charts" in readme and "## Scoring" in readme and "cluster" not in readme
    assert readme.rstrip().endswith("@misc{toy}\n```")


RULE = """# Bench

Opening paragraph.

## Groups and tasks

| name | questions |
|---|---|
| `bench` | 10 |

## Scoring: the paper setting

The task `bench_paper`.

```
## not a heading: a line of a prompt
```

### Re-scoring a saved run

Detail for the package's readers.

## Citation

```bibtex
@article{bench}
```

## Fidelity

| what the paper does | what these tasks do by default | switch | test that proves it |
|---|---|---|---|
| greedy | greedy | — | a test |

## Changelog

### 1.0

- First release.
"""


def test_the_rule_keeps_sections_by_heading_summaries_and_the_citation_last() -> None:
    readme = upstream_readme(RULE, bench="bench", data_section=DATA, code_section=CODE)
    assert [line for line in readme.splitlines() if line.startswith("## ")] == [
        "## Groups and tasks",
        "## Scoring: the paper setting",
        "## not a heading: a line of a prompt",  # inside fenced code: kept with its section
        "## Fidelity",
        "## Data",
        "## Code layout",
        "## Citation",
    ]
    assert "Re-scoring" not in readme and "Detail" not in readme and "First release" not in readme
    assert "| greedy | greedy | — |\n" in readme
    assert "| what the paper does | what these tasks do by default | switch |\n" in readme
    assert readme.endswith("@article{bench}\n```\n")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Built by `scifig curate bench --out DIR`.", "a scifig command ('`scifig curate')"),
        ("Proved by `tests/core/test_bench.py`.", "a path of the package's tests ('tests/')"),
        ("Read by `scifig_tasks.core.multiple_choice`.", "a module of the package by its import path"),
        ("Goes in scifig 0.3.0.", "a scifig version ('scifig 0.3.0')"),
        ("Set `SCIFIG_BENCH_DATA=DIR`.", "a local-data variable"),
        ("See [the data page](../../../docs/data.md).", "a relative link"),
    ],
)
def test_a_package_only_sentence_in_an_exported_section_is_refused(text: str, named: str) -> None:
    """Rule 4, in one line naming the benchmark, the section and what to do; under ``###`` the same text is fine."""
    package = f"# Bench\n\n## Scoring\n\nThe rules.\n{text}\n"
    with pytest.raises(ValueError, match="bench: the package README's section '## Scoring'") as refused:
        upstream_readme(package, bench="bench", data_section=DATA, code_section=CODE)
    assert named in str(refused.value) and "move it under a ### heading" in str(refused.value)
    assert "\n" not in str(refused.value)
    upstream_readme(
        package.replace(text, f"### In the package\n\n{text}"), bench="bench", data_section=DATA, code_section=CODE
    )


def test_a_readme_over_the_limit_and_a_misnamed_section_are_refused() -> None:
    long = "# Bench\n\n## Metrics\n\n" + "".join(f"* metric {index}\n" for index in range(MAX_LINES))
    with pytest.raises(
        ValueError, match=rf"bench: the exported README has \d+ lines, more than the {MAX_LINES} allowed"
    ):
        upstream_readme(long, bench="bench", data_section=DATA, code_section=CODE)
    with pytest.raises(ValueError, match="must start with '## Code layout', not"):
        upstream_readme("# Bench\n", bench="bench", data_section=DATA, code_section="## Code\n")
