"""Evaluation runs read back for the report: lmms-eval results files and their sample logs, and VLMEvalKit scores and
records files, grouped by model.

Manual: docs/reports.md, "How runs are read".
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry, scoring_protocol, settings, task_files
from scifig_tasks.core.benchmark import VlmevalDataset
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.provenance import KEY
from scifig_tasks.core.run_files import RECORDS_SUFFIX, RESULTS_SUFFIX, SCORES_SUFFIX, read_jsonl, read_results
from scifig_tasks.core.sample_logs import report_note, scores_note
from scifig_tasks.core.scoring_protocol import PAPER_SUFFIX, PROTOCOLS
from scifig_tasks.core.secrets import mask, mask_value


def shown_datasets() -> dict[str, VlmevalDataset]:
    """Every VLMEvalKit dataset the report shows (``shown``: a test-set dataset under the default protocol), by name,
    over the registered benchmarks in registry order. Dev-split and reasoning-prompt datasets are not shown, and
    ``_paper`` datasets only as the twins of shown ones (:func:`paper_twins`)."""
    return {
        dataset.name: dataset
        for described in registry.benchmarks().values()
        if described.vlmeval is not None
        for dataset in described.vlmeval.datasets
        if dataset.shown
    }


def paper_twins() -> dict[str, str]:
    """Each registered VLMEvalKit ``_paper`` dataset whose plain twin the report shows -> that twin (the same
    questions under the paper's protocol: shown too, labelled with its protocol)."""
    shown = shown_datasets()
    return {
        dataset.name: scoring_protocol.plain_twin(dataset.name)
        for described in registry.benchmarks().values()
        if described.vlmeval is not None
        for dataset in described.vlmeval.datasets
        if dataset.name.endswith(PAPER_SUFFIX) and scoring_protocol.plain_twin(dataset.name) in shown
    }


def vlmeval_tasks() -> dict[str, str]:
    """VLMEvalKit dataset name -> the lmms-eval task or group whose section shows it: the same name
    (:mod:`scifig_tasks.vlmeval.names`; a ``_paper`` twin of a shown dataset too), or a name of the dataset in an
    earlier release (its ``old_names``: the ``SciFig_*`` name of a file written by an earlier release)."""
    shown = shown_datasets()
    return {
        **{name: name for name in shown},
        **{name: name for name in paper_twins()},
        **{old: name for name, dataset in shown.items() for old in dataset.old_names},
    }


def detail_metric(task: str) -> str:
    """The lmms-eval metric holding ``task``'s per-task details (``breakdown`` unless its description says otherwise,
    e.g. ``caption_report``; a ``_paper`` twin's is its plain twin's): a VLMEvalKit scores file's ``breakdown`` is
    stored under this name."""
    dataset = shown_datasets().get(paper_twins().get(task, task))
    return dataset.detail_metric if dataset is not None else "breakdown"


@dataclass
class Run:
    """One model's metrics over every task and group found for it."""

    model: str
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environments: dict[Path, Any] = field(default_factory=dict)
    """Each results file's environment block (:mod:`scifig_tasks.core.provenance`; ``None`` when it has none)."""
    task_versions: dict[Path, dict[str, str]] = field(default_factory=dict)
    """Each results file's task (or group) -> task version."""
    task_files: dict[str, Path] = field(default_factory=dict)
    """Task (or group) -> the results file its metrics come from (whose environment block names its judge)."""
    data_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Task -> lmms-eval's ``n-samples`` entry: ``original`` (questions in the data the run read) and ``effective``
    (questions evaluated, fewer under ``--limit``); absent for VLMEvalKit runs."""
    group_tasks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Group -> its tasks, as lmms-eval's ``group_subtasks`` lists them (the tasks ``n-samples`` counts)."""
    protocols: dict[str, str] = field(default_factory=dict)
    """Task (or group) -> the scoring protocol that produced its numbers (:func:`task_protocol`)."""
    recorded_as: dict[str, str] = field(default_factory=dict)
    """Task (or group) as shown -> the name its results file records it under, where they differ (a ``_paper`` task
    shown under its plain name: :mod:`scifig_tasks.report.protocols`)."""
    _dates: dict[str, str] = field(default_factory=dict)

    def has(self, task: str) -> bool:
        return task in self.entries

    def recorded(self, task: str) -> str:
        """The name ``task`` has in its results file: look up what the file keys by task (its ``judge_usage``) by
        this name, never by the name shown."""
        return self.recorded_as.get(task, task)

    def metric(self, task: str, name: str) -> Any:
        """``results[task]["<name>,none"]``, or ``None`` when the task or metric is absent."""
        return self.entries.get(task, {}).get(f"{name},none")


def results_files(paths: Iterable[Path]) -> list[Path]:
    """Every lmms-eval ``*_results.json`` and VLMEvalKit ``*_scifig_scores.json`` named or found (recursively) under
    the given paths; an error for a missing path."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted([*path.rglob(f"*{RESULTS_SUFFIX}"), *path.rglob(f"*{SCORES_SUFFIX}")]))
        else:
            raise FileNotFoundError(f"no results file or directory at {path}")
    if not found:
        where = ", ".join(str(p) for p in paths)
        raise FileNotFoundError(f"no *{RESULTS_SUFFIX} or *{SCORES_SUFFIX} under {where}")
    return found


def model_name(results: Mapping[str, Any], path: Path) -> str:
    """The model's display name from a results file."""
    name = results.get("model_name")
    if isinstance(name, str) and name:
        return name
    config = results.get("config")
    if not isinstance(config, Mapping) or not config.get("model"):
        raise DataError(str(path), None, None, "results file names no model (neither 'model_name' nor 'config.model')")
    args = config.get("model_args") or ""
    return f"{config['model']}({args})" if args else str(config["model"])


RESCORED = "re-scored"


def rescored_name(name: str, record: Mapping[str, Any]) -> str:
    """The model name of a ``scifig rescore`` output (its ``scifig_rescore`` record) given together with the run it
    re-scored or another re-score of it: the run's own name with ``(re-scored)`` and the protocol when one was forced
    (``--protocol``). Both files carry the run's timestamped model name; merged, the later file's numbers would
    silently replace the other's, so they stay rows of their own, each named for what it is."""
    protocol = record.get("protocol")
    forced = f", {protocol} protocol" if protocol in PROTOCOLS else ""
    return f"{name} ({RESCORED}{forced})"


def rescore_note(record: Mapping[str, Any]) -> str:
    """What a re-scored results file says of itself, in words (a note of its run)."""
    protocol = record.get("protocol") or "each task's own"
    when = f" on {record['rescored_at']}" if record.get("rescored_at") else ""
    return f"re-scored by scifig rescore{when} from the logged outputs (protocol: {protocol})"


@functools.cache
def declared_protocols() -> dict[str, str]:
    """Task or group -> the protocol its task YAML declares (``metadata.scifig_protocol``; a group's tasks inherit
    the group's), over the registered benchmarks' task folders (:func:`scifig_tasks.core.task_files.scifig_tasks`)."""
    tasks = task_files.scifig_tasks()
    found: dict[str, str] = {}
    for info in tasks.values():
        protocol = info.metadata.get("scifig_protocol")
        if protocol in PROTOCOLS:
            found[info.name] = str(protocol)
            for member in info.members:
                if tasks.get(member) is None or tasks[member].metadata.get("scifig_protocol") not in PROTOCOLS:
                    found.setdefault(member, str(protocol))
    return found


def task_protocol(task: str, data: Mapping[str, Any]) -> str:
    """The protocol that scored ``task`` in a results file: the one ``scifig rescore --protocol`` forced, else the
    task's ``metadata.scifig_protocol`` in the file's ``configs``, else the one its task YAML declares
    (:func:`declared_protocols`), else the one its name selects
    (:func:`scifig_tasks.core.scoring_protocol.protocol_of`)."""
    record = data.get("scifig_rescore")
    if isinstance(record, Mapping) and record.get("protocol") in PROTOCOLS:
        return str(record["protocol"])
    config = (data.get("configs") or {}).get(task)
    metadata = config.get("metadata") if isinstance(config, Mapping) else None
    declared = metadata.get("scifig_protocol") if isinstance(metadata, Mapping) else None
    if declared in PROTOCOLS:
        return str(declared)
    return declared_protocols().get(task) or scoring_protocol.protocol_of(task)


PLAIN = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]+")
"""A secret whose characters a JSON writer never has to escape (printable ASCII but ``"`` and ``\\``)."""
ASCII_ESCAPE = re.compile(rb"\\u00([0-7][0-9a-fA-F])")


def can_hold(path: Path, secrets: Mapping[str, str]) -> bool:
    """Whether a string read from the JSON file at ``path`` can hold one of ``secrets``, so what is read from it must
    be masked (:func:`scifig_tasks.core.secrets.mask_value`). Walking every sample of a run to mask it took as long as
    reading it; most files hold no secret.

    Rule (exact): a string decoded from JSON text holds a secret of plain characters (:data:`PLAIN`) only if the text
    holds the secret as it is, or writes one of its characters as an escape: ``\\/`` for ``/``, ``\\u00XX`` for
    an ASCII character (any other escape stands for a character no plain secret has). So the file is read as bytes
    and searched; a secret of other characters is always masked."""
    if not secrets:
        return False
    if any(PLAIN.fullmatch(secret) is None for secret in secrets):
        return True
    data = path.read_bytes()
    if any(secret.encode("ascii") in data for secret in secrets):
        return True
    if b"\\/" in data and any("/" in secret for secret in secrets):
        return True
    escaped = {chr(int(code, 16)) for code in ASCII_ESCAPE.findall(data)}
    return any(character in secret for character in escaped for secret in secrets)


def _masked(value: Any, path: Path, secrets: Mapping[str, str]) -> Any:
    """``value`` read from ``path``, masked where it can hold a secret (:func:`can_hold`)."""
    return mask_value(value, secrets) if can_hold(path, secrets) else value


def _samples(results_path: Path, secrets: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    prefix = results_path.name[: -len(RESULTS_SUFFIX)]
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results_path.parent.glob(f"{prefix}_samples_*.jsonl")):
        found[path.name[len(f"{prefix}_samples_") : -len(".jsonl")]] = _masked(read_jsonl(path), path, secrets)
    return found


VLMEVAL_ROW = "vlmeval_row"
"""A generic VLMEvalKit dataset's sample: its record's row of the dataset (of its TSV), where ``doc_id`` is the
question's position among its task's documents."""


def task_position(sample: Mapping[str, Any]) -> bool:
    """Whether a logged sample's ``doc_id`` is its question's position among its task's documents as lmms-eval loads
    them: an lmms-eval sample's, and a generic VLMEvalKit dataset's record's (:data:`VLMEVAL_ROW`); a VLMEvalKit
    dataset with a class of its own numbers its records by its rows instead."""
    return not sample.get("vlmeval_dataset") or VLMEVAL_ROW in sample


def _is_generic(data: Mapping[str, Any]) -> bool:
    """Whether a scores file is a generic dataset's (:class:`scifig_tasks.vlmeval.generic.SciFigTask`): ``results``
    holding its dataset, a task or group of a registered benchmark, in lmms-eval's shape."""
    results, dataset = data.get("results"), str(data["dataset"])
    return (
        isinstance(results, Mapping)
        and isinstance(results.get(dataset), Mapping)
        and all(isinstance(entry, Mapping) for entry in results.values())
        and registry.benchmark_of(dataset) is not None
    )


def _generic(path: Path, data: Mapping[str, Any], run: Run, secrets: Mapping[str, str]) -> None:
    """A generic dataset's scores file (and its records) into ``run``, as lmms-eval's results and samples are read:
    every task and group of ``results`` under its own name (docs/reports.md, "How runs are read")."""
    dataset, results = str(data["dataset"]), data["results"]
    run.sources.append(path)
    run.environments[path] = data.get(KEY)
    for task, metrics in results.items():
        if task in run.task_files:
            run.notes.append(f"{task}: {path.name} replaces {run.task_files[task].name}")
        run.entries[task] = {f"{name},none": value for name, value in metrics.items() if name != "samples"}
        run.task_files[task] = path
        run.protocols[task] = declared_protocols().get(task) or scoring_protocol.protocol_of(task)
        run.task_versions.setdefault(path, {})[task] = str(data.get("version", "-"))
    tasks = [task for task in results if task != dataset] or [dataset]
    if tasks != [dataset]:
        run.group_tasks[dataset] = tuple(tasks)
    if isinstance(data.get("partial"), dict):  # scifig rescore --allow-partial
        run.notes.append(scores_note(dataset, data["partial"], path))
    records = path.with_name(path.name[: -len(SCORES_SUFFIX)] + RECORDS_SUFFIX)
    if not records.is_file():
        return
    for task in tasks:
        run.samples[task] = []
    for row, record in enumerate(_masked(read_jsonl(records), records, secrets)):
        task = str(record.get("task", dataset))
        logged = {name: value for name, value in record.items() if name not in ("task", "prediction")}
        sample = {**logged, "doc_id": record.get("doc_id", row), "filtered_resps": record.get("prediction")}
        run.samples.setdefault(task, []).append({**sample, "vlmeval_dataset": dataset, VLMEVAL_ROW: row})


def _vlmeval(path: Path, runs: dict[str, Run], secrets: Mapping[str, str]) -> None:
    """One VLMEvalKit scores file into the run ``<model> (VLMEvalKit)``."""
    try:
        data = _masked(json.loads(path.read_text(encoding="utf-8")), path, secrets)
    except json.JSONDecodeError as exc:
        raise DataError(str(path), None, None, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not {"dataset", "metrics", "breakdown"} <= set(data):
        raise DataError(str(path), None, None, "not a scifig VLMEvalKit scores file (dataset, metrics, breakdown)")
    dataset = str(data["dataset"])
    suffix = f"_{dataset}{SCORES_SUFFIX}"
    model = (
        path.name[: -len(suffix)] if path.name.endswith(suffix) and len(path.name) > len(suffix) else path.parent.name
    )
    run = runs.setdefault(f"{model} (VLMEvalKit)", Run(f"{model} (VLMEvalKit)"))
    task = vlmeval_tasks().get(dataset)
    if task is None and _is_generic(data):
        _generic(path, data, run, secrets)
        return
    if task is None:
        run.notes.append(f"{dataset}: not shown in this report ({path.name})")
        return
    if task in run.entries:
        run.notes.append(f"{task}: {path.name} replaces {run.sources[-1].name}")
    run.sources.append(path)
    run.task_files[task] = path
    run.protocols[task] = declared_protocols().get(dataset) or scoring_protocol.protocol_of(dataset)
    run.environments[path] = data.get(KEY)
    run.task_versions[path] = {task: str(data.get("version", "-"))}
    run.entries[task] = {f"{name},none": value for name, value in data["metrics"].items()}
    run.entries[task][f"{detail_metric(task)},none"] = data["breakdown"]
    if isinstance(data.get("partial"), dict):  # scifig rescore --allow-partial
        run.notes.append(scores_note(task, data["partial"], path))
    records = path.with_name(path.name[: -len(SCORES_SUFFIX)] + RECORDS_SUFFIX)
    if records.is_file():
        run.samples[task] = [
            {
                "doc_id": index,
                "breakdown": record,
                "filtered_resps": record.get("prediction"),
                "vlmeval_dataset": dataset,
            }
            for index, record in enumerate(_masked(read_jsonl(records), records, secrets))
        ]


def load_runs(paths: Iterable[Path]) -> list[Run]:
    """Read every results file (and its samples) and group them by model, in order of first appearance; every string
    read is masked with the environment's secrets (:mod:`scifig_tasks.core.secrets`), so nothing built from the runs
    shows a key, not even in part: a plain lmms-eval run masks nothing, and a server echoing a key puts it in the
    samples."""
    runs: dict[str, Run] = {}
    plain_names: dict[str, str] = {}  # key of a re-scored run -> the model name its file carries
    secrets = settings.process_secrets()
    for path in results_files(list(paths)):
        if path.name.endswith(SCORES_SUFFIX):
            _vlmeval(path, runs, secrets)
            continue
        data = _masked(read_results(path), path, secrets)
        name = model_name(data, path)
        key = name
        record = data.get("scifig_rescore")
        if isinstance(record, Mapping):  # a re-score is never merged into the run it re-scored
            key = rescored_name(name, record)
            plain_names[key] = name
        run = runs.setdefault(key, Run(name))
        if isinstance(record, Mapping) and (note := rescore_note(record)) not in run.notes:
            run.notes.append(note)
        run.sources.append(path)
        run.environments[path] = data.get(KEY)
        date = str(data.get("date", ""))
        entries = {**data["results"], **(data.get("groups") or {})}
        samples = _samples(path, secrets)
        for task, metrics in entries.items():
            previous = run._dates.get(task)
            if previous is not None:
                if previous > date:
                    run.notes.append(f"{task}: kept the later run ({previous}); ignored {path.name}")
                    continue
                run.notes.append(f"{task}: the later run {path.name} replaces the one of {previous}")
            run.entries[task] = dict(metrics)
            run._dates[task] = date
            run.task_files[task] = path
            run.protocols[task] = task_protocol(task, data)
            subtasks = (data.get("group_subtasks") or {}).get(task)
            if isinstance(subtasks, list):
                run.group_tasks[task] = tuple(str(name) for name in subtasks)
            counts = (data.get("n-samples") or {}).get(task)
            if isinstance(counts, dict):
                run.data_counts[task] = {k: int(v) for k, v in counts.items() if isinstance(v, int | float)}
            if task in (data.get("versions") or {}):
                run.task_versions.setdefault(path, {})[task] = str(data["versions"][task])
            if task in samples:
                run.samples[task] = samples[task]
                if note := report_note(task, samples[task], data, path):  # a damaged log says "partial"
                    run.notes.append(note)
    taken = [key for key in runs if key not in plain_names]
    for key, name in plain_names.items():  # a re-score given with its run (or another re-score) is named for it
        if name in taken or sum(other == name for other in plain_names.values()) > 1:
            runs[key].model = key
    for run in runs.values():  # what was read is masked as it was read (:func:`can_hold`); the names made of it here
        run.model, run.notes = mask(run.model, secrets), mask_value(run.notes, secrets)
    return list(runs.values())
