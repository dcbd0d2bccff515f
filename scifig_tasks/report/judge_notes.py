"""The note beside a benchmark's numbers when outputs were scored without the judge they needed.

Rule: an output that needed the judge while none was configured is scored without it (no readable answer: counted
wrong). Each scorer counts such outputs as ``flags.judge.judge_off`` in its breakdown (GRAB's LLM extraction, Plot
Twist: one per output of every repeat); wherever one is above zero, the benchmark's section opens with a note naming
the model, the part, the count and the fix. The parts are the benchmark's summary rows
(:class:`scifig_tasks.core.benchmark.SummaryRow`: the first alternative a run has, so a group and its tasks are not
counted twice), then each of its other tasks that is no member of a group the run holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from scifig_tasks.core.benchmark import Benchmark
from scifig_tasks.core.judge.usage import scored_without_judge
from scifig_tasks.core.judged_hooks import JUDGE_SETTINGS
from scifig_tasks.report.document import Note
from scifig_tasks.report.runs import Run
from scifig_tasks.report.summary import breakdown, outputs, questions

FIX = f"{JUDGE_SETTINGS} and score the saved outputs again with scifig rescore RUN --out DIR"


def judge_off_note(benchmark: Benchmark, runs: Sequence[Run]) -> Note | None:
    """The note for one benchmark's section, or ``None`` when no output went without its judge."""
    found = []
    listed = {task for row in benchmark.report.summary for alternative in row.alternatives for task in alternative}
    for run in runs:
        members = {task for tasks in run.group_tasks.values() for task in tasks}
        parts: list[tuple[str, tuple[str, ...]]] = []
        for row in benchmark.report.summary:
            tasks = next((alt for alt in row.alternatives if any(run.has(task) for task in alt)), None)
            if tasks is not None:
                parts.append((row.label, tasks))
        others = sorted(t for t in run.entries if benchmark.owns(t) and t not in listed and t not in members)
        parts += [(task, (task,)) for task in others]  # a task no summary row names (plot_twist_open, ...)
        for label, tasks in parts:
            tables = [breakdown(run, task) for task in tasks if run.has(task)]
            off = sum(scored_without_judge(table) for table in tables)
            if not off:
                continue
            counted = [outputs(table) for table in tables]
            unit = "outputs" if any(n is not None for n in counted) else "questions"
            if unit == "questions":
                counted = [questions(table) for table in tables]
            total = sum(n for n in counted if n is not None)
            found.append(f"{run.model}, {label}: {off:,} of {total:,} {unit}")
    if not found:
        return None
    return Note(
        "Scored without the judge they needed (none was configured; an output without a readable answer counts as "
        f"wrong): {'; '.join(found)}. The numbers below may be lower than with the judge: {FIX}.",
        kind="judge",
    )
