"""The dataset card (``README.md``) of a generated GRAB set: Hub YAML header plus provenance and composition.

The YAML header declares the parquet files as configs so ``datasets.load_dataset(out)`` reads split ``GRAB``
(and, when built, config ``properties_mc``). The body states how the set was generated (command settings,
generator version), its composition, the columns, the rounding convention and the citation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from curation import card
from curation.grab.affine import Operation
from curation.grab.plan import GENERATOR_VERSION, PlanItem
from scifig_tasks.benchmarks.grab.rules import precision_class

CITATION = """@article{roberts2024grab,
  title={GRAB: A Challenging GRaph Analysis Benchmark for Large Multimodal Models},
  author={Roberts, Jonathan and Han, Kai and Albanie, Samuel},
  journal={arXiv preprint arXiv:2408.11817},
  year={2024}
}"""


def _table(title: str, counts: Counter[Any], unit: str = "questions") -> str:
    rows = [f"| {title} | {unit} |", "|---|---:|"]
    rows += [f"| {key} | {counts[key]} |" for key in sorted(counts, key=lambda key: (str(type(key)), key))]
    return "\n".join(rows)


def card_text(items: Sequence[PlanItem], settings: dict[str, Any], mc_rows: int | None) -> str:
    configs = ["- config_name: default", "  data_files:", "  - split: GRAB", "    path: GRAB.parquet"]
    if mc_rows is not None:
        configs += [
            "- config_name: properties_mc",
            "  data_files:",
            "  - split: GRAB",
            "    path: properties_mc/GRAB.parquet",
        ]
    header = "\n".join(
        [
            "---",
            "pretty_name: GRAB (regenerated with scifig)",
            "license: apache-2.0",
            "task_categories:",
            "- visual-question-answering",
            "configs:",
            *configs,
            "---",
        ]
    )
    command = f"scifig curate grab --seed {settings['seed']} --dpi {settings['dpi']}"
    if settings.get("limit") is not None:
        command += f" --limit {settings['limit']}"
    if settings.get("tasks"):
        command += " --tasks " + " ".join(settings["tasks"])
    if settings.get("mc"):
        command += " --mc"
    mc_section = (
        ""
        if mc_rows is None
        else f"""
## Multiple-choice ablation (`properties_mc/`)

{mc_rows} properties questions with two more columns: `options` (five strings `A) ...` to `E) ...`, numeric
options in ascending order) and `mc_answer` (the correct letter). Options come from
`scifig_tasks.benchmarks.grab.multiple_choice.mc_options(answer, question, seed=pid)`, the rule the `grab_properties_mc`
lmms-eval task applies on the fly: distractors in the answer's own format, within 5 precision steps of the true value.
"""
    )
    families = Counter(
        Operation.from_params(step).family for item in items for step in item.params.get("operations", [])
    )
    return f"""{header}

# GRAB — regenerated with the scifig generator

Synthetic graph-analysis questions in the format of GRAB (Roberts, Han & Albanie, 2024,
[`jonathan-roberts1/GRAB`](https://huggingface.co/datasets/jonathan-roberts1/GRAB)), built by
`scifig.curation.grab` version {GENERATOR_VERSION} with:

```bash
{command}
```

The same command, seed and generator version give byte-identical files whatever the number of workers.
{len(items)} questions.

## Columns

The published features — `pid` (int), `question`, `decoded_image` (PNG), `image` (`images/{{pid}}.png`), `answer`,
`task`, `category`, `complexity` (int) — plus `metadata`, a JSON object with the generator version, seed, question
type, precision, the exact ground truth (`value`; rationals as `"p/q"` when not decimal) and the generating
parameters (`params`: curves, data points, transform operations, plot style), from which the answer can be
recomputed (`curation.grab.plan.answer_of`).

## Answers

Every answer is computed from the drawn parameters and rounded **half away from zero** to the precision the
question states (integer, 1 decimal place, nearest 10); two stationary points are `[x1, x2]` and equations print
every integer coefficient. Rational ground truth is rounded exactly; a double lying within 1e-6 of a rounding tie is
never used.

## Composition

{_table("task", Counter(item.task for item in items))}

{_table("category", Counter(item.category for item in items))}

{_table("complexity", Counter(item.complexity for item in items))}

{_table("precision class (paper Table 1)", Counter(precision_class(item.question) for item in items))}

{_table("answer format", Counter(item.precision for item in items))}

Transform operations, by family (drawn family first, 25% each as in the real set, then the parameters):

{_table("family", families, "operations")}
{mc_section}
## Use

```bash
SCIFIG_GRAB_DATA={{this directory}} lmms-eval --model ... --tasks grab
```

```python
import datasets
grab = datasets.load_dataset("{{this directory}}", split="GRAB")
```

## Citation

```bibtex
{CITATION}
```
"""


def write_card(out: Path, items: Sequence[PlanItem], settings: dict[str, Any], mc_rows: int | None) -> Path:
    """Write the card of the set built from ``items`` into ``out``; return its path."""
    return card.write_card(out, card_text(items, settings, mc_rows))
