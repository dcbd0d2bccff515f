"""Build the Plot Twist synthetic set: charts, their questions and the robustness variants, one parquet file
(Razeghi et al. 2024, appendix A: the kept 336 scatter, 250 bar and 141 pie questions by default).
Manual: curation/plot_twist/README.md, "What is generated", "Robustness variants" and "Output file".
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from tqdm.auto import tqdm

from curation.parquet import ParquetRows
from curation.plot_twist.charts import Chart, generate
from curation.plot_twist.questions import BASE_TITLES, Axes, Question, misleading_value, questions_for, title_for
from curation.plot_twist.render import Job, Renderer, default_workers
from curation.plot_twist.render_mpl import Style
from scifig_tasks.benchmarks.plot_twist.rules import (
    BASE,
    CHART_TYPES,
    QUESTION_TYPES,
    ROBUSTNESS_VARIANTS,
    VARIANT_CHART_TYPES,
)
from scifig_tasks.benchmarks.plot_twist.source import plot_twist_features

PAPER_PLOTS: dict[str, int] = {"scatter": 42, "bar": 50, "pie": 47}
"""Plots per chart type behind the paper's 336 / 250 / 141 questions."""
FEATURES = datasets.Features({**plot_twist_features(), "metadata": datasets.Value("string")})
SPLIT = "test"
MARKERS = {"marker_x": "x", "marker_diamond": "D", "marker_circle": "o", "marker_plus": "+"}


@dataclass(frozen=True)
class Entry:
    """One planned image and the question types asked about it (a title variant asks one question per image)."""

    job: Job
    variant: str
    question_types: tuple[str, ...]


@dataclass(frozen=True)
class BuildResult:
    out: Path
    rows: int
    counts: dict[str, int]  # rows per variant


def _misleading(chart: Chart, question: Question, seed: int) -> float:
    rng = random.Random(f"plot_twist:{seed}:misleading:{chart.figure_id}:{question.question_type}")
    return misleading_value(question, rng)


def compose(plots: dict[str, int], seed: int) -> dict[str, list[Chart]]:
    """The charts of every type (in :data:`CHART_TYPES` order)."""
    return {
        chart_type: generate(chart_type, seed, plots[chart_type]) for chart_type in CHART_TYPES if plots[chart_type]
    }


def plan(
    charts: dict[str, list[Chart]],
    base_axes: dict[str, Axes],
    variants: Sequence[str],
    variant_plots: int | None,
    seed: int,
) -> list[Entry]:
    """The variant renderings of the first ``variant_plots`` charts of each type (title variants need the base
    questions, hence ``base_axes``: figure id -> base rendering limits)."""
    entries: list[Entry] = []
    for variant in variants:
        for chart_type, group in charts.items():
            if chart_type not in VARIANT_CHART_TYPES[variant]:
                continue
            for chart in group[:variant_plots]:
                title = BASE_TITLES[chart_type]
                kinds = QUESTION_TYPES[chart_type]
                if variant == "title_none":
                    entries.append(Entry(Job(chart, "matplotlib", Style(None)), variant, kinds))
                elif variant in ("title_correct", "title_misleading"):
                    for question in questions_for(chart, base_axes[chart.figure_id]):
                        value = question.value if variant == "title_correct" else _misleading(chart, question, seed)
                        job = Job(chart, "matplotlib", Style(title_for(question, value)))
                        entries.append(Entry(job, variant, (question.question_type,)))
                elif variant in MARKERS:
                    entries.append(
                        Entry(Job(chart, "matplotlib", Style(title, marker=MARKERS[variant])), variant, kinds)
                    )
                elif variant == "grid":
                    entries.append(Entry(Job(chart, "matplotlib", Style(title, grid=True)), variant, kinds))
                elif variant == "vegalite":
                    entries.append(Entry(Job(chart, "vegalite", Style(title)), variant, kinds))
                else:
                    raise ValueError(f"unknown variant {variant!r}")
    return entries


def _row(chart: Chart, question: Question, variant: str, job: Job, png: bytes) -> dict[str, Any]:
    suffix = "" if variant == BASE else f"_{variant}"
    metadata = {
        **chart.to_json(),
        "library": job.library,
        "title": job.style.title,
        "marker": job.style.marker,
        "grid": job.style.grid,
    }
    return {
        "q_id": f"{chart.figure_id}_{question.question_type}{suffix}",
        "figure_id": chart.figure_id,
        "chart_type": chart.chart_type,
        "question_type": question.question_type,
        "question": question.question,
        "answer": question.answer,
        "x_range": question.x_range,
        "y_range": question.y_range,
        "image": {"bytes": png, "path": None},
        "variant": variant,
        "metadata": json.dumps(metadata, sort_keys=True),
    }


def _require(module: str, package: str, purpose: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        raise ValueError(f"{purpose} needs {package}: pip install 'scifig[curation]'") from None


def resolve_variants(names: Sequence[str] | None) -> list[str]:
    """``None`` or ``["all"]``: every variant; ``["none"]``: none; else the named ones (validated, in order)."""
    if names is None or list(names) == ["all"]:
        return list(ROBUSTNESS_VARIANTS)
    if list(names) == ["none"]:
        return []
    unknown = [name for name in names if name not in ROBUSTNESS_VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)} (choose from {', '.join(ROBUSTNESS_VARIANTS)})")
    return list(dict.fromkeys(names))


def build_plot_twist(
    out: Path,
    *,
    seed: int = 0,
    plots_per_type: int | None = None,
    variants: Sequence[str] | None = None,
    variant_plots: int | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> BuildResult:
    """Generate the set into ``out`` (usable as ``SCIFIG_PLOT_TWIST_DATA``); see curation/plot_twist/README.md."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    strangers = sorted(p.name for p in out.glob("*.parquet") if p.name != f"{SPLIT}.parquet") if out.exists() else []
    if strangers:
        raise ValueError(f"{out} already holds {', '.join(strangers)}; choose an empty or new directory")
    if plots_per_type is not None and plots_per_type < 1:
        raise ValueError(f"plots_per_type must be >= 1, got {plots_per_type}")
    if variant_plots is not None and variant_plots < 0:
        raise ValueError(f"variant_plots must be >= 0, got {variant_plots}")
    workers = default_workers() if workers is None else workers
    chosen = resolve_variants(variants)
    _require("matplotlib", "matplotlib", "drawing the charts")
    if "vegalite" in chosen:
        _require("vl_convert", "vl-convert-python", "the vegalite variant (leave it out with --variants)")
    plots = dict(PAPER_PLOTS) if plots_per_type is None else dict.fromkeys(CHART_TYPES, plots_per_type)
    charts = compose(plots, seed)
    ordered = [chart for group in charts.values() for chart in group]
    base_entries = [
        Entry(Job(chart, "matplotlib", Style(BASE_TITLES[chart.chart_type])), BASE, QUESTION_TYPES[chart.chart_type])
        for chart in ordered
    ]
    writer = ParquetRows(out / f"{SPLIT}.parquet", FEATURES)
    counts: dict[str, int] = {}
    try:
        with Renderer(workers) as renderer:
            base_axes: dict[str, Axes] = {}
            renders = renderer.render([entry.job for entry in base_entries])
            bar = tqdm(total=len(base_entries), desc="Plot Twist charts", unit="img", disable=not progress)
            for entry, (png, axes) in zip(base_entries, renders, strict=True):
                base_axes[entry.job.chart.figure_id] = axes
                _add(writer, entry, png, axes, counts)
                bar.update()
            bar.close()
            entries = plan(charts, base_axes, chosen, variant_plots, seed)
            renders = renderer.render([entry.job for entry in entries])
            bar = tqdm(total=len(entries), desc="Plot Twist variants", unit="img", disable=not progress or not entries)
            for entry, (png, axes) in zip(entries, renders, strict=True):
                _add(writer, entry, png, axes, counts)
                bar.update()
            bar.close()
    except BaseException:
        writer.abort()
        raise
    writer.close()
    settings = {
        "seed": seed,
        "plots": plots,
        "variants": chosen,
        "variant_plots": variant_plots,
    }
    write_card(out, writer.rows, counts, settings)
    return BuildResult(out, writer.rows, counts)


def _add(writer: ParquetRows, entry: Entry, png: bytes, axes: Axes, counts: dict[str, int]) -> None:
    chart = entry.job.chart
    for question in questions_for(chart, axes):
        if question.question_type in entry.question_types:
            writer.add(_row(chart, question, entry.variant, entry.job, png))
            counts[entry.variant] = counts.get(entry.variant, 0) + 1


def write_card(out: Path, rows: int, counts: dict[str, int], settings: dict[str, Any]) -> None:
    """A short dataset card: what was generated, with which settings, and how to use it."""
    lines = [
        "# Plot Twist (Chart101) synthetic set",
        "",
        "Generated by `scifig curate plot-twist` (scifig). Synthetic scatter / bar / pie charts with elementary",
        "questions; ground truth computed from the drawn data and the rendered axes. See",
        "`curation/plot_twist/README.md` in scifig for the generation rules.",
        "",
        f"Rows: {rows} (split `{SPLIT}`, file `{SPLIT}.parquet`).",
        "",
        "| variant | questions |",
        "|---|---:|",
        *(f"| {variant} | {count} |" for variant, count in counts.items()),
        "",
        "Settings: `" + json.dumps(settings, sort_keys=True) + "`",
        "",
        f"Use: `SCIFIG_PLOT_TWIST_DATA={out}` for the lmms-eval tasks `plot_twist` and `plot_twist_robustness`.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")
