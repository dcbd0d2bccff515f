"""The base of scifig's VLMEvalKit dataset classes (:class:`SciFigDataset`): TSV from the benchmark's data, image
files as stored, predictions read, records and scores written with the environment block. Each benchmark's classes live
in its package (``scifig_tasks.benchmarks.<name>.vlmeval``) and call the same rules as its lmms-eval tasks; what they
share and what they deliberately do not inherit from VLMEvalKit is in docs/vlmeval.md."""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from vlmeval.dataset.image_base import ImageBaseDataset
from vlmeval.smp import LMUDataRoot, toliststr

from scifig_tasks.core import judge as judge_accounting
from scifig_tasks.core import registry, settings, task_files
from scifig_tasks.core.benchmark import VlmevalDataset
from scifig_tasks.core.fetched_models import say_checks
from scifig_tasks.core.judge import JudgeClient, get_judge
from scifig_tasks.core.judge.required import judge_refusal
from scifig_tasks.core.provenance import DATA, KEY, environment
from scifig_tasks.core.run_files import RECORDS_SUFFIX, SCORES_SUFFIX
from scifig_tasks.core.scoring_protocol import Protocol, in_force
from scifig_tasks.core.secrets import mask_value
from scifig_tasks.vlmeval import judging, names, prediction_tables, tsv

Message = list[dict[str, str]]
SCORING_THREADS = 8


class SciFigDataset(ImageBaseDataset):
    """Common part: TSV from this package's data, faithful image files, prediction reading, result files."""

    TYPE = "VQA"
    MODALITY = "IMAGE"
    NAMES: tuple[str, ...] = ()
    BENCHMARK = ""
    """The registered benchmark (:mod:`scifig_tasks.core.registry`) whose datasets the class serves: its task version
    is the scores' ``version``, its scoring protocol switch the one :meth:`protocol` reads."""
    force_use_dataset_prompt = True
    judge: JudgeClient | None = None
    """The judge of the running :meth:`evaluate` (:mod:`scifig_tasks.vlmeval.judging`)."""

    def __init__(self, dataset: str = "", skip_noimg: bool = True) -> None:
        """A deprecated ``SciFig_*`` name builds the dataset under its new name (one warning line on stderr)."""
        super().__init__(dataset=names.current(dataset or self.NAMES[0]), skip_noimg=skip_noimg)

    @classmethod
    def supported_datasets(cls) -> list[str]:
        """The class's names, then the deprecated names of the same datasets (VLMEvalKit's ``build_dataset`` finds
        the class by either; the listing shows today's names first)."""
        return [*cls.NAMES, *(old for old, new in names.DEPRECATED.items() if new in cls.NAMES)]

    @cached_property
    def options(self) -> dict[str, Any]:
        """The task options of the lmms-eval task or group of the same name, read from its YAML
        (:func:`scifig_tasks.core.task_files.options`): one declaration, the same values in both frameworks."""
        return task_files.options(self.dataset_name)

    def protocol(self) -> Protocol:
        """The scoring protocol in force for this dataset: its ``protocol`` option, as
        :func:`scifig_tasks.core.scoring_protocol.in_force` applies it."""
        return in_force(self.BENCHMARK, self.options.get("protocol", "default"))

    def load_data(self, dataset: str) -> pd.DataFrame:
        """The dataset's TSV; a dataset that cannot be scored without the LLM judge is refused first when none is
        chosen (:func:`scifig_tasks.lmms_eval.environment.judge_refusal`, the declaration of the lmms-eval task of the
        same name); the models its scoring fetches at run time are checked then
        (:mod:`scifig_tasks.core.fetched_models`)."""
        refused = judge_refusal([dataset], available=judging.declared() or get_judge() is not None)
        if refused is not None:
            raise RuntimeError(refused.sentence)
        tasks = task_files.scifig_tasks()
        say_checks(
            (task_files.scoring_hook(tasks.get(leaf)) for leaf in task_files.leaves(dataset, tasks)), "scifig vlmeval"
        )
        path = tsv.ensure_tsv(dataset, Path(LMUDataRoot()))
        self.data_path = str(path)
        return tsv.read_tsv(path)

    def dump_image(self, line: Mapping[str, Any]) -> list[str]:
        """Write the row's image bytes as they are (no decode/re-encode) under content-hashed names."""
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
        """The benchmark row (core field names and types) of a TSV line (:func:`scifig_tasks.vlmeval.tsv.row_of`;
        the datasets of one class share their benchmark's TSV format)."""
        return tsv.row_of(self.NAMES[0], line)

    # ---- scoring ---------------------------------------------------------------------------------------------------

    def evaluate(self, eval_file: str, **judge_kwargs: Any) -> dict[str, Any]:
        """Score a prediction file with the judge VLMEvalKit's options or the environment choose; write the records
        and the scores (naming the judge) beside it; return the metrics. The prediction file is first made safe to
        open in a spreadsheet (:func:`scifig_tasks.vlmeval.prediction_tables.make_formula_safe`)."""
        chosen = judging.chosen_judge(judge_kwargs, self.TYPE)
        self.judge = chosen.client
        prediction_tables.make_formula_safe(Path(eval_file))  # a table people open: no cell read as a formula
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
        # the judge allows requests in flight (SCIFIG_JUDGE_MAX_CONCURRENCY), at least SCORING_THREADS
        with ThreadPoolExecutor(max_workers=max(SCORING_THREADS, chosen.max_concurrency or 0)) as pool:
            records = list(pool.map(scored, lines))
        with judge_accounting.task_scope(self.dataset_name):
            metrics, details = self.summarise(records)
        key = [self.judge.config.api_key] if self.judge is not None and self.judge.config.api_key else []
        stem, secrets = str(eval_file).rsplit(".", 1)[0], settings.process_secrets(key)
        with open(f"{stem}{RECORDS_SUFFIX}", "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(mask_value(record, secrets), ensure_ascii=False) + "\n")
        with open(f"{stem}{SCORES_SUFFIX}", "w", encoding="utf-8") as handle:
            version = registry.benchmark(self.BENCHMARK).version
            scores = {"dataset": self.dataset_name, "version": version, "metrics": metrics}
            scores |= {"breakdown": details, **self.extra_scores(), "judge": chosen.described()}
            scores[KEY] = environment("vlmeval")
            written_from = tsv.data_of(Path(self.data_path)) if getattr(self, "data_path", None) else {}
            scores[KEY][DATA] = written_from or scores[KEY][DATA]
            usage = judge_accounting.usage_report(drain=True)
            if usage is not None:
                scores[KEY]["judge_usage"] = usage
            json.dump(mask_value(scores, secrets), handle, indent=1)
        return metrics

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def extra_scores(self) -> dict[str, Any]:
        """Entries of the scores file besides the metrics and the breakdown (none here)."""
        return {}

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        raise NotImplementedError


def served(benchmark: str, keep: Callable[[VlmevalDataset], bool]) -> tuple[str, ...]:
    """The names of ``benchmark``'s VLMEvalKit datasets (its registered description) that ``keep`` accepts, in the
    description's order: a class serving several of them names them so (its ``NAMES``)."""
    block = registry.benchmark(benchmark).vlmeval
    return tuple(dataset.name for dataset in (block.datasets if block else ()) if keep(dataset))


def read_predictions(eval_file: str) -> dict[str, str | None]:
    """``index -> reply`` from a VLMEvalKit prediction file (tsv, xlsx or json:
    :func:`scifig_tasks.vlmeval.prediction_tables.read_table`; a pickle is refused, never loaded), replies as the
    exact text (an empty cell is ``None``, which core scores as an empty output)."""
    table = prediction_tables.read_table(Path(eval_file))
    for column in ("index", "prediction"):
        if column not in table.columns:
            raise ValueError(f"{eval_file}: missing column {column!r} (the file has: {', '.join(table.columns)})")
    replies: dict[str, str | None] = {}
    for index, reply in zip(table["index"], table["prediction"], strict=True):
        missing = reply is None or (isinstance(reply, float) and math.isnan(reply)) or reply == ""
        replies[str(index)] = None if missing else str(reply)
    return replies


def message(images: list[str], text: str) -> Message:
    """VLMEvalKit's message: the images, then the text."""
    return [*({"type": "image", "value": path} for path in images), {"type": "text", "value": text}]
