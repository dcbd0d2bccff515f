"""The VLMEvalKit dataset base of scifig's benchmarks (:class:`SciFigDataset`) and of datasets served through tasks'
scoring hooks (:class:`SciFigTaskDataset`): the TSV and the prediction file read as exact text, image cells written
as stored, the evaluate loop (each question scored, records and scores written beside the prediction file) and the
metrics of a dataset asking several tasks. It needs nothing of scifig's benchmark registry or task YAMLs, so it is
written once for both places it runs:

* scifig's own classes (``scifig_tasks.vlmeval.datasets``, ``scifig_tasks.vlmeval.generic``) subclass it and add what
  reads the registry and the YAMLs: each dataset's options, the TSV built from the benchmark's data, the deprecated
  names, the environment block of the scores, the check of the models scoring fetches;
* ``scifig export-upstream --framework vlmeval`` copies this module into VLMEvalKit's tree as
  ``vlmeval/dataset/utils/scifig/dataset.py``, beside the scoring code it calls, and each exported class carries what
  it needs, written into it by the export: ``DATASET_URL`` / ``DATASET_MD5`` (VLMEvalKit's own download rule: a local
  ``<name>.tsv`` in ``LMUDataRoot()`` with the recorded MD5 is used as it is), ``OPTIONS`` (each dataset's task
  options), ``JUDGE_REQUIRED``, ``TSV_LAYOUT`` and ``VERSION``.

The rules, scorers and judge client are the same in both places (``scifig_tasks.core``
and the benchmark's own modules), so the same replies give the same verdicts. What differs from VLMEvalKit's usual
dataset: the TSV and the prediction file are read as exact text (VLMEvalKit's ``load`` parses numbers, so a GRAB
answer ``2.50`` would become ``2.5``); image cells are written as stored; a reply that names no option is wrong,
never a random guess.
"""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from vlmeval.dataset.image_base import ImageBaseDataset
from vlmeval.smp import toliststr

from scifig_tasks.core import judge as judge_accounting
from scifig_tasks.core.judged_hooks import JudgeRequired, judge_configured
from scifig_tasks.core.run_files import RECORDS_SUFFIX, SCORES_SUFFIX
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.task_options import for_task
from scifig_tasks.vlmeval.judging import NO_LLM, chosen_judge
from scifig_tasks.vlmeval.prediction_tables import read_table
from scifig_tasks.vlmeval.tsv_layout import TsvFormat, read_tsv

Message = list[dict[str, str]]
SCORING_THREADS = 8
"""Questions scored at once (each may wait on the judge): at least this many, more when the judge allows more
requests in flight."""


def message(images: list[str], text: str) -> Message:
    """VLMEvalKit's message: the images, then the text."""
    return [*({"type": "image", "value": path} for path in images), {"type": "text", "value": text}]


def segments_message(segments: Sequence[str | int], images: list[str]) -> Message:
    """VLMEvalKit's message of a task's prompt layout: each segment is text, or the position of an image in
    ``images``."""
    return [
        {"type": "text", "value": segment} if isinstance(segment, str) else {"type": "image", "value": images[segment]}
        for segment in segments
    ]


def read_predictions(eval_file: str) -> dict[str, str | None]:
    """``index -> reply`` of a VLMEvalKit prediction file (tsv, xlsx or json; a pickle is refused, never loaded), as
    the exact text; an empty cell is ``None`` (scored as an empty output)."""
    table = read_table(Path(eval_file))
    for column in ("index", "prediction"):
        if column not in table.columns:
            raise ValueError(f"{eval_file}: missing column {column!r} (the file has: {', '.join(table.columns)})")
    replies: dict[str, str | None] = {}
    for index, reply in zip(table["index"], table["prediction"], strict=True):
        missing = reply is None or (isinstance(reply, float) and math.isnan(reply)) or reply == ""
        replies[str(index)] = None if missing else str(reply)
    return replies


def flattened(name: str, results: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The metrics and breakdown of dataset ``name`` from each task's results (``task -> {metric: value}``, the
    dataset's own entry among them): its own numbers as they are, every other task's (a group's tasks) as
    ``<task>/<metric>`` without their ``samples``; the breakdown is its own entry's ``breakdown`` (or
    ``caption_report``) when that is a mapping."""
    metrics = {key: value for key, value in results[name].items() if _number(value)}
    for task, entry in results.items():
        if task != name:
            metrics |= {f"{task}/{key}": value for key, value in entry.items() if _number(value) and key != "samples"}
    details = results[name].get("breakdown", results[name].get("caption_report"))
    return metrics, details if isinstance(details, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class SciFigDataset(ImageBaseDataset):
    """One benchmark's datasets: the TSV read as text, images written as stored, predictions scored by the
    benchmark's rules, records and scores written beside the prediction file."""

    TYPE = "VQA"
    MODALITY = "IMAGE"
    NAMES: tuple[str, ...] = ()
    BENCHMARK = ""
    """The benchmark whose datasets the class serves: its scoring protocol switch is the one :meth:`protocol`
    reads."""
    VERSION = ""
    DATASET_URL: dict[str, str] = {}
    DATASET_MD5: dict[str, str] = {}
    OPTIONS: dict[str, dict[str, Any]] = {}
    """Each dataset's task options (the ``default`` entry of its task's ``lmms_eval_specific_kwargs``)."""
    JUDGE_REQUIRED: dict[str, tuple[str, ...]] = {}
    """The datasets scored only with an LLM judge -> the datasets asking the same questions without requiring one."""
    TSV_LAYOUT: TsvFormat | None = None
    force_use_dataset_prompt = True
    judge: Any = None
    """The judge of the running :meth:`evaluate` (``scifig_tasks.vlmeval.judging``)."""

    def __init__(
        self, dataset: str = "", skip_noimg: bool = True, judge: str | None = None, judge_base_url: str | None = None
    ) -> None:
        """``judge`` and ``judge_base_url``: VLMEvalKit's ``--judge`` and ``--judge-base-url`` (its ``build_dataset``
        passes the options a dataset's ``__init__`` names), so a dataset that needs the judge is refused while it is
        built, before the model is asked anything, when no judge is configured."""
        self.judge_given = bool(judge_base_url) and judge not in NO_LLM
        super().__init__(dataset=dataset or self.NAMES[0], skip_noimg=skip_noimg)

    @classmethod
    def supported_datasets(cls) -> list[str]:
        return list(cls.NAMES)

    @property
    def options(self) -> dict[str, Any]:
        return self.OPTIONS.get(self.dataset_name, {})

    def protocol(self) -> Protocol:
        """The scoring protocol in force for this dataset: its ``protocol`` option, as
        ``scifig_tasks.core.scoring_protocol.in_force`` applies it."""
        return in_force(self.BENCHMARK, self.options.get("protocol", "default"))

    def version(self) -> str:
        """The task version the scores file records."""
        return self.VERSION

    def load_data(self, dataset: str) -> pd.DataFrame:
        """The dataset's TSV, found or fetched by VLMEvalKit's ``prepare_tsv`` (``DATASET_URL``, ``DATASET_MD5``) and
        read again as exact text. A dataset that needs the judge is refused first when none is configured: VLMEvalKit
        logs the line, skips this dataset and goes on with the others of the run."""
        if dataset in self.JUDGE_REQUIRED and not (self.judge_given or judge_configured()):
            raise RuntimeError(JudgeRequired([dataset], self.JUDGE_REQUIRED[dataset]).sentence)
        self.prepare_tsv(self.DATASET_URL[dataset], self.DATASET_MD5.get(dataset))
        return read_tsv(self.data_path)

    def dump_image(self, line: Mapping[str, Any]) -> list[str]:
        """The row's image bytes written as they are (no decode and re-encode) under the names the TSV gives (they
        carry a hash of the bytes, so VLMEvalKit's image cache never serves a stale image)."""
        os.makedirs(self.img_root, exist_ok=True)
        encoded, files = toliststr(line["image"]), toliststr(line["image_path"])
        paths = []
        for data, name in zip(encoded, files, strict=True):
            path = os.path.join(self.img_root, name)
            if not os.path.exists(path):
                partial = f"{path}.partial{os.getpid()}"
                with open(partial, "wb") as handle:
                    handle.write(base64.b64decode(data))
                os.replace(partial, path)
            paths.append(path)
        return paths

    def _row(self, line: int | Mapping[str, Any]) -> Mapping[str, Any]:
        return self.data.iloc[line] if isinstance(line, int) else line

    def doc(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """The benchmark row (field names and types the rules take) a TSV line holds."""
        if self.TSV_LAYOUT is None:
            raise TypeError(f"{type(self).__name__} has no TSV_LAYOUT")
        return self.TSV_LAYOUT.row(line)

    # ---- scoring ---------------------------------------------------------------------------------------------------

    def evaluate(self, eval_file: str, **judge_kwargs: Any) -> dict[str, Any]:
        """Score a prediction file with the judge VLMEvalKit's ``--judge`` options choose (else the one
        ``SCIFIG_JUDGE_*`` configures); write one record per question and the scores (naming the judge) beside it;
        return the metrics."""
        chosen = chosen_judge(judge_kwargs, self.TYPE)
        self.judge = chosen.client
        if self.dataset_name in self.JUDGE_REQUIRED and self.judge is None:
            raise RuntimeError(JudgeRequired([self.dataset_name], self.JUDGE_REQUIRED[self.dataset_name]).sentence)
        self.prepare_predictions(Path(eval_file))
        replies = read_predictions(eval_file)
        lines = [line for _, line in self.data.iterrows()]
        missing = [str(line["index"]) for line in lines if str(line["index"]) not in replies]
        if missing:
            raise ValueError(f"{eval_file}: no prediction for index {', '.join(missing[:10])} of {self.dataset_name}")

        def scored(line: Mapping[str, Any]) -> dict[str, Any]:
            reply = replies[str(line["index"])]
            with judge_accounting.task_scope(self.dataset_name):
                return {**self.score(line, reply), "prediction": reply}

        # judge calls (ambiguous answers, reformatting) run concurrently, one per scoring thread: as many threads as
        # the judge allows requests in flight, at least SCORING_THREADS
        with ThreadPoolExecutor(max_workers=max(SCORING_THREADS, chosen.max_concurrency or 0)) as pool:
            records = list(pool.map(scored, lines))
        with judge_accounting.task_scope(self.dataset_name):
            metrics, details = self.summarise(records)
        masked, stem = self.masking(), str(eval_file).rsplit(".", 1)[0]
        with open(f"{stem}{RECORDS_SUFFIX}", "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(masked(record), ensure_ascii=False) + "\n")
        scores = {"dataset": self.dataset_name, "version": self.version(), "metrics": metrics, "breakdown": details}
        scores |= {**self.extra_scores(), "judge": chosen.described(), **self.provenance()}
        with open(f"{stem}{SCORES_SUFFIX}", "w", encoding="utf-8") as handle:
            json.dump(masked(scores), handle, indent=1)
        return metrics

    def prepare_predictions(self, eval_file: Path) -> None:
        """What is done to the prediction file before it is read (nothing here)."""

    def masking(self) -> Callable[[Any], Any]:
        """What the records and the scores pass through before they are written (unchanged here)."""
        return _unchanged

    def provenance(self) -> dict[str, Any]:
        """Entries of the scores file after the judge: where the run and its data came from (none here)."""
        return {}

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def extra_scores(self) -> dict[str, Any]:
        """Entries of the scores file besides the metrics and the breakdown (none here)."""
        return {}

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        raise NotImplementedError


def _unchanged(value: Any) -> Any:
    return value


Aggregation = Callable[[list[Any]], Any] | None
"""A metric's aggregation over a task's questions (None: the mean)."""


class SciFigTaskDataset(SciFigDataset):
    """Datasets asking the questions of a benchmark's tasks through the tasks' own scoring hooks: each TSV line holds
    its prompt (``segments``: text, or the position of an image in ``image``), the task it belongs to (``task``), its
    position there (``doc``) and the document the scoring hook reads (``document``, JSON)."""

    TASKS: dict[str, tuple[str, ...]] = {}
    """Dataset -> the tasks whose questions it asks, in order (one for a task, several for a group)."""
    TASK_OPTIONS: dict[str, dict[str, Any]] = {}
    """Task -> its options, bound to its scoring hook."""
    PROCESS_RESULTS: dict[str, Callable[..., dict[str, Any]]] = {}
    """Task -> the hook scoring one reply: ``hook(document, [reply]) -> {metric: value}``."""
    METRICS: dict[str, dict[str, Aggregation]] = {}
    """Task -> metric -> its aggregation."""
    TSV_COLUMNS = ("index", "image", "image_path", "question", "task", "doc", "segments", "document")

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        return segments_message(json.loads(line["segments"]), self.dump_image(line))

    def doc(self, line: Mapping[str, Any]) -> dict[str, Any]:
        return json.loads(line["document"])

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        task = str(line["task"])
        hook = for_task(self.PROCESS_RESULTS[task], self.TASK_OPTIONS.get(task, {}))
        with judge_accounting.task_scope(task, hook=hook):
            return {"task": task, "doc_id": int(line["doc"]), **hook(self.doc(line), [reply])}

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Each task's metrics over its questions; a dataset asking several tasks (a group) reports them as
        ``<task>/<metric>`` (:func:`flattened`)."""
        results: dict[str, dict[str, Any]] = {}
        for task in self.TASKS[self.dataset_name]:
            scored = [record for record in records if record["task"] == task]
            if not scored:
                continue
            with judge_accounting.task_scope(task):
                results[task] = {**self._aggregate(task, scored), "samples": len(scored)}
        name = self.dataset_name
        if name not in results:  # a group
            results = {name: {"samples": len(records)}, **results}
        self._results = results
        return flattened(name, results)

    def _aggregate(self, task: str, records: list[dict[str, Any]]) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        for metric, aggregation in self.METRICS[task].items():
            values = [record[metric] for record in records if metric in record]
            if values:
                metrics[metric] = sum(values) / len(values) if aggregation is None else aggregation(values)
        return metrics

    def extra_scores(self) -> dict[str, Any]:
        return {"results": getattr(self, "_results", {})}
