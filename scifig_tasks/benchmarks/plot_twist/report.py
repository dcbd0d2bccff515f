"""Plot Twist section (Razeghi et al. 2024): the standard, relaxed and range-based accuracies and their collective
forms per chart type, radar charts by question type for each metric (the paper's radar figures), the robustness
variants' changes against the base charts, and the ChartQA subset. Values are means over repeats (± standard
deviation when lmms-eval ran ``--repeats``). The open-ended runs of the synthetic charts (``plot_twist_open``,
``plot_twist_open_pali``: the paper's protocol) stand beside the default rows, each named with its task. Published
rows: ``references.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scifig_tasks.report import figures
from scifig_tasks.report.coverage import coverage, coverage_note
from scifig_tasks.report.document import Figure, Note, Section, Table
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run

METRICS = {
    "standard_acc": "standard",
    "relaxed_acc": "relaxed",
    "range_acc": "range",
    "collective_standard": "coll. standard",
    "collective_relaxed": "coll. relaxed",
    "collective_range": "coll. range",
}
QUESTION_METRICS = ("standard_acc", "relaxed_acc", "range_acc")
CHARTS = {"scatter": "plot_twist_scatter", "bar": "plot_twist_bar", "pie": "plot_twist_pie"}
GROUP, ROBUSTNESS, CHARTQA = "plot_twist", "plot_twist_robustness", "plot_twist_chartqa"


def _rate(cell: dict[str, Any] | None, metric: str) -> str:
    rate = (cell or {}).get(metric)
    if not isinstance(rate, dict) or rate.get("mean") is None:
        return "-"
    text = f"{100 * rate['mean']:.1f}"
    return text if rate.get("std") is None else f"{text} ± {100 * rate['std']:.1f}"


OPEN = ("plot_twist_open", "plot_twist_open_pali")
"""The synthetic charts asked open-ended, as the paper does (the paper's protocol; the PaLI prompt style): shown
beside the default rows, each row named with its task."""


def _chart_tasks(group: str) -> dict[str, str]:
    return {chart: f"{group}_{chart}" for chart in CHARTS}


def _cells(run: Run, group: str = GROUP) -> dict[str, dict[str, Any]]:
    """``all`` and per chart type cells (from the group's breakdown, else from each chart task's own)."""
    breakdown = run.metric(group, "breakdown")
    if isinstance(breakdown, dict):
        return {"all": breakdown["overall"], **breakdown.get("chart_type", {})}
    return {
        chart: run.metric(task, "breakdown")["overall"]
        for chart, task in _chart_tasks(group).items()
        if isinstance(run.metric(task, "breakdown"), dict)
    }


def _questions(run: Run, group: str = GROUP) -> int | None:
    """Questions scored on the synthetic charts (the group's, else the chart tasks' summed)."""
    cells = _cells(run, group)
    if "all" in cells:
        return cells["all"].get("questions")
    return sum(cell.get("questions", 0) for cell in cells.values()) or None


def _question_types(run: Run, group: str = GROUP) -> dict[str, dict[str, Any]]:
    breakdown = run.metric(group, "breakdown")
    if isinstance(breakdown, dict):
        return breakdown.get("question_type", {})
    found: dict[str, dict[str, Any]] = {}
    for task in _chart_tasks(group).values():
        part = run.metric(task, "breakdown")
        if isinstance(part, dict):
            found.update(part.get("question_type", {}))
    return found


def _has(run: Run, group: str) -> bool:
    return run.has(group) or any(run.has(task) for task in _chart_tasks(group).values())


def section(runs: list[Run], figdir: Path) -> Section | None:
    shown = [
        (run, group, run.model if group == GROUP else f"{run.model}, {group}")
        for run in runs
        for group in (GROUP, *OPEN)
        if _has(run, group)
    ]
    robust = [run for run in runs if run.has(ROBUSTNESS)]
    chartqa = [run for run in runs if run.has(CHARTQA)]
    if not (shown or robust or chartqa):
        return None
    out = Section("Plot Twist (Chart101)")
    if shown:
        refs = references("plot_twist")
        rows = []
        for run, group, label in shown:
            for chart, cell in _cells(run, group).items():
                rows.append([label, chart, str(cell.get("questions", "-")), *(_rate(cell, m) for m in METRICS)])
        rows += [[ref.label(), "all", "-", *(ref_cell(ref, m) for m in METRICS)] for ref in refs]
        header = ["model", "charts", "questions", *METRICS.values()]
        if refs:
            covered = [
                (label, coverage(run, "plot_twist", group, _questions(run, group))) for run, group, label in shown
            ]
            if (note := coverage_note("plot_twist", covered)) is not None:
                out.blocks.append(note)
        out.blocks.append(Table("Plot Twist accuracies (%) on the synthetic charts", header, rows))
        if refs:
            out.blocks.append(Note(citations_note(refs)))
        grid: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
        for metric in QUESTION_METRICS:
            for run, group, label in shown:
                for chart, types in _question_types(run, group).items():
                    values = {t: cell[metric]["mean"] for t, cell in types.items() if metric in cell}
                    grid.setdefault(METRICS[metric], {}).setdefault(chart, {})[label] = values
        if grid:
            rows = []
            for run, group, label in shown:
                for chart, types in _question_types(run, group).items():
                    for kind, cell in types.items():
                        rows.append(
                            [
                                label,
                                chart,
                                kind,
                                str(cell["questions"]),
                                *(_rate(cell, m) for m in QUESTION_METRICS),
                            ]
                        )
            out.blocks.append(
                Table(
                    "Plot Twist by question type (%)",
                    ["model", "chart", "question type", "questions", *(METRICS[m] for m in QUESTION_METRICS)],
                    rows,
                )
            )
            path = figures.radar_grid(figdir / "plot_twist_radar.png", grid)
            out.blocks.append(
                Figure(path.name, "Plot Twist accuracy by question type: one radar per chart type and metric.")
            )
    if robust:
        variants = list(
            dict.fromkeys(v for run in robust for v in run.metric(ROBUSTNESS, "breakdown").get("delta_vs_base", {}))
        )
        rows = []
        deltas: dict[str, dict[str, float]] = {}
        for run in robust:
            summary = run.metric(ROBUSTNESS, "breakdown")
            for variant in variants:
                delta = summary.get("delta_vs_base", {}).get(variant)
                if delta is None:
                    continue
                cell = summary["variant"][variant]
                rows.append(
                    [run.model, variant, *(f"{_rate(cell, m)} ({100 * delta[m]:+.1f})" for m in QUESTION_METRICS)]
                )
                deltas.setdefault(run.model, {})[variant] = 100 * delta["standard_acc"]
        out.blocks.append(
            Table(
                "Plot Twist robustness: accuracy % (change vs the base charts, points)",
                ["model", "variant", *(METRICS[m] for m in QUESTION_METRICS)],
                rows,
            )
        )
        if deltas:
            path = figures.signed_bars(
                figdir / "plot_twist_robustness.png", deltas, "standard accuracy change (points)"
            )
            out.blocks.append(
                Figure(path.name, "Plot Twist robustness: change of standard accuracy against the base charts.")
            )
    if chartqa:
        rows = [
            [run.model, *(_rate(run.metric(CHARTQA, "breakdown")["overall"], m) for m in METRICS)] for run in chartqa
        ]
        out.blocks.append(Table("Plot Twist ChartQA subset (%)", ["model", *METRICS.values()], rows))
    return out
