"""MMSci section (Li et al. 2025): multiple-choice accuracy per setting (I Fig2Cap, II SubFig2Cap, III SubCap2Fig)
and the paper's "Avg." (Table 4: accuracy pooled over all questions of the three settings; the unweighted mean of the
settings is shown beside it), under both denominators (strict: unparseable answers are wrong; the authors': they are
dropped), per category and per subject with 95% Wilson intervals, answer resolution, and the captioning metrics
(BLEU-2/4 as the paper's n-gram precisions, cumulative BLEU-2/4, ROUGE-1/2/L, METEOR, BERTScore F1, CIDEr, FActScore,
G-Eval relevance) of ``mmsci_caption_image_only`` / ``mmsci_caption_with_abstract`` and their ``*_paper`` variants,
with the scoring protocol that ran. Published rows: ``references.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.mmsci import captioning_metrics as mmsci_captioning
from scifig_tasks.benchmarks.mmsci.rules import PAPER_DENOMINATOR
from scifig_tasks.report import figures
from scifig_tasks.report.audit import audit_table
from scifig_tasks.report.coverage import coverage, coverage_note
from scifig_tasks.report.document import Figure, Note, Section, Table, percent, percent_ci
from scifig_tasks.report.judge_status import judge_use, judge_words
from scifig_tasks.report.references import citations_note, ref_cell, references
from scifig_tasks.report.runs import Run
from scifig_tasks.report.summary import judge_model

SETTINGS = {"fig2cap": "I Fig2Cap", "subfig2cap": "II SubFig2Cap", "subcap2fig": "III SubCap2Fig"}
GROUP = "mmsci"
CAPTION_TASKS = {
    "mmsci_caption_image_only": "image only",
    "mmsci_caption_with_abstract": "with abstract",
    "mmsci_caption_image_only_paper": "image only (paper setting)",
    "mmsci_caption_with_abstract_paper": "with abstract (paper setting)",
}
CAPTION_METRICS = mmsci_captioning.CAPTION_METRICS
REFERENCE_METRICS = mmsci_captioning.REFERENCE_METRICS
JUDGED_METRICS = mmsci_captioning.JUDGED_METRICS
UNIT_METRICS = mmsci_captioning.FRACTION_METRICS
"""Metrics on a 0-1 scale (drawn together); CIDEr (x10 scale) and G-Eval (1-5) are in the table only."""
METRIC_LABELS = {
    "bleu2": "BLEU-2",
    "bleu4": "BLEU-4",
    "cumulative_bleu_2": "cum. BLEU-2",
    "cumulative_bleu_4": "cum. BLEU-4",
    "rouge1": "ROUGE-1",
    "rouge2": "ROUGE-2",
    "rougeL": "ROUGE-L",
    "meteor": "METEOR",
    "bertscore_f1": "BERTScore F1",
    "cider": "CIDEr",
    "factscore": "FActScore",
    "geval_relevance": "G-Eval relevance",
}
"""Each captioning metric's column, as the paper names it (the results files' metric names are in the note)."""


def _cell(cell: dict[str, Any] | None) -> str:
    return "-" if cell is None else percent_ci(cell["accuracy"], cell["ci95"])


def _table(breakdown: Any, answered: bool) -> dict[str, Any]:
    """The strict table of a breakdown, or its ``paper_denominator`` one (resolved answers only)."""
    if not isinstance(breakdown, dict):
        return {}
    return (breakdown.get(PAPER_DENOMINATOR) or {}) if answered else breakdown


def _setting_cell(run: Run, setting: str, answered: bool = False) -> dict[str, Any] | None:
    own = run.metric(f"mmsci_{setting}", "breakdown")
    if isinstance(own, dict):
        return _table(own, answered).get("overall", {}).get("all")
    return _table(run.metric(GROUP, "breakdown"), answered).get("setting", {}).get(setting)


def _pooled(run: Run, answered: bool = False) -> dict[str, Any] | None:
    """The paper's "Avg.": accuracy pooled over all questions of the group."""
    return _table(run.metric(GROUP, "breakdown"), answered).get("overall", {}).get("all")


def _setting_mean(run: Run) -> float | None:
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
            cells = [_cell(_setting_cell(run, s)) for s in SETTINGS]
            rows.append([run.model, *cells, _cell(_pooled(run)), percent(_setting_mean(run))])
        rows += [[ref.label(), *(ref_cell(ref, k) for k in (*SETTINGS, "average")), "-"] for ref in refs]
        header = ["model", *SETTINGS.values(), "Avg. (pooled)", "mean of settings"]
        covered = [(run.model, coverage(run, "mmsci", GROUP, (_pooled(run) or {}).get("n"))) for run in mcq]
        if refs and (note := coverage_note("mmsci", covered)) is not None:
            out.blocks.append(note)
        out.blocks.append(Table("MMSci multiple-choice accuracy (%, 95% Wilson interval)", header, rows))
        rows = []
        for run in mcq:
            cells = [_cell(_setting_cell(run, s, answered=True)) for s in SETTINGS]
            strict, answered = _pooled(run), _pooled(run, answered=True)
            counted = "-" if strict is None else f"{answered['n'] if answered else 0} / {strict['n']}"
            rows.append([run.model, *cells, _cell(answered), counted])
        header = ["model", *SETTINGS.values(), "Avg. (pooled)", "resolved / all"]
        out.blocks.append(Table("MMSci accuracy over resolved answers (%, the authors' denominator)", header, rows))
        out.blocks.append(
            Note(
                'The paper\'s "Avg." is the accuracy pooled over all questions of the three settings, not the mean of '
                "the settings' accuracies (shown beside it). First table: unparseable answers count as wrong. Second "
                "table: they are left out of the denominator, as the authors' print_result.py does; the published rows "
                "were computed that way. " + citations_note(refs)
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
        audited = audit_table("MMSci", [(run.model, run.metric(GROUP, "breakdown")) for run in grouped])
        if audited:
            out.blocks.append(audited)
    if captioning:
        out.blocks += _captioning(captioning, figdir)
    return out


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _captioning(runs: list[Run], figdir: Path) -> list[Any]:
    """Two tables, each fitting the page: the reference-based metrics, and the judged ones beside what the judge did
    for them (:mod:`scifig_tasks.report.judge_status`, the statuses the results file records)."""
    rows, judged_rows, reasons = [], [], []
    drawn: dict[str, dict[str, float]] = {}
    for run in runs:
        for task, label in CAPTION_TASKS.items():
            if not run.has(task):
                continue
            values = {name: run.metric(task, name) for name in CAPTION_METRICS}
            report = run.metric(task, "caption_report") or {}
            n = report.get("n", "-")
            outputs = report.get("outputs") or {}
            captions = f"{n} ({outputs.get('empty', 0)} / {outputs.get('request_failed', 0)})"
            setting = report.get("protocol") or {}
            protocol = f"{setting.get('name', 'default')} x{setting.get('captions_per_figure', 1)}"
            prompt = f"{label}, {protocol}"
            rows.append([run.model, prompt, captions, *(_value(values[name]) for name in REFERENCE_METRICS)])
            use = judge_use(report)
            judge = judge_words(use, judge_model(run, task)) if use is not None else "not recorded"
            judged_rows.append([run.model, prompt, *(_value(values[name]) for name in JUDGED_METRICS), judge])
            for name, detail in (report.get("metrics") or {}).items():
                if values.get(name) is None and detail.get("reason"):
                    metric = METRIC_LABELS.get(name, name)
                    reasons.append(f"{run.model} / {label} / {metric}: {_short(detail['reason'])}")
            drawn[f"{run.model} ({label})"] = {
                name: values[name] for name in UNIT_METRICS if isinstance(values.get(name), int | float)
            }
    keys = ["model", "prompt, protocol"]
    named = ", ".join(f"{METRIC_LABELS[name]} {name}" for name in CAPTION_METRICS)
    blocks: list[Any] = [
        Table(
            "MMSci captioning: reference-based metrics",
            [*keys, "captions (empty / failed)", *(METRIC_LABELS[m] for m in REFERENCE_METRICS)],
            rows,
            keys=2,
        ),
        Table(
            "MMSci captioning: judged metrics",
            [*keys, *(METRIC_LABELS[m] for m in JUDGED_METRICS), "judge"],
            judged_rows,
            keys=2,
        ),
        Note(
            "BLEU-2 / BLEU-4 are the paper's: mean per-caption modified 2- and 4-gram precisions (the authors' "
            "evaluate precisions); cumulative BLEU is reported separately (cum.). BLEU, ROUGE, METEOR, BERTScore "
            "and FActScore are fractions (0-1); CIDEr is on the x10 scale; G-Eval relevance is 1-5. protocol: "
            "'default' or 'paper' scoring, with the number of captions per figure (the paper setting samples 3 and "
            "averages). captions: the figures captioned, with the empty outputs and failed requests among them. "
            "judge: the captions each judged metric asked the judge about and how many it scored (a caption without "
            "a score is left out of the mean). n/a: the metric could not be computed in that run. The results "
            f"files' metric names: {named}."
        ),
    ]
    if reasons:
        blocks.append(Note("Not computed: " + "; ".join(reasons) + "."))
    if any(drawn.values()):
        path = figures.simple_bars(figdir / "mmsci_captioning.png", drawn, "score (0-1)", (0, 1))
        blocks.append(Figure(path.name, "MMSci captioning: reference-based metrics on the 0-1 scale."))
    return blocks
