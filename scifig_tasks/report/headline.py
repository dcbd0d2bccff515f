"""The report's first table: one row per model (and protocol), one column per benchmark part, each cell the part's
headline accuracy with its 95% Wilson interval.

Rule: a column is a registered benchmark's summary row (:class:`scifig_tasks.core.benchmark.SummaryRow`, the same
parts as the summary, in registry order); a cell pools the counts of the row's first alternative the run has
(``overall.all`` correct / n of each task's breakdown, :func:`scifig_tasks.core.stats.cell`), or, for a breakdown
without counts (Plot Twist), shows its standard accuracy (mean ± standard deviation over repeats, no interval). A
part no run has a number for is left out (captioning is scored by corpus metrics, shown in its section).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.stats import cell
from scifig_tasks.report.document import Note, Table, percent_ci
from scifig_tasks.report.runs import Run
from scifig_tasks.report.summary import Entry, breakdown, entries


def _counted(table: Mapping[str, Any]) -> tuple[int, int] | None:
    overall = table.get("overall")
    found = overall.get("all") if isinstance(overall, Mapping) else None
    if isinstance(found, Mapping) and isinstance(found.get("n"), int) and isinstance(found.get("correct"), int):
        return found["correct"], found["n"]
    return None


def _rate(table: Mapping[str, Any]) -> str | None:
    overall = table.get("overall")
    rate = overall.get("standard_acc") if isinstance(overall, Mapping) else None
    if not isinstance(rate, Mapping) or rate.get("mean") is None:
        return None
    text = f"{100 * rate['mean']:.1f}"
    return text if rate.get("std") is None else f"{text} ± {100 * rate['std']:.1f}"


def headline_cell(run: Run, entry: Entry) -> str | None:
    """The run's headline number for one summary row, or ``None`` when it has none."""
    tasks = next((alt for alt in entry.alternatives if any(run.has(task) for task in alt)), None)
    if tasks is None:
        return None
    tables = [breakdown(run, task) for task in tasks if run.has(task)]
    counts = [_counted(table) for table in tables]
    if counts and all(count is not None for count in counts):
        correct = sum(count[0] for count in counts if count is not None)
        total = sum(count[1] for count in counts if count is not None)
        if total:
            pooled = cell(correct, total)
            return percent_ci(pooled["accuracy"], pooled["ci95"])
    if len(tables) == 1:
        return _rate(tables[0])
    return None


def headline_table(runs: Sequence[Run]) -> Table | None:
    """Model x benchmark part, one row per run with at least one number (:func:`left_out` names the others);
    ``None`` when no run has a headline number."""
    columns = []
    cells: dict[tuple[str, str], str] = {}
    for entry in entries():
        found = {run.model: headline_cell(run, entry) for run in runs}
        if any(value is not None for value in found.values()):
            columns.append(entry.label)
            cells.update({(model, entry.label): value for model, value in found.items() if value is not None})
    if not columns:
        return None
    shown = [run for run in runs if any((run.model, label) in cells for label in columns)]
    rows = [[run.model, *(cells.get((run.model, label), "-") for label in columns)] for run in shown]
    caption = "Accuracy per model and benchmark (%, 95% Wilson interval"
    if any("(" not in value for value in cells.values()):  # a breakdown without counts (:func:`_rate`)
        caption += "; without an interval: standard accuracy, ± its standard deviation over repeats"
    caption += ")"
    return Table(caption, ["model", *columns], rows, kind="headline")


def left_out(runs: Sequence[Run]) -> Note | None:
    """One note naming the runs the headline table leaves out, each with why: the benchmark parts it has are scored by
    corpus-level metrics only (captioning), shown in the benchmark's own section; ``None`` when every run is in it."""
    said = []
    for run in runs:
        parts = [entry for entry in entries() if any(run.has(task) for alt in entry.alternatives for task in alt)]
        if any(headline_cell(run, entry) is not None for entry in parts):
            continue
        sections = list(dict.fromkeys(registry.benchmark(entry.benchmark).title for entry in parts))
        if parts:
            labels = "; ".join(entry.label for entry in parts)
            said.append(f"{run.model} ({labels}: no accuracy, see the {' and '.join(sections)} section)")
        else:
            said.append(f"{run.model} (no benchmark part of this table in its results)")
    if not said:
        return None
    return Note(f"Not in the table above: {'; '.join(said)}.")
