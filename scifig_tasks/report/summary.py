"""The report's summary, first on the page: how many results files and models, which benchmarks, how many questions
each run scored, on which data (:mod:`scifig_tasks.report.coverage`) and how the judge was used, in words.

Manual: docs/reports.md, "The summary and the judge's use".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import SummaryRow
from scifig_tasks.core.judge import usage_words
from scifig_tasks.report.coverage import coverage
from scifig_tasks.report.document import Details, Note, Section, Table
from scifig_tasks.report.judge_status import added, judge_words
from scifig_tasks.report.protocols import protocol_of
from scifig_tasks.report.runs import Run


@dataclass(frozen=True)
class Entry:
    """One row of the summary: a benchmark part whose tasks are tried in turn (the first present is shown)."""

    benchmark: str
    """The registered benchmark's name (:func:`scifig_tasks.core.registry.benchmarks` key)."""
    row: SummaryRow

    @property
    def label(self) -> str:
        return self.row.label

    @property
    def alternatives(self) -> tuple[tuple[str, ...], ...]:
        """Each alternative: tasks whose questions add up (a group, or its parts when the group is absent)."""
        return self.row.alternatives


def entries() -> list[Entry]:
    """Every registered benchmark's summary rows, benchmarks in registry order, rows in their description's order."""
    return [Entry(name, row) for name, described in registry.benchmarks().items() for row in described.report.summary]


def coverage_tasks(entry: Entry, run: Run) -> list[str]:
    """The tasks whose coverage the row's data column states: of the row's coverage tasks the run has, every one
    when each is one published split, else the first; none when the benchmark describes no published set."""
    published = registry.benchmark(entry.benchmark).report.published
    if published is None:
        return []
    checked = [task for task in entry.row.coverage if run.has(task)]
    return checked if published.unit == "split" else checked[:1]


def breakdown(run: Run, task: str) -> dict[str, Any]:
    for name in ("breakdown", "caption_report"):
        value = run.metric(task, name)
        if isinstance(value, dict):
            return value
    return {}


def questions(table: Mapping[str, Any]) -> int | None:
    """The questions a breakdown counts: ``overall.all.n`` (GRAB, SciFIBench, MMSci), ``overall.questions`` (Plot
    Twist) or ``n`` (captioning)."""
    overall = table.get("overall")
    if isinstance(overall, dict):
        cell = overall.get("all") if isinstance(overall.get("all"), dict) else overall
        for name in ("n", "questions"):
            if isinstance(cell.get(name), int):
                return cell[name]
    return table["n"] if isinstance(table.get("n"), int) else None


def judge_model(run: Run, task: str) -> str:
    """The judge the results file of ``task`` names (``the judge`` when it names none)."""
    path = run.task_files.get(task)
    block = run.environments.get(path) if path is not None else None
    judge = block.get("judge") if isinstance(block, dict) else None
    return str(judge["model"]) if isinstance(judge, dict) and judge.get("model") else "the judge"


USAGE_FIELDS = ("requests", "cache_hits", "failed", "prompt_tokens", "completion_tokens")


def usage_text(run: Run, tasks: Sequence[str]) -> str | None:
    """The judge's usage for ``tasks`` in words (their results files' ``judge_usage``: a task's, else a group's
    row, under the name the file records, :meth:`Run.recorded`: a ``_paper`` task's own, not its plain twin's), or
    None when no file recorded any."""
    rows: list[Mapping[str, Any]] = []
    priced = True
    for task in tasks:
        path = run.task_files.get(task)
        block = run.environments.get(path) if path is not None else None
        usage = block.get("judge_usage") if isinstance(block, dict) else None
        if not isinstance(usage, dict):
            continue
        name = run.recorded(task)
        row = (usage.get("tasks") or {}).get(name) or (usage.get("groups") or {}).get(name)
        if isinstance(row, dict):
            rows.append(row)
            priced = priced and bool(usage.get("priced"))
    if not rows:
        return None
    total: dict[str, Any] = {name: sum(int(row.get(name) or 0) for row in rows) for name in USAGE_FIELDS}
    costs = [row.get("cost") for row in rows]
    total["cost"] = None if not priced or any(cost is None for cost in costs) else sum(costs)
    return usage_words(total, priced=priced)


def outputs(table: Mapping[str, Any]) -> int | None:
    """The outputs a Plot Twist breakdown counts (every output of every repeat: its ``answer_source`` counts)."""
    flags = table.get("flags") if isinstance(table.get("flags"), dict) else {}
    sources = flags.get("answer_source")
    return sum(int(count) for count in sources.values()) if isinstance(sources, dict) else None


def _row(run: Run, entry: Entry) -> tuple[list[str], int] | None:
    tasks = next((alt for alt in entry.alternatives if any(run.has(task) for task in alt)), None)
    if tasks is None:
        return None
    present = [task for task in tasks if run.has(task)]
    tables = [breakdown(run, task) for task in present]
    counted = [questions(table) for table in tables]
    scored = sum(n for n in counted if n is not None) if any(n is not None for n in counted) else None
    use = added(tables)
    judge = judge_words(use, judge_model(run, present[0])) if use is not None else "-"
    used = usage_text(run, present)
    if used is not None:
        judge = f"{judge}; {used}" if judge != "-" else used
    checked = coverage_tasks(entry, run)
    covered = [coverage(run, entry.benchmark, task, questions(breakdown(run, task))) for task in checked]
    partial = [item.text for item in covered if not item.full]
    if len(checked) > 1 and partial:
        partial = [f"{task}: {item.text}" for task, item in zip(checked, covered, strict=True) if not item.full]
    data = "; ".join(partial) if partial else (covered[0].text if len(covered) == 1 else "-")
    if covered and not partial and len(covered) > 1:
        data = "the full published set"
    return [run.model, entry.label, "-" if scored is None else f"{scored:,}", data, judge], scored or 0


RUNS_DETAILS = "Runs: data, protocol and judge use per model and benchmark"


def summary_section(
    runs: Sequence[Run],
    benchmarks: Sequence[str],
    files: int,
    models: Sequence[str] | None = None,
    headline: Table | None = None,
    below_headline: Sequence[Note] = (),
) -> Section:
    """The summary: counts in one sentence, the ``headline`` table (:mod:`scifig_tasks.report.headline`), then,
    collapsed, one row per model and benchmark part (data covered, protocol, judge use). Questions are counted once per
    benchmark part (the most any model scored), beside the model x question scores when there are several models;
    ``models``: the models the results files name (``runs`` may show a model once per protocol)."""
    rows, pairs = [], 0
    most: dict[str, int] = {}
    for run in runs:
        for entry in entries():
            found = _row(run, entry)
            if found is not None:
                held = {task for alternative in entry.alternatives for task in alternative if run.has(task)}
                protocols = sorted({protocol_of(run, task) for task in held})
                rows.append([*found[0][:2], ", ".join(protocols), *found[0][2:]])
                pairs += found[1]
                most[entry.label] = max(most.get(entry.label, 0), found[1])
    questions = sum(most.values())
    named = list(models) if models is not None else [run.model for run in runs]
    count = len(named)
    scored = f"{questions:,} questions scored"
    if len(runs) > 1:
        rows_are = "model x question" if len(runs) == count else "model x protocol x question"
        scored += f" ({pairs:,} {rows_are} scores)"
    sentence = (
        f"{files} results file{'s' if files != 1 else ''} (runs) of {count} model{'s' if count != 1 else ''} "
        f"({', '.join(named)}); benchmarks: {', '.join(benchmarks) or 'none'}; {scored}."
    )
    header = ["model", "benchmark", "protocol", "questions scored", "data", "judge"]
    blocks: list[Any] = [Note(sentence)]
    if headline is not None:
        blocks.append(headline)
    blocks += below_headline
    blocks.append(Details(RUNS_DETAILS, [Table("Runs", header, rows)]))
    return Section("Summary", blocks, anchor="summary")
