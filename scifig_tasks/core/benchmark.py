"""A benchmark's description: every fact about one benchmark that the rest of scifig reads, in one object.

Registered under the ``scifig.benchmarks`` entry points; adapter-layer facts are ``"module:attribute"`` references.
Manual: docs/protocols.md, 'Registered benchmarks', and docs/adding-a-benchmark.md.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import settings
from scifig_tasks.core.clip_baseline import ContrastiveRule
from scifig_tasks.core.schema import BenchmarkSource

Guesser = Callable[[str, random.Random], str]
"""Draws a chance answer from a question's prompt (:mod:`scifig_tasks.core.chance`)."""

Row = Mapping[str, Any]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_REFERENCE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class BenchmarkError(ValueError):
    """A benchmark description that cannot be registered; the message is one line naming what is wrong."""


@dataclass(frozen=True)
class PublishedSet:
    """The published data a benchmark's published numbers were computed on (the report's coverage notes)."""

    name: str
    """The published set's name in sentences (``GRAB``, ``SciFIBench CS``)."""
    source: str
    """Its data source (a key of :attr:`Benchmark.sources`)."""
    questions: Mapping[str, int] = field(default_factory=dict)
    """Task or group -> questions of the published set (empty: the size is not checked)."""
    subtasks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Group -> the tasks lmms-eval's ``n-samples`` lists for it."""
    full: str = ""
    """What the published rows were computed on, in words."""
    unpublished: str = ""
    """When the paper published no data: what every run's data are instead."""
    unit: str = "set"
    """What one task of it is called (``split``: each task is one published split)."""


@dataclass(frozen=True)
class SummaryRow:
    """One row of the report's summary table: a label and the tasks whose scores it shows."""

    label: str
    alternatives: tuple[tuple[str, ...], ...]
    """Each alternative: tasks whose questions add up (a group, or its parts when the group is absent); the first
    alternative a run has is shown."""
    coverage: tuple[str, ...] = ()
    """Tasks whose data column says what the run covered of the published set (the first one the run has)."""


@dataclass(frozen=True)
class VlmevalDataset:
    """One VLMEvalKit dataset: named as the lmms-eval task (or group) asking the same questions under the same
    protocol; its rows are one split of one source, optionally filtered."""

    name: str
    source: str
    """A key of :attr:`Benchmark.sources`."""
    split: str
    keep: Callable[[Row], bool] | None = None
    """Which rows of the split the dataset asks (None: all)."""
    shown: bool = False
    """The report shows it (a test-set dataset under the default protocol)."""
    detail_metric: str = "breakdown"
    """The lmms-eval metric holding the per-task details a VLMEvalKit scores file's ``breakdown`` stands for."""
    old_names: tuple[str, ...] = ()
    """Names of earlier releases, still accepted (with a warning) for one more version."""


@dataclass(frozen=True)
class Vlmeval:
    """A benchmark's datasets served by VLMEvalKit classes of its own (optional: every task and group of its task
    folder is a VLMEvalKit dataset of its name anyway, served from its YAML's hooks, scifig_tasks.vlmeval.generic)."""

    datasets: tuple[VlmevalDataset, ...]
    classes: tuple[str, ...]
    """``"module:Class"`` of each dataset class (subclasses of :class:`scifig_tasks.vlmeval.datasets.SciFigDataset`);
    their ``NAMES`` together serve :attr:`datasets`."""
    tsv_formats: Mapping[str, str]
    """Source key -> ``"module:attribute"`` of its :class:`scifig_tasks.vlmeval.tsv.TsvFormat`."""
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """lmms-eval groups VLMEvalKit serves as several datasets: group -> its datasets, in the group's order."""


@dataclass(frozen=True)
class Report:
    """A benchmark's part of ``scifig report``."""

    summary: tuple[SummaryRow, ...]
    section: str = ""
    """``"module"`` with ``section(runs, figdir) -> Section | None``; empty: the generic section (accuracy with
    intervals per task and per category)."""
    published: PublishedSet | None = None
    sample_tasks: Mapping[str, tuple[str, str | Mapping[str, str]]] = field(default_factory=dict)
    """Task whose logged samples span several of its tasks (a VLMEvalKit dataset serving a group) -> the record field
    naming a sample's task and either a task-name template (``"plot_twist_{}"``, filled with the field's value) or
    field value -> task: the sample viewer and the comparison list each sample under that task."""
    corpus_metrics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Task-name prefix -> the corpus-level metrics the sample viewer shows once per run and task (tasks scored with
    no per-sample correctness, such as captioning)."""
    not_pooled: tuple[str, ...] = ()
    """Groups asking the same questions under several conditions: the comparison compares their tasks one by one,
    never pooled (a question would count once per condition)."""


@dataclass(frozen=True)
class Benchmark:
    """Everything scifig knows about one benchmark (docs/protocols.md and docs/adding-a-benchmark.md).

    Every part has a default so that a part left out is named by the one-line refusal (:meth:`_problem`) rather than
    by Python's ``TypeError``."""

    name: str = ""
    """Registry key, the prefix of every task name (``grab``, ``grab_properties``) and of its settings."""
    title: str = ""
    """The benchmark's name in sentences (``GRAB``)."""
    version: str = ""
    """Task version: every task YAML's ``metadata.version``; bumped when a change can move a number."""
    task_folder: Path | None = None
    """The lmms-eval task folder (YAMLs + ``utils.py``), found by ``lmms-eval --tasks`` with no flag."""
    sources: Mapping[str, BenchmarkSource] = field(default_factory=dict)
    """Data source key (a task YAML's ``metadata.scifig_source``) -> the source."""
    document_id: tuple[str, ...] = ()
    """Record fields naming a document whatever its position: compare, rescore and the sample viewer pair an
    lmms-eval run's documents with a VLMEvalKit run's on them."""
    chance: Mapping[str, Guesser | str] = field(default_factory=dict)
    """Source key -> the rule drawing a chance answer from a prompt, or why there is none (free text)."""
    report: Report | None = None
    vlmeval: Vlmeval | None = None
    """None: no datasets served by classes of its own; every task and group is still a VLMEvalKit dataset of its
    name, served from its YAML's hooks (scifig_tasks.vlmeval.generic)."""
    curate: str = ""
    """Deprecated (goes in 0.3.0): ``"module:register"`` adding ``scifig curate <name>``; register it as a
    ``scifig.curate`` entry point of the benchmark's name instead."""
    settings: tuple[settings.Setting[Any], ...] = ()
    """The benchmark's own settings besides its sources' data and revision variables (which every source has:
    :func:`source_settings`), each named ``SCIFIG_<NAME>_...``: ``scifig config`` lists them, the environment is read
    for them like any setting (:mod:`scifig_tasks.core.settings`)."""
    contrastive: Mapping[str, ContrastiveRule] = field(default_factory=dict)
    """Source key -> what a contrastive (CLIP) baseline compares in a row of it (``scifig_clip``); absent: none."""

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem is not None:
            raise BenchmarkError(f"benchmark {self.name!r} cannot be registered: {problem}")

    def _problem(self) -> str | None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            return "name must be a lower-case identifier (letters, digits, _), the prefix of its task names"
        for part, what in (("title", "the name in sentences"), ("version", "the task version, as in the YAMLs")):
            if not isinstance(getattr(self, part), str) or not getattr(self, part):
                return f"{part} is missing ({what})"
        if self.task_folder is None or not Path(self.task_folder).is_dir():
            return f"task_folder {self.task_folder} is not a folder (its lmms-eval task YAMLs and utils.py)"
        if not self.sources:
            return "sources is missing (data source key -> BenchmarkSource)"
        if not self.document_id:
            return "document_id is missing (the record fields naming a document)"
        if self.report is None:
            return "report is missing (Report(summary=(SummaryRow(label, ((task,),)),)))"
        prefix = f"{settings.PREFIX}{self.name.upper()}_"
        unnamed = [s.env_var for s in self.sources.values() if not settings.DATA_VARIABLE.match(s.env_var)]
        misnamed = [s.env_var for s in self.sources.values() if not s.env_var.startswith(prefix)]
        if unnamed or misnamed:
            return f"source variable {(unnamed or misnamed)[0]} must be named {prefix}[<PART>_]DATA"
        missing = [key for key in self.sources if key not in self.chance]
        if missing:
            return (
                f"chance has no entry for source {', '.join(missing)} (a rule drawing a chance answer from the prompt, "
                "such as scifig_tasks.core.chance.option_answer, or a sentence saying why there is none)"
            )
        foreign = [setting.name for setting in self.settings if not setting.name.startswith(prefix)]
        if foreign:
            return f"setting {foreign[0]} must be named {prefix}<WHAT> (a benchmark's settings carry its name)"
        if not self.report.summary:
            return "report.summary is missing (at least one row: a label and its tasks)"
        references = [self.curate] if self.curate else []
        if self.report.published is not None and self.report.published.source not in self.sources:
            return f"report.published.source {self.report.published.source!r} is not one of its sources"
        if self.report.published is not None and not any(row.coverage for row in self.report.summary):
            return (
                "report.published is given but no report.summary row names coverage, so the report would never say "
                "what a run covered of it — add coverage=(TASK,) to the row showing the published set"
            )
        if self.vlmeval is not None:
            references += [*self.vlmeval.classes, *self.vlmeval.tsv_formats.values()]
            unknown = [ds.name for ds in self.vlmeval.datasets if ds.source not in self.vlmeval.tsv_formats]
            if unknown:
                return f"vlmeval dataset {unknown[0]} reads a source without a tsv_formats entry"
            if not self.vlmeval.classes:
                return "vlmeval.classes is missing (the dataset classes serving its datasets)"
        bad = [reference for reference in references if not _REFERENCE.match(reference)]
        if bad:
            return f"{bad[0]!r} is not a 'module:attribute' reference"
        return None

    def owns(self, task: str) -> bool:
        """Whether ``task`` (an lmms-eval task, group or VLMEvalKit dataset name) is one of this benchmark's."""
        return task == self.name or task.startswith(f"{self.name}_")
