"""The benchmark registry: scifig's four benchmarks come from the ``scifig.benchmarks`` entry points, an outside
package's benchmark registers the same way, and a description missing a part is refused in one line naming it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import BenchmarkError, PublishedSet, Report, SummaryRow
from scifig_tasks.core.settings import Setting, text


def test_scifigs_own_benchmarks_are_registered() -> None:
    """The only test that spells out the list of benchmarks: scifig's five, registered by scifig itself; any other
    registered benchmark is an installed plugin's (another distribution's, such as the toy benchmark the test
    command installs)."""
    names = list(registry.benchmarks())
    assert names == sorted(names)
    distributions = {name: registry.package_of(name).split(" ", 1)[0] for name in names}
    assert [name for name in names if distributions[name] == "scifig"] == [
        "charxiv_full",
        "grab",
        "mmsci",
        "plot_twist",
        "scifibench",
    ]
    assert [name for name in names if registry.is_plugin(name)] == [
        name for name in names if distributions[name] != "scifig"
    ]
    assert registry.benchmark_of("plot_twist_robustness_open").name == "plot_twist"
    assert registry.benchmark_of("mme") is None
    assert registry.of_source("mmsci_captioning").name == "mmsci"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "Toy"}, "name must be a lower-case identifier"),
        ({"version": ""}, "version is missing"),
        ({"task_folder": Path("/nonexistent")}, "task_folder /nonexistent is not a folder"),
        ({"document_id": ()}, "document_id is missing"),
        ({"chance": {}}, "chance has no entry for source grab"),
        ({"name": "grabs"}, "source variable SCIFIG_GRAB_DATA must be named SCIFIG_GRABS_[<PART>_]DATA"),
        ({"curate": "curation.grab.cli.register"}, "'curation.grab.cli.register' is not a 'module:attribute'"),
        (
            {"report": Report(summary=(SummaryRow("GRAB", (("grab",),)),), published=PublishedSet("GRAB", "grab"))},
            "report.published is given but no report.summary row names coverage",
        ),
        (
            {"settings": (Setting("SCIFIG_OTHER_X", text, None, "x", "x", "grab"),)},
            "setting SCIFIG_OTHER_X must be named SCIFIG_GRAB_<WHAT>",
        ),
        ({"report": None}, "report is missing"),
    ],
)
def test_a_description_missing_a_part_is_refused_in_one_line(change: dict, message: str) -> None:
    with pytest.raises(BenchmarkError) as refused:
        replace(registry.benchmark("grab"), **change)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_an_outside_package_registers_a_benchmark_by_entry_point(tmp_path: Path) -> None:
    """A package on the path with a ``scifig.benchmarks`` entry point joins the registry; no scifig file changes."""
    package = tmp_path / "outside_bench"  # not toy_bench: the toy benchmark may be installed too
    (package / "tasks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tasks" / "toy.yaml").write_text(
        "task: toy\ndataset_path: toy\ntest_split: test\noutput_type: generate_until\ndoc_to_target: answer\n"
        "generation_kwargs:\n  until: [</s>, <|im_end|>, <|eot_id|>, <|endoftext|>, <end_of_turn>]\n"
        "metadata:\n  version: 1.0\n  scifig_source: toy\n"
    )
    (package / "description.py").write_text(
        "from dataclasses import replace\n"
        "from pathlib import Path\n"
        "from scifig_tasks.core.benchmark import Benchmark, Report, SummaryRow\n"
        "from scifig_tasks.core.chance import option_answer\n"
        "from scifig_tasks.core.schema import BenchmarkSource, Column, expect_str\n"
        "SOURCE = BenchmarkSource('Toy', '', ('test',), 'SCIFIG_TOY_DATA', (Column('qid', expect_str()),))\n"
        "BENCHMARK = Benchmark('toy', 'Toy', '1.0', Path(__file__).parent / 'tasks', {'toy': SOURCE}, ('qid',),\n"
        "    {'toy': option_answer}, Report((SummaryRow('Toy', (('toy',),)),)))\n"
    )
    info = tmp_path / "outside_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: outside-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[scifig.benchmarks]\ntoy = outside_bench.description:BENCHMARK\n")
    script = (
        "from scifig_tasks.core import registry, chance\n"
        "print(','.join(registry.benchmarks()), registry.package_of('toy'), registry.benchmark_of('toy_hard').name,\n"
        "      chance.guess('A) x\\nB) y', 'toy'))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    names, *printed = shown.stdout.split()
    assert {"grab", "mmsci", "plot_twist", "scifibench", "toy"} <= set(names.split(",")), shown.stdout
    assert printed[:3] == ["outside-bench", "0.1", "toy"] and printed[3] in ("A", "B"), shown.stdout
