"""SciFIBench section (Roberts et al. 2024): accuracy per split (Figure→Caption, Caption→Figure; CS and General),
per arXiv category with 95% Wilson intervals, how answers were resolved (rule / judge / unresolved), and the
alignment experiment of section 4.6 (Fig. 7: each variant's accuracy and its change against the baseline).
Published rows: ``references.yaml`` (CS splits). This module is SciFIBench's ``report.section``; the published split
size is read from SciFIBench's description (:mod:`scifig_tasks.benchmarks.scifibench.description`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.scifibench.description import SPLIT_QUESTIONS
from scifig_tasks.report import figures
from scifig_tasks.report.audit import audit_table
from scifig_tasks.report.coverage import coverage, coverage_note
from scifig_tasks.report.document import Figure, Note, Section, Table, percent, percent_ci
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run

SPLITS = {  # column key -> (task, heading)
    "cs_f2c": ("scifibench_cs_figure2caption", "CS F→C"),
    "cs_c2f": ("scifibench_cs_caption2figure", "CS C→F"),
    "general_f2c": ("scifibench_general_figure2caption", "General F→C"),
    "general_c2f": ("scifibench_general_caption2figure", "General C→F"),
}
GROUPS = {"cs": ("scifibench_cs", "CS"), "overall": ("scifibench", "overall")}
ALIGNMENT = "scifibench_alignment"


def _overall(run: Run, task: str) -> dict[str, Any] | None:
    breakdown = run.metric(task, "breakdown")
    return breakdown.get("overall", {}).get("all") if isinstance(breakdown, dict) else None


def _cell(cell: dict[str, Any] | None) -> str:
    return "-" if cell is None else percent_ci(cell["accuracy"], cell["ci95"])


def section(runs: list[Run], figdir: Path) -> Section | None:
    tasks = [task for task, _ in SPLITS.values()] + [task for task, _ in GROUPS.values()]
    main = [run for run in runs if any(run.has(task) for task in tasks)]
    aligned = [run for run in runs if run.has(ALIGNMENT)]
    if not main and not aligned:
        return None
    out = Section("SciFIBench")
    if main:
        refs = references("scifibench")
        columns = {**{k: v for k, v in SPLITS.items()}, **GROUPS}
        rows = [[run.model, *(_cell(_overall(run, task)) for task, _ in columns.values())] for run in main]
        rows += [[ref.label(), *(ref_cell(ref, key) for key in columns)] for ref in refs]
        header = ["model", *(heading for _, heading in columns.values())]
        covered = []
        for run in main:
            items = [
                (heading, coverage(run, "scifibench", task, (_overall(run, task) or {}).get("n")))
                for task, heading in (SPLITS["cs_f2c"], SPLITS["cs_c2f"])
                if run.has(task)
            ]
            if len(items) == 2 and items[0][1].text == items[1][1].text:  # one statement for both splits
                item = items[0][1]
                both = replace(item, text=f"both CS splits, {item.text}", scope=f"both CS splits, {item.scope}")
                covered.append((run.model, both))
            else:
                covered += [(f"{run.model}, {heading}", item) for heading, item in items]
        if refs and (note := coverage_note("scifibench", covered)) is not None:
            out.blocks.append(note)
        out.blocks.append(Table("SciFIBench accuracy (%, 95% Wilson interval)", header, rows))
        out.blocks.append(
            Note(
                f"Published values are on the paper's {SPLIT_QUESTIONS}-question Figure→Caption and Caption→Figure "
                "splits (now named CS_Figure2Caption / CS_Caption2Figure on the Hub). " + citations_note(refs)
            )
        )
        panels: dict[str, dict[str, dict[str, Any]]] = {}
        for task, heading in SPLITS.values():
            with_task = [run for run in main if run.has(task)]
            if not with_task:
                continue
            categories = list(
                dict.fromkeys(c for run in with_task for c in run.metric(task, "breakdown").get("category", {}))
            )
            rows = [
                [c, *(_cell(run.metric(task, "breakdown").get("category", {}).get(c)) for run in with_task)]
                for c in categories
            ]
            out.blocks.append(
                Table(f"SciFIBench {heading} per category (%)", ["category", *(r.model for r in with_task)], rows)
            )
            panels[heading] = {
                run.model: {
                    c: (cell["accuracy"], tuple(cell["ci95"]))
                    for c, cell in run.metric(task, "breakdown").get("category", {}).items()
                }
                for run in with_task
            }
        if panels:
            path = figures.grouped_bars(figdir / "scifibench_categories.png", panels)
            out.blocks.append(Figure(path.name, "SciFIBench accuracy per category (error bars: 95% Wilson intervals)."))
        out.blocks.append(_resolution(main))
        main_breakdowns = [
            (run.model, run.metric(task, "breakdown") if (task := _main_task(run)) else None) for run in main
        ]
        audited = audit_table("SciFIBench", main_breakdowns)
        if audited:
            out.blocks.append(audited)
    if aligned:
        out.blocks += _alignment(aligned, figdir)
    return out


def _main_task(run: Run) -> str | None:
    return next((task for task in ("scifibench", "scifibench_cs") if run.has(task)), None)


def _resolution(runs: list[Run]) -> Table:
    rows = []
    for run in runs:
        task = _main_task(run)
        parts = [run.metric(task, "breakdown")] if task else [run.metric(t, "breakdown") for t, _ in SPLITS.values()]
        counts: dict[str, int] = {}
        for part in parts:
            for method, count in ((part or {}).get("flags", {}).get("resolution", {}) or {}).items():
                counts[method] = counts.get(method, 0) + count
        rows.append([run.model, *(str(counts.get(k, 0)) for k in ("rule", "judge", "unresolved"))])
    return Table(
        "SciFIBench answer resolution (unresolved answers are counted wrong)",
        ["model", "rule", "judge", "unresolved"],
        rows,
    )


def _alignment(runs: list[Run], figdir: Path) -> list[Any]:
    variants = list(dict.fromkeys(v for run in runs for v in run.metric(ALIGNMENT, "alignment") or {}))
    rows = []
    deltas: dict[str, dict[str, float]] = {}
    for run in runs:
        summary = run.metric(ALIGNMENT, "alignment") or {}
        cells = []
        for variant in variants:
            entry = summary.get(variant)
            if entry is None:
                cells.append("-")
                continue
            delta = entry.get("delta_vs_baseline")
            cells.append(percent(entry["accuracy"]) + ("" if delta is None else f" ({100 * delta:+.1f})"))
            if delta is not None:
                deltas.setdefault(run.model, {})[variant] = 100 * delta
        rows.append([run.model, *cells])
    blocks: list[Any] = [
        Table("SciFIBench alignment experiment: accuracy % (change vs baseline, points)", ["model", *variants], rows)
    ]
    if deltas:
        path = figures.signed_bars(figdir / "scifibench_alignment.png", deltas, "change vs baseline (points)")
        blocks.append(Figure(path.name, "SciFIBench alignment: change in accuracy against the unmarked baseline."))
    return blocks
