"""``scifig rescore`` of VLMEvalKit runs: find the prediction files of this package's datasets in a work dir and
score each again with its dataset class (the diff, the table and the rule for damaged logs:
:mod:`scifig_tasks.rescore_report`).

Manual: docs/reports.md, "Re-scoring a VLMEvalKit run".
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scifig_tasks import rescore_report as rescoring
from scifig_tasks.core import judge, provenance
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.run_files import RECORDS_SUFFIX, SCORES_SUFFIX, read_jsonl
from scifig_tasks.core.sample_logs import check_ids
from scifig_tasks.vlmeval import prediction_tables

PREDICTION_SUFFIXES = ("tsv", "xlsx", "json")
"""The file types of VLMEvalKit prediction files that are read."""
PICKLE_SUFFIX = "pkl"
"""VLMEvalKit's fallback prediction file type, never loaded (:mod:`scifig_tasks.core.pickle_files`)."""


def _vlmeval_names() -> list[str]:
    """Today's dataset names and the deprecated ``SciFig_*`` ones (files written by earlier releases), of every
    registered benchmark (:mod:`scifig_tasks.vlmeval.names`)."""
    from scifig_tasks.vlmeval.names import DATASETS, DEPRECATED

    return sorted({*DATASETS, *DEPRECATED}, key=len, reverse=True)  # longest first: grab_llm_extract before grab


def prediction_files(work_dir: Path) -> list[tuple[Path, str, str]]:
    """``(file, model, dataset)`` for every VLMEvalKit prediction file of a scifig dataset under ``work_dir``. A
    pickle is never loaded: one beside a TSV, xlsx or JSON file of the same name is left for it, and one that is the
    only copy of its predictions is refused (:func:`_only_pickles`)."""
    names = _vlmeval_names()
    found, pickles = [], []
    for path in sorted(work_dir.rglob("*")):
        suffix = path.suffix.lstrip(".")
        if not path.is_file() or suffix not in (*PREDICTION_SUFFIXES, PICKLE_SUFFIX):
            continue
        stem = path.name[: -len(path.suffix)]
        for name in names:
            if stem.endswith(f"_{name}") and len(stem) > len(name) + 1:
                (pickles if suffix == PICKLE_SUFFIX else found).append((path, stem[: -len(name) - 1], name))
                break
    refused = _only_pickles(pickles)
    if refused:
        raise rescoring.RescoreRefused("\n".join(prediction_tables.only_pickle(path) for path in refused))
    return found


def _only_pickles(pickles: list[tuple[Path, str, str]]) -> list[Path]:
    """The prediction pickles with no TSV, xlsx or JSON file of the same name; VLMEvalKit's per-rank inference
    checkpoints (``<rank><world size>_<dataset>.pkl``: a number where the model's name would be) are not predictions."""
    return [
        path
        for path, model, _ in pickles
        if not model.isdigit() and not any(path.with_suffix(f".{kind}").is_file() for kind in PREDICTION_SUFFIXES)
    ]


def _dataset_class(name: str) -> type:
    """The registered dataset class serving ``name`` (today's or a deprecated name)."""
    from scifig_tasks.vlmeval import dataset_classes, register

    register()
    for cls in dataset_classes():
        if name in cls.supported_datasets():
            return cls
    raise rescoring.RescoreRefused(f"{name}: not a scifig VLMEvalKit dataset")


def rescore_vlmeval(
    path: Path, model: str, dataset: str, out: Path, allow_partial: bool = False, dry: bool = False
) -> rescoring.RescoredRun:
    """Score a VLMEvalKit prediction file again with its dataset class's ``evaluate``, into ``out/<model>/``. A file
    that lacks or repeats questions of the dataset is refused unless ``allow_partial``
    (:func:`scifig_tasks.rescore_report.accept`): then the questions predicted are scored and the scores file records
    ``partial``. ``dry``: score in a temporary folder that is removed, within :func:`scifig_tasks.core.judge.dry_run`
    (no judge request sent): the run's ``judge_usage`` counts the requests re-scoring would send (``would_send``)
    and the cache hits."""
    if dry:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="scifig-rescore-dry-") as scratch:
            run = rescore_vlmeval(path, model, dataset, Path(scratch), allow_partial)
        return rescoring.RescoredRun(path, [], out / model, [], partial=run.partial, judge_usage=run.judge_usage)
    from scifig_tasks.vlmeval.datasets import read_predictions
    from scifig_tasks.vlmeval.names import DEPRECATED

    model_dir = out / model
    model_dir.mkdir(parents=True, exist_ok=True)
    copied = model_dir / path.name
    if copied.resolve() == path.resolve():
        raise rescoring.RescoreRefused(f"{path}: --out would overwrite the run itself; choose another folder")
    data = _dataset_class(dataset)(dataset=DEPRECATED.get(dataset, dataset))  # an old file: no deprecation line
    replies = read_predictions(str(path))
    _check_vlmeval_rows(path, dataset, data.data)
    all_indices = [str(index) for index in data.data["index"]]
    check = check_ids(dataset, str(path), all_indices, _prediction_rows(path), key="index")
    partial = rescoring.accept([check], f"of {dataset}", allow_partial)
    if partial:  # score the questions predicted
        data.data = data.data[data.data["index"].astype(str).isin(replies)].reset_index(drop=True)
    shutil.copyfile(path, copied)
    with judge.task_scope(dataset):
        data.evaluate(str(copied))
    usage = judge.usage_report(drain=True)
    stem = str(path).rsplit(".", 1)[0]
    new_stem = str(copied).rsplit(".", 1)[0]
    old_scores = _json_or_none(Path(f"{stem}{SCORES_SUFFIX}"))
    new_scores = _json_or_none(Path(f"{new_stem}{SCORES_SUFFIX}")) or {}
    if partial:
        new_scores["partial"] = check.as_json()
    if usage is not None and isinstance(new_scores.get(provenance.KEY), dict):
        new_scores[provenance.KEY].setdefault("judge_usage", usage)
    if partial or usage is not None:
        Path(f"{new_stem}{SCORES_SUFFIX}").write_text(json.dumps(new_scores, indent=1), encoding="utf-8")
    old_records = read_jsonl(Path(f"{stem}{RECORDS_SUFFIX}")) if Path(f"{stem}{RECORDS_SUFFIX}").is_file() else []
    new_records = read_jsonl(Path(f"{new_stem}{RECORDS_SUFFIX}"))
    diff = rescoring.TaskDiff(dataset, len(new_records), expected=check.expected, partial=rescoring.partial_ids(check))
    diff.metrics = rescoring.metric_pairs((old_scores or {}).get("metrics", {}), new_scores.get("metrics", {}))
    old_by_index = dict(zip(all_indices, old_records, strict=False))  # the run's records follow the whole dataset
    indices = [str(index) for index in data.data["index"]]
    for index, new in zip(indices, new_records, strict=False):
        if index not in old_by_index:
            continue
        entry = rescoring.changed_sample(
            index, {"breakdown": old_by_index[index]}, {"breakdown": new}, new.get("prediction")
        )
        if entry is not None:
            entry["index"] = entry.pop("doc_id")
            if entry["output"] is None:
                entry["output"] = replies.get(index)
            diff.changed.append(entry)
    written = [copied, Path(f"{new_stem}{SCORES_SUFFIX}"), Path(f"{new_stem}{RECORDS_SUFFIX}")]
    failed = _count_judge_failed(new_scores.get("breakdown"))
    changes = rescoring.environment_changes(
        (old_scores or {}).get(provenance.KEY), new_scores.get(provenance.KEY) or {}
    )
    failures = {dataset: failed} if failed else {}
    data = rescoring.data_changes((old_scores or {}).get(provenance.KEY), new_scores.get(provenance.KEY) or {})
    return rescoring.RescoredRun(
        path, written, model_dir, [diff], failures, changes, partial, judge_usage=usage, data_changes=data
    )


def _prediction_rows(path: Path) -> list[tuple[str, dict[str, str]]]:
    """Every row of a VLMEvalKit prediction file as ``(index, row)``, repeated indices kept (the file read as
    :func:`scifig_tasks.vlmeval.datasets.read_predictions` reads it, which keeps one reply per index)."""
    table = prediction_tables.read_table(path)
    rows = table.to_dict("records") if "index" in table.columns else []
    return [(str(row["index"]), {str(key): str(value) for key, value in row.items()}) for row in rows]


def _check_vlmeval_rows(path: Path, dataset: str, data: Any) -> None:
    """Refuse a prediction file whose questions are not the dataset's now (answers or indices differ)."""
    suffix = path.suffix.lstrip(".").lower()
    if suffix != "tsv":
        return
    table = prediction_tables.read_table(path)
    if "answer" not in table.columns or "answer" not in data.columns:
        return
    expected = {str(index): str(answer) for index, answer in zip(data["index"], data["answer"], strict=True)}
    for index, answer in zip(table["index"], table["answer"], strict=True):
        if str(index) not in expected or expected[str(index)] != str(answer):
            raise rescoring.RescoreRefused(
                f"{path}: {dataset}, index {index}: the data changed since the run (the logged answer {answer!r} is "
                f"not the dataset's {expected.get(str(index))!r}); set the benchmark's SCIFIG_*_DATA to the data the "
                "run used"
            )


def _count_judge_failed(breakdown: Any) -> int:
    flags = breakdown.get("flags") if isinstance(breakdown, Mapping) else None
    judge = flags.get("judge") if isinstance(flags, Mapping) else None
    value = judge.get("judge_failed") if isinstance(judge, Mapping) else None
    return value if isinstance(value, int) else 0


def _json_or_none(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"not valid JSON ({exc})") from None
    return data if isinstance(data, dict) else None
