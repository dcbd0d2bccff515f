"""The base of scifig's VLMEvalKit dataset classes (:class:`SciFigDataset`): the VLMEvalKit plumbing of
:mod:`scifig_tasks.vlmeval.base` (TSV and predictions read as exact text, image files as stored, the evaluate loop),
with what reads scifig's benchmark registry and task YAMLs: each dataset's options, the TSV written from the
benchmark's data, the deprecated names, the environment block of the scores, the check of the models scoring fetches.
Each benchmark's classes live in its package (``scifig_tasks.benchmarks.<name>.vlmeval``) and call the same rules as
its lmms-eval tasks; what they share and what they deliberately do not inherit from VLMEvalKit is in docs/vlmeval.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from vlmeval.smp import LMUDataRoot

from scifig_tasks.core import judge as judge_accounting
from scifig_tasks.core import registry, settings, task_files
from scifig_tasks.core.benchmark import VlmevalDataset
from scifig_tasks.core.fetched_models import say_checks
from scifig_tasks.core.judge import JudgeClient, get_judge
from scifig_tasks.core.judge.required import judge_refusal
from scifig_tasks.core.provenance import DATA, KEY, environment
from scifig_tasks.core.secrets import mask_value
from scifig_tasks.vlmeval import base, judging, names, prediction_tables, tsv
from scifig_tasks.vlmeval.base import Message as Message
from scifig_tasks.vlmeval.base import message as message
from scifig_tasks.vlmeval.base import read_predictions as read_predictions


class SciFigDataset(base.SciFigDataset):
    """The base's plumbing over this package's registry and task YAMLs: TSV from the benchmark's data, options from
    its tasks, result files with the environment block and secrets masked."""

    BENCHMARK = ""
    """The registered benchmark (:mod:`scifig_tasks.core.registry`) whose datasets the class serves: its task version
    is the scores' ``version``, its scoring protocol switch the one :meth:`protocol` reads."""
    judge: JudgeClient | None = None
    """The judge of the running :meth:`evaluate` (:mod:`scifig_tasks.vlmeval.judging`)."""

    def __init__(self, dataset: str = "", skip_noimg: bool = True) -> None:
        """A deprecated ``SciFig_*`` name builds the dataset under its new name (one warning line on stderr). No
        ``judge`` arguments: :meth:`load_data` asks :mod:`scifig_tasks.vlmeval.judging` what the run chose."""
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

    def version(self) -> str:
        """The registered benchmark's task version."""
        return registry.benchmark(self.BENCHMARK).version

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

    def doc(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """The benchmark row (core field names and types) of a TSV line (:func:`scifig_tasks.vlmeval.tsv.row_of`;
        the datasets of one class share their benchmark's TSV format)."""
        return tsv.row_of(self.NAMES[0], line)

    def prepare_predictions(self, eval_file: Path) -> None:
        """The prediction file made safe to open in a spreadsheet
        (:func:`scifig_tasks.vlmeval.prediction_tables.make_formula_safe`): a table people open."""
        prediction_tables.make_formula_safe(eval_file)

    def masking(self) -> Callable[[Any], Any]:
        """Every secret of the process and the judge's key masked (:func:`scifig_tasks.core.secrets.mask_value`)."""
        key = [self.judge.config.api_key] if self.judge is not None and self.judge.config.api_key else []
        secrets = settings.process_secrets(key)
        return lambda value: mask_value(value, secrets)

    def provenance(self) -> dict[str, Any]:
        """The environment block (:func:`scifig_tasks.core.provenance.environment`), with the data the TSV was
        written from and the judge's usage."""
        block = environment("vlmeval")
        written_from = tsv.data_of(Path(self.data_path)) if getattr(self, "data_path", None) else {}
        block[DATA] = written_from or block[DATA]
        usage = judge_accounting.usage_report(drain=True)
        if usage is not None:
            block["judge_usage"] = usage
        return {KEY: block}


def served(benchmark: str, keep: Callable[[VlmevalDataset], bool]) -> tuple[str, ...]:
    """The names of ``benchmark``'s VLMEvalKit datasets (its registered description) that ``keep`` accepts, in the
    description's order: a class serving several of them names them so (its ``NAMES``)."""
    block = registry.benchmark(benchmark).vlmeval
    return tuple(dataset.name for dataset in (block.datasets if block else ()) if keep(dataset))
