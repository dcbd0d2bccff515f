"""GRAB section (Roberts et al. 2024): accuracy overall and per task (Table 3), per category (Table 4), per
precision class as the paper counts them (Table 1: integer — list and equation questions included —, 1 d.p.,
nearest 10; the finer answer formats beside them), and accuracy against complexity 0-9 with 95% Wilson
intervals (Fig. 6), from the ``accuracy`` and ``breakdown`` metrics of the ``grab`` tasks (the answer as a whole),
``grab_paper`` (the authors' truncation rule: shown as the model under the paper protocol) and, when run,
``grab_llm_extract`` and ``grab_properties_mc``; a VLMEvalKit run (one dataset for the whole group) gets its
complexity curves from its scored records. Beside each accuracy: how many outputs the other rule scores
differently, per answer format below. Published rows (``references.yaml``: overall, properties) are compared only
with runs scored by the authors' rule, as the paper's numbers were. This module is GRAB's ``report.section``; its
published sizes and tasks are read from GRAB's description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.grab import description as described
from scifig_tasks.benchmarks.grab.rules import PRECISIONS, RULES
from scifig_tasks.core.stats import Tally
from scifig_tasks.report import figures
from scifig_tasks.report.coverage import coverage, coverage_note
from scifig_tasks.report.document import Figure, Note, Section, Table, percent_ci
from scifig_tasks.report.judge_status import judge_use, judge_words
from scifig_tasks.report.protocols import protocol_of
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run
from scifig_tasks.report.summary import judge_model

TASKS = {"properties": "Properties", "function": "Functions", "series": "Series", "transform": "Transforms"}
SUBTASKS = dict(zip(described.TASK_QUESTIONS, described.SUBTASKS, strict=True))
"""Published task name -> its lmms-eval task (GRAB's description, :mod:`scifig_tasks.benchmarks.grab.description`)."""
DIMENSIONS = (
    ("category", "per category"),
    ("precision", "per precision class (paper Table 1: integer, 1 d.p., nearest 10)"),
    ("answer_format", "per answer format (integer, 1dp, nearest10, list, equation)"),
)
VARIANTS = {
    "grab": ("exact match", ""),
    "grab_llm_extract": ("LLM extraction, then exact match (the paper's protocol, §4.5)", "_llm_extract"),
}
WHOLE_ANSWER_SINCE = (2, 5)
"""The task version from which ``grab`` scores the answer as a whole; a ``grab`` run of an earlier version was scored
with the authors' truncation rule."""


def rule_of(run: Run, group: str) -> str:
    """The rule that scored ``group`` in ``run`` (a key of :data:`scifig_tasks.benchmarks.grab.rules.RULES`)."""
    if group == "grab_llm_extract":
        return "llm_extraction"
    if protocol_of(run, group) == "paper":
        return "truncation"
    version = run.task_versions.get(run.task_files.get(group, Path()), {}).get(run.recorded(group), "")
    try:
        recorded = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return "whole_answer"
    return "truncation" if recorded < WHOLE_ANSWER_SINCE else "whole_answer"


def differ_count(breakdown: dict[str, Any] | None) -> str:
    """How many outputs the other rule scores differently (``-`` when the breakdown does not say: a run scored before
    both verdicts were kept, the ablation)."""
    counts = breakdown.get("flags", {}).get("rules_differ") if isinstance(breakdown, dict) else None
    if not isinstance(counts, dict):
        return "-"
    return str(sum(count for key, count in counts.items() if key != "agree"))


def _overall(breakdown: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if not isinstance(breakdown, dict) else breakdown.get("overall", {}).get("all")


def _cell(cell: dict[str, Any] | None) -> str:
    return "-" if cell is None else percent_ci(cell["accuracy"], cell["ci95"])


def _task_cell(run: Run, group: str, suffix: str, task: str) -> dict[str, Any] | None:
    """A task's cell: from its own subtask, else from the group's per-task breakdown."""
    own = _overall(run.metric(SUBTASKS[task] + suffix, "breakdown"))
    if own is not None:
        return own
    breakdown = run.metric(group, "breakdown")
    return breakdown.get("task", {}).get(task) if isinstance(breakdown, dict) else None


def section(runs: list[Run], figdir: Path) -> Section | None:
    present = [group for group in VARIANTS if any(run.has(group) for run in runs)]
    with_mc = [run for run in runs if run.has("grab_properties_mc")]
    if not present and not with_mc:
        return None
    out = Section("GRAB")
    refs = references("grab")
    for group in present:
        suffix = VARIANTS[group][1]
        for rule in dict.fromkeys(rule_of(run, group) for run in runs if run.has(group)):
            shown = [run for run in runs if run.has(group) and rule_of(run, group) == rule]
            rows = []
            for run in shown:
                breakdown = run.metric(group, "breakdown")
                overall = _overall(breakdown)
                cells = [_cell(_task_cell(run, group, suffix, task)) for task in TASKS]
                n = str(overall["n"]) if overall else "-"
                rows.append([run.model, n, _cell(overall), differ_count(breakdown), *cells])
            if rule == "truncation" and refs:
                rows += [
                    [ref.label(), "-", ref_cell(ref, "overall"), "-", *(ref_cell(ref, t) for t in TASKS)]
                    for ref in refs
                ]
            if rule == "truncation" and group == "grab":
                covered = [
                    (run.model, coverage(run, "grab", group, (_overall(run.metric(group, "breakdown")) or {}).get("n")))
                    for run in shown
                ]
                if (note := coverage_note("grab", covered)) is not None:
                    out.blocks.append(note)
            header = ["model", "n", "overall", "other rule differs", *TASKS.values()]
            out.blocks.append(Table(f"GRAB accuracy (%, 95% Wilson interval), {RULES[rule]}", header, rows))
    if refs and "grab" in present:
        if all(rule_of(run, "grab") != "truncation" for run in runs if run.has("grab")):
            out.blocks.append(
                Note(
                    "No published rows beside these runs: the paper's numbers were scored with the authors' rule "
                    "(the output cut to the answer's length), these with the answer as a whole. The grab_paper task "
                    "scores as the authors did (scifig rescore --protocol paper re-scores a run's saved outputs so). "
                    + citations_note(refs)
                )
            )
        else:
            out.blocks.append(Note(citations_note(refs)))
        if (differ := _differ_table([run for run in runs if run.has("grab")])) is not None:
            out.blocks.append(differ)

    main = "grab" if "grab" in present else (present[0] if present else None)
    if main is not None:
        runs_main = [run for run in runs if run.has(main)]
        breakdowns = [run.metric(main, "breakdown") or {} for run in runs_main]  # a hand-made results file may lack it
        for dimension, title in DIMENSIONS:
            keys = list(dict.fromkeys(k for breakdown in breakdowns for k in breakdown.get(dimension, {})))
            if not keys:
                continue
            rows = [[key, *(_cell(breakdown.get(dimension, {}).get(key)) for breakdown in breakdowns)] for key in keys]
            out.blocks.append(
                Table(
                    f"GRAB {title} (%, 95% Wilson interval), {VARIANTS[main][0]}",
                    [dimension, *(r.model for r in runs_main)],
                    rows,
                )
            )
        out.blocks.append(
            Figure(
                _bars(runs_main, main, figdir),
                "GRAB accuracy per task and per category (error bars: 95% Wilson intervals).",
            )
        )
        complexity = _complexity_figure(runs_main, main, VARIANTS[main][1], figdir)
        if complexity is not None:
            out.blocks.append(
                Figure(
                    complexity,
                    "GRAB accuracy against complexity (shaded: 95% Wilson interval), as in the paper's Fig. 6.",
                )
            )
        out.blocks.append(_flags(runs_main, main))

    if with_mc:
        rows = []
        for run in with_mc:
            breakdown = run.metric("grab_properties_mc", "breakdown")
            resolution = (breakdown.get("flags", {}) or {}).get("resolution", {})
            flags = ", ".join(f"{k} {v}" for k, v in sorted(resolution.items())) or "-"
            rows.append([run.model, _cell(_overall(breakdown)), flags])
        out.blocks.append(
            Table(
                "GRAB properties, multiple-choice ablation (%, chance 20%)",
                ["model", "accuracy", "answers resolved"],
                rows,
            )
        )
    return out


def _differ_table(runs: list[Run]) -> Table | None:
    """Per answer format, the outputs only one rule counts right (``truncation_only``: ``"39"`` against ``"3"``;
    ``whole_answer_only``: an answer stated after words, an equation written otherwise)."""
    rows = []
    for run in runs:
        breakdown = run.metric("grab", "breakdown") or {}
        counts = breakdown.get("flags", {}).get("rules_differ")
        if not isinstance(counts, dict):
            continue
        cells = [
            f"{counts.get(f'{fmt}/truncation_only', 0)} / {counts.get(f'{fmt}/whole_answer_only', 0)}"
            for fmt in PRECISIONS
        ]
        rows.append([run.model, RULES[rule_of(run, "grab")], *cells])
    if not rows:
        return None
    return Table(
        "GRAB outputs the two rules score differently, per answer format (right only by truncation / right only as a "
        "whole answer)",
        ["model", "scored by", *PRECISIONS],
        rows,
    )


def _bars(runs: list[Run], group: str, figdir: Path) -> str:
    panels: dict[str, dict[str, dict[str, Any]]] = {"per task": {}, "per category": {}}
    for run in runs:
        breakdown = run.metric(group, "breakdown")
        for title, dimension in (("per task", "task"), ("per category", "category")):
            cells = breakdown.get(dimension, {})
            keys = [k for k in TASKS if k in cells] + [k for k in cells if k not in TASKS]
            panels[title][run.model] = {
                TASKS.get(key, key): (cells[key]["accuracy"], tuple(cells[key]["ci95"])) for key in keys
            }
    return figures.grouped_bars(figdir / f"{group}_bars.png", panels).name


def _complexity_of(run: Run, group: str, suffix: str, task: str) -> dict[str, Any]:
    """One task's accuracy per complexity level: from its subtask's breakdown (lmms-eval logs one per task), else
    tallied from the group's scored records (a VLMEvalKit run: one dataset for the whole group, its records carry
    ``task``, ``complexity`` and ``correct``)."""
    breakdown = run.metric(SUBTASKS[task] + suffix, "breakdown")
    if isinstance(breakdown, dict):
        return breakdown.get("complexity", {})
    tally = Tally()
    for sample in run.samples.get(group, []):
        record = sample.get("breakdown")
        if isinstance(record, dict) and record.get("task") == task and record.get("complexity") is not None:
            tally.add(bool(record.get("correct")), {"complexity": record["complexity"]})
    return tally.to_dict().get("complexity", {}) if tally.counts else {}


def _complexity_figure(runs: list[Run], group: str, suffix: str, figdir: Path) -> str | None:
    """Panels per task with complexity levels (function, series, transform); properties are all level 0."""
    panels: dict[str, dict[str, dict[int, Any]]] = {}
    for task in ("function", "series", "transform"):
        for run in runs:
            levels = {
                int(level): (cell["accuracy"], tuple(cell["ci95"]))
                for level, cell in _complexity_of(run, group, suffix, task).items()
            }
            if levels:
                panels.setdefault(TASKS[task], {})[run.model] = levels
    if not panels:
        return None
    return figures.accuracy_vs_level(figdir / f"{group}_complexity.png", panels).name


def _flags(runs: list[Run], group: str) -> Table:
    rows = []
    for run in runs:
        breakdown = run.metric(group, "breakdown")
        status = breakdown.get("flags", {}).get("output_status", {})
        judge = judge_use(breakdown)
        rows.append(
            [
                run.model,
                str(status.get("ok", 0)),
                str(status.get("empty", 0)),
                str(status.get("request_failed", 0)),
                judge_words(judge, judge_model(run, group)) if judge is not None else "-",
            ]
        )
    return Table(
        "GRAB outputs (counted wrong when empty or failed)", ["model", "ok", "empty", "request failed", "judge"], rows
    )
