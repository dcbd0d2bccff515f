"""MMSci captioning: the reference-based metrics of the paper's captioning table, from maintained libraries.

MMSci paper §4 (captioning): BLEU-2/-4 as the authors' n-gram precisions, ROUGE, METEOR, BERTScore, plus CIDEr; k
captions per figure averaged. Manual: tasks/README.md, 'Reference-based caption metrics'.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.mmsci import captioning_settings
from scifig_tasks.core import settings
from scifig_tasks.core.raw_outputs import output_status
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.settings import Settings

if TYPE_CHECKING:
    from scifig_tasks.core.judge.client import JudgeClient

logger = logging.getLogger("scifig.mmsci")

BERTSCORE_DEFAULT_MODEL = "roberta-large"
BERTSCORE_DEFAULT_LAYERS = 17
"""bert-score's layer for roberta-large (what ``evaluate.load("bertscore")`` with ``lang="en"`` uses)."""

BLEU_ORDERS = (2, 4)


@dataclass
class MetricResult:
    """A metric's value over the evaluated set (``None`` when unavailable, with ``reason``) and per-sample scores."""

    value: float | None
    per_sample: list[float] | None = None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def unavailable(cls, metric: str, reason: str) -> MetricResult:
        logger.error("MMSci %s is unavailable (reported as null, not 0): %s", metric, reason)
        return cls(value=None, reason=reason)


def usable(prediction: str | None) -> bool:
    """Whether an output is a caption to score (not empty, not lmms-eval's request-failure marker)."""
    return output_status(prediction) == "ok"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# --- BLEU, ROUGE -----------------------------------------------------------------------------------------------------


def tokens_13a(text: str) -> list[str]:
    """The ``13a`` tokens of a text (sacrebleu's tokenizer, which ``evaluate``'s BLEU copies), case kept."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text).split()


def ngram_precisions(prediction: str, reference: str, max_order: int = 4) -> list[float]:
    """The modified n-gram precisions p_1..p_max_order of one caption against one reference, as TensorFlow-NMT's
    ``compute_bleu`` (``evaluate``'s BLEU) counts them: n-gram counts of the caption clipped by the reference's,
    divided by ``len(caption) - n + 1``; 0 when that is not positive."""
    from collections import Counter

    hypothesis, target = tokens_13a(prediction), tokens_13a(reference)
    precisions = []
    for order in range(1, max_order + 1):
        possible = len(hypothesis) - order + 1
        if possible <= 0:
            precisions.append(0.0)
            continue
        counts = Counter(tuple(hypothesis[i : i + order]) for i in range(possible))
        reference_counts = Counter(tuple(target[i : i + order]) for i in range(len(target) - order + 1))
        precisions.append(sum((counts & reference_counts).values()) / possible)
    return precisions


def bleu_precision(predictions: Sequence[str | None], references: Sequence[str], order: int) -> MetricResult:
    """The paper's BLEU-``order``: the mean per-sample modified ``order``-gram precision (a fraction in [0, 1])."""
    scores = [
        ngram_precisions(prediction, reference, order)[order - 1] if usable(prediction) else 0.0
        for prediction, reference in zip(predictions, references, strict=True)
    ]
    return MetricResult(_mean(scores), scores)


def bleu(predictions: Sequence[str | None], references: Sequence[str], order: int) -> MetricResult:
    """Mean per-sample cumulative BLEU-``order`` (sacrebleu, 13a, no smoothing), as a fraction in [0, 1]."""
    from sacrebleu.metrics import BLEU

    scorer = BLEU(max_ngram_order=order, smooth_method="none", tokenize="13a", effective_order=False)
    sacrebleu_log = logging.getLogger("sacrebleu")
    level = sacrebleu_log.level
    sacrebleu_log.setLevel(logging.ERROR)  # its per-call advice to smooth sentence BLEU (we deliberately do not)
    try:
        scores = [
            scorer.sentence_score(prediction, [reference]).score / 100.0 if usable(prediction) else 0.0
            for prediction, reference in zip(predictions, references, strict=True)
        ]
    finally:
        sacrebleu_log.setLevel(level)
    return MetricResult(_mean(scores), scores)


def rouge(predictions: Sequence[str | None], references: Sequence[str]) -> dict[str, MetricResult]:
    """Mean per-sample ROUGE-1, ROUGE-2 and ROUGE-L F-measures (rouge-score, no stemming)."""
    from rouge_score import rouge_scorer

    kinds = ("rouge1", "rouge2", "rougeL")
    scorer = rouge_scorer.RougeScorer(list(kinds), use_stemmer=False)
    scores: dict[str, list[float]] = {kind: [] for kind in kinds}
    for prediction, reference in zip(predictions, references, strict=True):
        result = scorer.score(reference, prediction) if usable(prediction) else None
        for kind in kinds:
            scores[kind].append(result[kind].fmeasure if result is not None else 0.0)
    return {kind: MetricResult(_mean(values), values) for kind, values in scores.items()}


# --- METEOR and CIDEr (pycocoevalcap) --------------------------------------------------------------------------------


def ptb_tokenize(texts: Sequence[str]) -> list[str]:
    """pycocoevalcap's PTB tokenisation (Stanford tokenizer jar, lower-cased, punctuation removed)."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    if not texts:
        return []
    keyed = {str(index): [{"caption": text}] for index, text in enumerate(texts)}
    tokenized = PTBTokenizer().tokenize(keyed)
    return [tokenized[str(index)][0] for index in range(len(texts))]


def _java_problem() -> str | None:
    return None if shutil.which("java") else "no `java` on PATH (pycocoevalcap's METEOR and PTB tokenizer are jars)"


def meteor_and_cider(predictions: Sequence[str | None], references: Sequence[str]) -> dict[str, MetricResult]:
    """METEOR 1.5 (mean of per-caption scores) and corpus CIDEr, both on PTB-tokenised text."""
    problem = _java_problem()
    if problem is not None:
        return {name: MetricResult.unavailable(name, problem) for name in ("meteor", "cider")}
    try:
        hypotheses = ptb_tokenize([prediction if usable(prediction) else "" for prediction in predictions])
        tokenized_refs = ptb_tokenize(list(references))
    except Exception as exc:  # subprocess / file errors of the jar
        reason = f"PTB tokenizer failed ({type(exc).__name__}: {exc})"
        return {name: MetricResult.unavailable(name, reason) for name in ("meteor", "cider")}
    return {"meteor": _meteor(hypotheses, tokenized_refs), "cider": _cider(hypotheses, tokenized_refs)}


_meteor_scorers: list[Any] = []  # one METEOR java process per Python process (it loads its tables for ~10 s)


def _meteor(hypotheses: list[str], references: list[str]) -> MetricResult:
    from pycocoevalcap.meteor.meteor import Meteor

    scored = [index for index, hypothesis in enumerate(hypotheses) if hypothesis.strip()]
    scores = [0.0] * len(hypotheses)
    if scored:
        try:
            if not _meteor_scorers:
                _meteor_scorers.append(Meteor())  # its java process stops when the object is collected
            scorer = _meteor_scorers[0]
            try:
                _, values = scorer.compute_score(
                    {str(i): [references[i]] for i in scored}, {str(i): [hypotheses[i]] for i in scored}
                )
            except Exception:
                _meteor_scorers.clear()  # start a fresh process next time
                if scorer.lock.locked():  # compute_score does not release its lock when the jar's reply is bad
                    scorer.lock.release()
                raise
        except Exception as exc:
            return MetricResult.unavailable("meteor", f"METEOR 1.5 failed ({type(exc).__name__}: {exc})")
        for index, value in zip(scored, values, strict=True):
            scores[index] = float(value)
    return MetricResult(_mean(scores), scores)


def _cider(hypotheses: list[str], references: list[str]) -> MetricResult:
    from pycocoevalcap.cider.cider import Cider

    if not hypotheses:
        return MetricResult(None, [], reason="no samples")
    keys = [str(index) for index in range(len(hypotheses))]
    value, per_sample = Cider().compute_score(
        {key: [reference] for key, reference in zip(keys, references, strict=True)},
        {key: [hypothesis] for key, hypothesis in zip(keys, hypotheses, strict=True)},
    )
    return MetricResult(float(value), [float(score) for score in per_sample])


# --- BERTScore -------------------------------------------------------------------------------------------------------


def bertscore_settings(given: Settings | Mapping[str, str] | None = None) -> tuple[str, int | None]:
    """The BERTScore model (id or local path) and layer: the authors' default unless the settings
    ``SCIFIG_MMSCI_BERTSCORE_MODEL`` / ``..._LAYERS`` override it (of ``given`` settings, an environment mapping, or
    the process's settings)."""
    chosen = settings.chosen(given)
    model = chosen.get(captioning_settings.BERTSCORE_MODEL)
    layers = chosen.get(captioning_settings.BERTSCORE_LAYERS)
    if layers is not None:
        return model, layers
    return model, BERTSCORE_DEFAULT_LAYERS if model == BERTSCORE_DEFAULT_MODEL else None


def check_bertscore_model(given: Settings | Mapping[str, str] | None = None) -> str | None:
    """BERTScore's model checked before it is loaded, by the rule every model scifig fetches at run time follows
    (:func:`scifig_tasks.core.hub_cache.check_model`): a local folder, or a Hub id in the local Hugging Face cache,
    goes ahead; otherwise :class:`~scifig_tasks.core.hub_cache.Unavailable` at once, one line naming the model, the
    cache and the ways out, when offline or when the Hub cannot be reached (instead of about a minute of download
    retries per scoring). Returns the line saying the process went offline (the model cached, the Hub silent), else
    ``None``. The paper's captioning table reports BERTScore beside BLEU, ROUGE, METEOR and CIDEr, so a run that
    cannot compute it is said loudly, never a silent n/a."""
    from scifig_tasks.core.hub_cache import check_model

    model, _ = bertscore_settings(given)
    name = captioning_settings.BERTSCORE_MODEL.name
    return check_model(
        os.path.expanduser(model),
        f"BERTScore model {model} ({name})",
        f"set {name} to a local copy (a model folder)",
    )


def bertscore(
    predictions: Sequence[str | None], references: Sequence[str], environ: Settings | Mapping[str, str] | None = None
) -> MetricResult:
    """Mean per-sample BERTScore F1 (no IDF, no rescaling); unavailable when the model cannot be had now
    (:func:`check_bertscore_model`) or cannot be loaded."""
    from scifig_tasks.core.hub_cache import Unavailable

    model, layers = bertscore_settings(environ)
    details = {"model": model, "layers": layers}
    scored = [index for index, prediction in enumerate(predictions) if usable(prediction)]
    scores = [0.0] * len(predictions)
    if scored:
        try:
            went_offline = check_bertscore_model(environ)
        except Unavailable as exc:
            result = MetricResult.unavailable("bertscore_f1", f"{exc.what} — {exc.todo}")
            result.details = details
            return result
        if went_offline is not None:
            logger.warning("%s", went_offline)
        try:
            scorer = _bert_scorer(os.path.expanduser(model), layers)
        except Exception as exc:  # missing weights offline, bad path, incompatible model
            result = MetricResult.unavailable(
                "bertscore_f1",
                f"cannot load BERTScore model {model!r} ({type(exc).__name__}: {exc}); "
                "set SCIFIG_MMSCI_BERTSCORE_MODEL to a local model directory",
            )
            result.details = details
            return result
        _, _, f1 = scorer.score([predictions[i] for i in scored], [references[i] for i in scored])
        for index, value in zip(scored, f1.tolist(), strict=True):
            scores[index] = float(value)
    return MetricResult(_mean(scores), scores, details=details)


def _bert_scorer(model: str, layers: int | None) -> Any:
    from bert_score import BERTScorer

    if layers is None:
        from transformers import AutoConfig

        layers = int(AutoConfig.from_pretrained(model).num_hidden_layers)
    scorer = BERTScorer(model_type=model, num_layers=layers, idf=False, rescale_with_baseline=False, lang="en")
    # bert-score truncates to the tokenizer's model_max_length; a tokenizer saved without one reports a huge value
    limit = getattr(scorer._model.config, "max_position_embeddings", None)
    if limit and scorer._tokenizer.model_max_length > limit:
        scorer._tokenizer.model_max_length = int(limit) - 2
    return scorer


# --- all reference metrics -------------------------------------------------------------------------------------------

REFERENCE_METRICS = (
    "bleu2",
    "bleu4",
    "cumulative_bleu_2",
    "cumulative_bleu_4",
    "rouge1",
    "rouge2",
    "rougeL",
    "meteor",
    "bertscore_f1",
    "cider",
)
"""lmms-eval matches group metrics by substring, so no name contains another (``cumulative_bleu_2``, not
``cumulative_bleu2``)."""
JUDGED_METRICS = ("factscore", "geval_relevance")
CAPTION_METRICS = (*REFERENCE_METRICS, *JUDGED_METRICS)
"""Every captioning metric, in report order."""
FRACTION_METRICS = tuple(name for name in CAPTION_METRICS if name not in ("cider", "geval_relevance"))
"""The metrics on a 0-1 scale (CIDEr is on a x10 scale, G-Eval 1-5)."""


def reference_metrics(
    predictions: Sequence[str | None], references: Sequence[str], environ: Settings | Mapping[str, str] | None = None
) -> dict[str, MetricResult]:
    """Every reference-based metric of the captioning table, keyed as in :data:`REFERENCE_METRICS`."""
    results: dict[str, MetricResult] = {}
    for order in BLEU_ORDERS:
        results[f"bleu{order}"] = bleu_precision(predictions, references, order)
        results[f"cumulative_bleu_{order}"] = bleu(predictions, references, order)
    results |= rouge(predictions, references)
    results |= meteor_and_cider(predictions, references)
    results["bertscore_f1"] = bertscore(predictions, references, environ)
    return {name: results[name] for name in REFERENCE_METRICS}


# --- one evaluation of a captioning task (every metric, computed once) ------------------------------------------------

DEFINITIONS = {
    "bleu2": "the paper's BLEU-2: mean per-caption modified 2-gram precision p2 (evaluate/TensorFlow-NMT count over "
    "13a tokens, case-sensitive), fraction",
    "bleu4": "the paper's BLEU-4: mean per-caption modified 4-gram precision p4 (evaluate/TensorFlow-NMT count over "
    "13a tokens, case-sensitive), fraction",
    "cumulative_bleu_2": "mean per-caption cumulative BLEU-2 (uniform 1-2-gram weights, brevity penalty; sacrebleu "
    "13a, no smoothing), fraction",
    "cumulative_bleu_4": "mean per-caption cumulative BLEU-4 (uniform 1-4-gram weights, brevity penalty; sacrebleu "
    "13a, no smoothing), fraction",
    "rouge1": "mean per-caption ROUGE-1 F-measure (rouge-score, no stemming)",
    "rouge2": "mean per-caption ROUGE-2 F-measure (rouge-score, no stemming)",
    "rougeL": "mean per-caption ROUGE-L F-measure (rouge-score, no stemming)",
    "meteor": "mean per-caption METEOR 1.5 (pycocoevalcap jar, PTB-tokenised)",
    "bertscore_f1": "mean per-caption BERTScore F1 (bert-score, no IDF, no rescaling)",
    "cider": "corpus CIDEr-D (pycocoevalcap, PTB-tokenised, x10 scale)",
    "factscore": "mean modified FActScore (0-1, brevity penalty gamma=10) on the judged subset",
    "geval_relevance": "mean G-Eval relevance (1-5) on the judged subset",
}

_cache: dict[str, dict[str, Any]] = {}


def _records_digest(records: Sequence[Mapping[str, Any]], given: Settings, judge: JudgeClient | None) -> str:
    import hashlib
    import json

    chosen = {
        name: text
        for name, text in sorted(given.raw.items())
        if name.startswith(("SCIFIG_MMSCI_", "SCIFIG_JUDGE", "SCIFIG_PROTOCOL"))
    }
    config = getattr(judge, "config", None)  # the judge's endpoint and model, never its key
    chosen = {**chosen, "judge": None if judge is None else [config.base_url, config.model] if config else repr(judge)}
    payload = json.dumps([chosen, [dict(record) for record in records]], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def captions_of(record: Mapping[str, Any]) -> list[str | None]:
    """A record's captions: ``predictions`` (k sampled captions, the paper setting) or its one ``prediction``."""
    captions = record.get("predictions")
    return list(captions) if captions is not None else [record["prediction"]]


def records_protocol(records: Sequence[Mapping[str, Any]], environ: Mapping[str, str]) -> Protocol:
    """The scoring protocol: the records' own (the ``*_paper`` lmms-eval tasks write ``protocol: paper`` into them),
    else the deprecated variables (:func:`scifig_tasks.core.scoring_protocol.in_force`)."""
    named = {record["protocol"] for record in records if record.get("protocol")}
    if len(named) > 1:
        raise ValueError(f"MMSci captioning records mix scoring protocols {sorted(named)}")
    return named.pop() if named else in_force("mmsci", environ=environ)


def _average(per_index: list[MetricResult]) -> MetricResult:
    """One metric over k caption indices: the mean of the k values (``None`` when one is unavailable)."""
    if len(per_index) == 1:
        return per_index[0]
    missing = next((result for result in per_index if result.value is None), None)
    if missing is not None:
        return MetricResult(None, reason=missing.reason, details=per_index[0].details)
    values = [float(result.value) for result in per_index if result.value is not None]
    return MetricResult(sum(values) / len(values), details={**per_index[0].details, "per_caption_index": values})


def _average_judged(reports: list[dict[str, Any]]) -> dict[str, Any]:
    if len(reports) == 1:
        return reports[0]
    values = [report["value"] for report in reports]
    status: dict[str, int] = {}
    for report in reports:
        for name, count in report["status"].items():
            status[name] = status.get(name, 0) + count
    return {
        **reports[0],
        "value": None if any(value is None for value in values) else sum(values) / len(values),
        "n_scored": sum(report["n_scored"] for report in reports),
        "status": status,
        "per_caption_index": values,
    }


def evaluate(
    records: Sequence[Mapping[str, Any]],
    environ: Settings | Mapping[str, str] | None = None,
    *,
    judge: JudgeClient | None,
) -> dict[str, Any]:
    """Every captioning metric over per-sample records (``uid``, ``figure_index``, ``prediction`` or k
    ``predictions``, ``reference``, optionally ``protocol``). FActScore and G-Eval ask ``judge``, a value the caller
    built (``None``: no judge, the judged metrics are unavailable with that reason); ``environ`` gives the other
    settings (subset size and seed, BERTScore model; the process's settings when ``None``).

    Returns ``{"values": {metric: float | None}, "report": {...}}``; computed once per distinct set of records (each
    lmms-eval metric's aggregation asks for its own value). ``report.protocol`` records the setting that ran.
    """
    import random

    from scifig_tasks.benchmarks.mmsci import judged_metrics as mmsci_judged

    given = settings.chosen(environ)
    digest = _records_digest(records, given, judge)
    if digest in _cache:
        return _cache[digest]
    scoring = records_protocol(records, given.raw)
    captions = [captions_of(record) for record in records]
    k = len(captions[0]) if captions else 1
    if any(len(item) != k for item in captions):
        raise ValueError(
            f"MMSci captioning records hold different numbers of captions: {sorted({len(c) for c in captions})}"
        )
    references = [record["reference"] for record in records]
    per_index = []
    for index in range(k):
        predictions = [item[index] for item in captions]
        kept = range(len(records)) if scoring == "default" else [i for i, p in enumerate(predictions) if usable(p)]
        if kept:
            per_index.append(reference_metrics([predictions[i] for i in kept], [references[i] for i in kept], given))
        else:
            reason = "no usable caption (the paper setting leaves empty outputs out)"
            per_index.append({name: MetricResult.unavailable(name, reason) for name in REFERENCE_METRICS})
    results = {name: _average([metrics[name] for metrics in per_index]) for name in REFERENCE_METRICS}

    size, seed = mmsci_judged.subset_settings(given)
    keys = [f"{record['uid']}\0{int(record['figure_index']):06d}" for record in records]
    chosen = mmsci_judged.select_subset(keys, size, seed)

    def samples(pick: Any) -> list[mmsci_judged.Sample]:
        return [mmsci_judged.Sample(keys[i], pick(i), references[i]) for i in chosen]

    if scoring == "paper":  # one of the k captions, drawn at random (seeded per sample)
        drawn = samples(lambda i: random.Random(f"{seed}:{keys[i]}").choice(captions[i]))
        facts = [lambda: mmsci_judged.factscore(drawn, judge, "paper")]
    else:
        facts = [lambda n=n: mmsci_judged.factscore(samples(lambda i: captions[i][n]), judge) for n in range(k)]
    gevals = [
        lambda n=n: mmsci_judged.geval_relevance(samples(lambda i: captions[i][n]), judge, scoring) for n in range(k)
    ]
    # with a judge, every pass at once (each waits on the judge alone); without one, in order (nothing to wait for)
    passes = [*facts, *gevals]
    done = mmsci_judged.side_by_side(passes) if judge is not None else [run() for run in passes]
    fact = _average_judged(done[: len(facts)])
    geval = _average_judged(done[len(facts) :])
    judged = {"factscore": fact, "geval_relevance": geval}

    statuses = [output_status(prediction) for item in captions for prediction in item]
    values: dict[str, float | None] = {name: result.value for name, result in results.items()}
    values |= {name: report["value"] for name, report in judged.items()}
    report = {
        "n": len(records),
        "protocol": {
            "name": scoring,
            "captions_per_figure": k,
            "empty_outputs": "left out of every mean" if scoring == "paper" else "scored 0 (G-Eval 1)",
        },
        "outputs": {status: statuses.count(status) for status in ("ok", "empty", "request_failed")},
        "metrics": {
            name: {"value": result.value, "available": result.value is not None, "reason": result.reason}
            | result.details
            for name, result in results.items()
        },
        "judged": {"subset": "all" if size is None else size, "seed": seed, **judged},
        "definitions": DEFINITIONS,
    }
    _cache.clear()  # keep only the latest evaluation
    _cache[digest] = {"values": values, "report": report}
    return _cache[digest]
