"""CharXiv section (Wang et al. 2024): reasoning accuracy overall and per answer type, descriptive accuracy overall and
per question group, with 95% Wilson intervals, beside the leaderboard rows of the authors' README
(``references.yaml``, ``charxiv_full``), from the ``breakdown`` metric of the ``charxiv_full_*`` tasks. Each run's
accuracy is over its graded questions; the ungraded (a grading that failed) are counted beside it, and the
authors' own figure (ungraded counted 0 over all questions) is in the column ``authors' figure``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.charxiv.scores import ANSWER_TYPES, GROUP_ORDER
from scifig_tasks.report.document import Note, Section, Table, percent_ci
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run

KINDS = {
    "reasoning": ("by_answer_type", dict(zip(("tc", "tg", "nc", "ng"), ANSWER_TYPES.values(), strict=True))),
    "descriptive": ("by_group", dict(zip(("inex", "enum", "patt", "cntg", "comp"), GROUP_ORDER, strict=True))),
}
"""Kind -> the breakdown it is shown by and its columns (the leaderboard's key -> the group's name)."""


def _cell(cell: dict[str, Any] | None) -> str:
    if not cell or cell.get("accuracy") is None:
        return "-"
    return percent_ci(cell["accuracy"] / 100, [bound / 100 for bound in cell["ci95"]])


def _rows(runs: list[Run], kind: str) -> tuple[list[list[str]], list[str]]:
    by, columns = KINDS[kind]
    rows: list[list[str]] = []
    ungraded: list[str] = []
    task = f"charxiv_full_{kind}"  # a run's _paper tasks are the run "<model> (paper protocol)" of the same names
    for run in (run for run in runs if run.has(task)):
        part = run.metric(task, "breakdown")
        if not isinstance(part, dict) or "overall" not in part:
            continue
        overall = part["overall"]
        cells = [_cell(part.get(by, {}).get(name)) for name in columns.values()]
        authors = "-" if overall.get("authors_score") is None else f"{overall['authors_score']:.2f}"
        rows.append([run.model, f"{overall['graded']}/{overall['questions']}", _cell(overall), *cells, authors])
        if part["counts"]["ungraded"]:
            ungraded.append(f"{run.model}: {part['counts']['ungraded']}")
    for ref in references("charxiv_full"):
        rows.append([ref.label(), "-", ref_cell(ref, kind), *(ref_cell(ref, key) for key in columns), "-"])
    return rows, ungraded


def section(runs: list[Run], figdir: Path) -> Section | None:
    present = [kind for kind in KINDS if any(run.has(f"charxiv_full_{kind}") for run in runs)]
    if not present:
        return None
    out = Section("CharXiv")
    for kind in present:
        rows, ungraded = _rows(runs, kind)
        header = ["model", "graded", "overall", *KINDS[kind][1].values(), "authors' figure"]
        out.blocks.append(
            Table(f"CharXiv {kind} accuracy (%, 95% Wilson interval, over graded questions)", header, rows)
        )
        if ungraded:
            out.blocks.append(
                Note(
                    f"Ungraded {kind} questions (the judge's grading failed after retries; left out of the accuracy, "
                    f"counted 0 in the authors' figure): {'; '.join(ungraded)}."
                )
            )
    refs = references("charxiv_full")
    if refs:
        out.blocks.append(Note(citations_note(refs)))
    return out
