"""MMSci section (Li et al. 2025): multiple-choice accuracy per setting (I Fig2Cap, II SubFig2Cap, III SubCap2Fig)
and their unweighted average (the paper's "avg"), per category and per subject with 95% Wilson intervals, answer
resolution, and the captioning metrics (BLEU-2/4, ROUGE-1/2/L, METEOR, BERTScore F1, CIDEr, FActScore, G-Eval
relevance) of ``mmsci_caption_image_only`` / ``mmsci_caption_with_abstract``. Published rows: ``references.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scifig_tasks.report import figures
from scifig_tasks.report.document import Figure, Note, Section, Table, percent, percent_ci
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run

SETTINGS = {"fig2cap": "I Fig2Cap", "subfig2cap": "II SubFig2Cap", "subcap2fig": "III SubCap2Fig"}
GROUP = "mmsci"
CAPTION_TASKS = {"mmsci_caption_image_only": "image only", "mmsci_caption_with_abstract": "with abstract"}
CAPTION_METRICS = (
    "bleu2",
    "bleu4",
    "rouge1",
    "rouge2",
    "rougeL",
    "meteor",
    "bertscore_f1",
    "cider",
    "factscore",
    "geval_relevance",
)
UNIT_METRICS = ("bleu2", "bleu4", "rouge1", "rouge2", "rougeL", "meteor", "bertscore_f1", "factscore")
"""Metrics on a 0-1 scale (drawn together); CIDEr (x10 scale) and G-Eval (1-5) are in the table only."""


def _cell(cell: dict[str, Any] | None) -> str:
    return "-" if cell is None else percent_ci(cell["accuracy"], cell["ci95"])


def _setting_cell(run: Run, setting: str) -> dict[str, Any] | None:
    own = run.metric(f"mmsci_{setting}", "breakdown")
    if isinstance(own, dict):
        return own.get("overall", {}).get("all")
    group = run.metric(GROUP, "breakdown")
    return group.get("setting", {}).get(setting) if isinstance(group, dict) else None


def _average(run: Run) -> float | None:
    group = run.metric(GROUP, "breakdown")
    if isinstance(group, dict) and isinstance(group.get("setting_mean"), dict):
        return group["setting_mean"].get("accuracy")
    return None


def section(runs: list[Run], figdir: Path) -> Section | None:
    mcq = [run for run in runs if run.has(GROUP) or any(run.has(f"mmsci_{s}") for s in SETTINGS)]
    captioning = [run for run in runs if any(run.has(task) for task in CAPTION_TASKS)]
    if not mcq and not captioning:
        return None
    out = Section("MMSci")
    if mcq:
        refs = references("mmsci")
        rows = []
        for run in mcq:
            pooled = (run.metric(GROUP, "breakdown") or {}).get("overall", {}).get("all")
            cells = [_cell(_setting_cell(run, s)) for s in SETTINGS]
            rows.append([run.model, *cells, percent(_average(run)), _cell(pooled)])
        rows += [[ref.label(), *(ref_cell(ref, k) for k in (*SETTINGS, "average")), "-"] for ref in refs]
        header = ["model", *SETTINGS.values(), "average of settings", "pooled"]
        out.blocks.append(Table("MMSci multiple-choice accuracy (%, 95% Wilson interval)", header, rows))
        out.blocks.append(
            Note(
                "Unparseable answers count as wrong here (the authors drop them from the denominator). "
                + citations_note(refs)
            )
        )
        grouped = [run for run in mcq if isinstance(run.metric(GROUP, "breakdown"), dict)]
        panels: dict[str, dict[str, dict[str, Any]]] = {"per setting": {}}
        for run in mcq:
            cells = {SETTINGS[s]: _setting_cell(run, s) for s in SETTINGS}
            panels["per setting"][run.model] = {
                k: (c["accuracy"], tuple(c["ci95"])) for k, c in cells.items() if c is not None
            }
        for dimension in ("category", "subject"):
            if not grouped:
                break
            keys = list(dict.fromkeys(k for r in grouped for k in r.metric(GROUP, "breakdown").get(dimension, {})))
            rows = [
                [k, *(_cell(r.metric(GROUP, "breakdown").get(dimension, {}).get(k)) for r in grouped)] for k in keys
            ]
            out.blocks.append(Table(f"MMSci per {dimension} (%)", [dimension, *(r.model for r in grouped)], rows))
            panels[f"per {dimension}"] = {
                r.model: {
                    k: (c["accuracy"], tuple(c["ci95"]))
                    for k, c in r.metric(GROUP, "breakdown").get(dimension, {}).items()
                }
                for r in grouped
            }
        path = figures.grouped_bars(figdir / "mmsci_accuracy.png", panels)
        out.blocks.append(Figure(path.name, "MMSci accuracy per setting, category and subject (95% Wilson intervals)."))
        rows = []
        for run in grouped:
            resolution = run.metric(GROUP, "breakdown").get("flags", {}).get("resolution", {})
            rows.append([run.model, *(str(resolution.get(k, 0)) for k in ("rule", "judge", "unresolved"))])
        if rows:
            out.blocks.append(Table("MMSci answer resolution", ["model", "rule", "judge", "unresolved"], rows))
    if captioning:
        out.blocks += _captioning(captioning, figdir)
    return out


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _captioning(runs: list[Run], figdir: Path) -> list[Any]:
    rows, reasons = [], []
    drawn: dict[str, dict[str, float]] = {}
    for run in runs:
        for task, label in CAPTION_TASKS.items():
            if not run.has(task):
                continue
            values = {name: run.metric(task, name) for name in CAPTION_METRICS}
            report = run.metric(task, "caption_report") or {}
            n = report.get("n", "-")
            outputs = report.get("outputs") or {}
            unusable = f"{outputs.get('empty', 0)} / {outputs.get('request_failed', 0)}"
            rows.append([run.model, label, str(n), unusable, *(_value(values[name]) for name in CAPTION_METRICS)])
            for name, detail in (report.get("metrics") or {}).items():
                if values.get(name) is None and detail.get("reason"):
                    reasons.append(f"{run.model} / {label} / {name}: {_short(detail['reason'])}")
            for name, detail in (report.get("judged") or {}).items():
                if isinstance(detail, dict) and values.get(name) is None:
                    status = ", ".join(f"{k} {v}" for k, v in sorted((detail.get("status") or {}).items()))
                    reasons.append(f"{run.model} / {label} / {name}: judge {status or 'not run'}")
            drawn[f"{run.model} ({label})"] = {
                name: values[name] for name in UNIT_METRICS if isinstance(values.get(name), int | float)
            }
    blocks: list[Any] = [
        Table("MMSci captioning metrics", ["model", "prompt", "captions", "empty / failed", *CAPTION_METRICS], rows),
        Note(
            "BLEU, ROUGE, METEOR, BERTScore and FActScore are fractions (0-1); CIDEr is on the x10 scale; G-Eval "
            "relevance is 1-5. n/a: the metric could not be computed in that run."
        ),
    ]
    if reasons:
        blocks.append(Note("Not computed: " + "; ".join(reasons) + "."))
    if any(drawn.values()):
        path = figures.simple_bars(figdir / "mmsci_captioning.png", drawn, "score (0-1)", (0, 1))
        blocks.append(Figure(path.name, "MMSci captioning: reference-based metrics on the 0-1 scale."))
    return blocks
