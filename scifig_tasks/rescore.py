"""``scifig rescore RUN... --out DIR``: score a finished run's saved outputs again with the current scorer, without
calling the model, and list what changed.

Every benchmark's numbers come from its scorer (prompt parsing, extraction, judge, denominators: the rules of the
papers as :mod:`scifig_tasks.core` implements them). When that scorer changes, or a run is to be read under the other
protocol (``--protocol default|paper``: as the plain-name or the ``_paper`` task scores,
:mod:`scifig_tasks.core.protocol`; e.g. SciFIBench's paper rule of sending every output to the LLM judge, App. B), the
model's outputs need not be generated again: they are in the sample logs.

* lmms-eval runs (``<output_path>/<model>/<date>_results.json`` with the ``<date>_samples_<task>.jsonl`` that
  ``--log_samples`` writes): each task is loaded as ``lmms-eval --tasks`` loads it (same data source), each logged
  output goes through the task's own ``process_results`` with its document, and the metrics are aggregated by
  lmms-eval's own code (``TaskOutput.calculate_aggregate_metric``, ``consolidate_results``,
  ``consolidate_group_results``, i.e. the tasks' and groups' YAML aggregations with ``weight_by_size``), so scoring
  again under the same setting gives the run's numbers exactly. The re-scored run is written in lmms-eval's format
  (``DIR/<model>/<date>_results.json`` and samples files), readable by ``scifig report``.
* VLMEvalKit runs (``<work-dir>/<model>/<model>_<dataset>.tsv``): the prediction file is copied to ``DIR/<model>/``
  and scored there by the dataset class's ``evaluate``, which writes the ``_scifig_scores.json`` and
  ``_scifig_records.jsonl`` that ``scifig report`` reads.

A sample's verdict is its record in the ``breakdown`` metric (predicted answer, resolution, reason, correct; the
``audit_prompt`` a judge-audited record carries is not part of it), or its metric values for tasks without one.
``DIR/<model>/rescore_diff.json`` lists, per task, the headline metrics before and after and every sample whose
verdict changed. The judge is the shared cached client configured by ``SCIFIG_JUDGE_*``; the model is never called.

A run that cannot be scored again is refused with the file named: results written without ``--log_samples``, a task
this package does not provide, or a logged sample whose document differs from the data loaded now (the run used other
data: the message names the task, the ``doc_id`` and the variable to set). lmms-eval 0.7.3 logs the same
``doc_hash`` for every document (the hash of ``null``), so documents are compared by the logged ``target`` and the
prompt (``input``) rebuilt from the document; a real ``doc_hash`` is compared as well.

A damaged log is refused too (:mod:`scifig_tasks.core.sample_logs`): every task's samples file must hold each
document the results file counts (``n-samples`` from ``config.offset``) exactly once, and a VLMEvalKit prediction
file each question of the dataset once; the message names the file and the missing or repeated doc ids. With
``--allow-partial`` what is there is scored (a copy of a line is scored once): the printed table says n and
"partial", ``rescore_diff.json`` and the re-scored results file (``scifig_rescore.partial``) or scores file
(``partial``) record the counts, and the exit status is 1, as for samples the judge could not score: the numbers
are not the run's. A doc id logged twice with different contents, or one the run did not evaluate, is refused even
then.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scifig_tasks.core import judge, provenance, settings
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.mmsci import PAPER_DENOMINATOR
from scifig_tasks.core.protocol import PROTOCOLS, Protocol, rescoring_as
from scifig_tasks.core.sample_logs import LogCheck, check_ids, check_log, distinct
from scifig_tasks.core.secrets import masked_output, secrets_of
from scifig_tasks.report.runs import RECORDS_SUFFIX, RESULTS_SUFFIX, SCORES_SUFFIX, read_jsonl, read_results

NULL_DOC_HASH = hashlib.sha256(b"null").hexdigest()
"""lmms-eval 0.7.3 hashes ``Instance.doc``, which it never sets: every sample's ``doc_hash`` is this value."""
NOT_VERDICT = frozenset({"audit_prompt"})
"""Record keys that do not decide a verdict (the judge-audit prompt exists only when a judge is configured)."""
PREDICTION_SUFFIXES = ("tsv", "xlsx", "json", "pkl")
DIFF_FILE = "rescore_diff.json"
WORKERS = 4
"""Samples scored at once (lmms-eval's ``process_docs_parallel`` default); the judge client bounds its own calls."""
ALLOW_PARTIAL = "--allow-partial scores what is there (marked partial)"


class RescoreRefused(RuntimeError):
    """A run that cannot be scored again (the message names the file and what to do)."""


@dataclass
class TaskDiff:
    """One task's (or group's) headline metrics before and after, and the samples whose verdict changed."""

    task: str
    samples: int
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: list[dict[str, Any]] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    """A group's tasks (their changed samples are listed under each task)."""
    changed_count: int | None = None
    expected: int | None = None
    """Samples the run scored (``None``: not recorded); ``samples`` is how many were scored again."""
    partial: dict[str, Any] | list[str] | None = None
    """A task scored from a damaged log (``--allow-partial``): its missing and repeated ids; a group: its partial
    tasks."""

    @property
    def n_changed(self) -> int:
        return len(self.changed) if self.changed_count is None else self.changed_count

    def as_json(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"samples": self.samples, "expected": self.expected}
        if self.partial:
            counts["partial"] = self.partial
        if self.members:
            return {**counts, "metrics": self.metrics, "tasks": self.members, "changed_samples": self.n_changed}
        return {**counts, "metrics": self.metrics, "changed_samples": self.n_changed, "changed": self.changed}


@dataclass
class RescoredRun:
    """What one results file (or VLMEvalKit prediction file) became."""

    source: Path
    written: list[Path]
    model_dir: Path
    diffs: list[TaskDiff]
    judge_failed: dict[str, int] = field(default_factory=dict)
    environment_changes: list[str] = field(default_factory=list)
    """What differs between the environment the run recorded and this one (:func:`environment_changes`)."""
    partial: list[str] = field(default_factory=list)
    """One line per log scored although damaged (``--allow-partial``): the file and what was missing or repeated."""
    judge_usage: dict[str, Any] | None = None
    """What the judge did for this run's re-scoring (:func:`scifig_tasks.core.judge.usage_report`; under
    ``--dry-run`` the requests it would send); None when it was not asked."""


def environment_changes(recorded: Any, current: Mapping[str, Any]) -> list[str]:
    """The versions that differ between a run's recorded environment block and ``current``, or one entry saying
    that the run recorded none."""
    if not isinstance(recorded, Mapping):
        return [provenance.NOT_RECORDED]
    return provenance.differences(recorded, current)


# ---- verdicts and headline metrics ---------------------------------------------------------------------------------


def verdict(values: Mapping[str, Any]) -> dict[str, Any]:
    """A sample's verdict: its ``breakdown`` record without :data:`NOT_VERDICT` keys, else its metric values."""
    record = values.get("breakdown")
    if isinstance(record, Mapping):
        return {key: value for key, value in record.items() if key not in NOT_VERDICT}
    return dict(values)


def changed_sample(doc_id: Any, old: Mapping[str, Any], new: Mapping[str, Any], output: Any) -> dict[str, Any] | None:
    """The diff entry of one sample, or ``None`` when its verdict did not change."""
    before, after = verdict(old), verdict(new)
    if _canonical(before) == _canonical(after):
        return None
    keys = sorted({*before, *after}, key=lambda key: (key not in ("predicted", "resolution", "reason", "correct"), key))
    fields = [key for key in keys if _canonical(before.get(key)) != _canonical(after.get(key))]
    return {"doc_id": doc_id, "fields": fields, "old": before, "new": after, "output": output}


def _canonical(value: Any) -> str:
    """Values compared as JSON (a re-scored float equals the logged one exactly after the JSON round trip)."""
    return json.dumps(value, sort_keys=True, default=str)


def headline(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numeric metrics of a results entry (``accuracy,none`` ...), without standard errors and sizes; from a
    ``breakdown``, its overall accuracy when the entry has no ``accuracy`` metric, and the accuracy over resolved
    answers only (``paper_denominator``, MMSci's denominator) when it has one."""
    found: dict[str, float] = {}
    for key, value in metrics.items():
        if "_stderr" in key or key in ("alias", "samples", " ") or isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            found[key] = value
    breakdown = metrics.get("breakdown,none")
    if isinstance(breakdown, Mapping):
        cells = {"breakdown.overall.accuracy": _overall(breakdown)} if "accuracy,none" not in found else {}
        cells["breakdown.paper_denominator.accuracy"] = _overall(breakdown.get(PAPER_DENOMINATOR))
        found.update({key: value for key, value in cells.items() if value is not None})
    return found


def _overall(table: Any) -> float | None:
    overall = table.get("overall") if isinstance(table, Mapping) else None
    cell = overall.get("all") if isinstance(overall, Mapping) else None
    value = cell.get("accuracy") if isinstance(cell, Mapping) else None
    return value if isinstance(value, int | float) else None


def _metric_pairs(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    before, after = headline(old), headline(new)
    return {key: {"old": before.get(key), "new": after.get(key)} for key in sorted({*before, *after})}


# ---- damaged logs --------------------------------------------------------------------------------------------------


def refusal(check: LogCheck, counted_by: str) -> str:
    """Why a damaged log is refused, in one line: the file, the task, the missing or repeated ids, what to do.
    ``counted_by`` says where the expected samples come from (``<date>_results.json counts``)."""
    where = f"{check.origin}: task {check.task}: {check.problems()}"
    if check.conflicting:
        return f"{where}: keep the right line of each (or run the model again)"
    if check.foreign:
        return f"{where}: the log is not this run's ({check.expected} samples {counted_by}); use the run's own log"
    if check.expected is None:
        return f"{where}; {ALLOW_PARTIAL}"
    return (
        f"{where}: the log holds {check.logged} of the {check.expected} samples {counted_by}; restore the log from "
        f"the run, or {ALLOW_PARTIAL}"
    )


def partial_line(check: LogCheck) -> str:
    """The warning for a damaged log scored anyway (``--allow-partial``)."""
    of = "" if check.expected is None else f" of the {check.expected}"
    return (
        f"{check.origin}: task {check.task}: {check.problems()}; scored the {check.logged}{of} samples that are there "
        "(--allow-partial)"
    )


def accept(checks: Sequence[LogCheck], counted_by: str, allow_partial: bool) -> list[str]:
    """Refuse every damaged log (one line each) unless ``allow_partial`` and it can be scored; return the warnings of
    the damaged logs scored anyway."""
    refused = [refusal(c, counted_by) for c in checks if not c.complete and not (allow_partial and c.scorable)]
    if refused:
        raise RescoreRefused("\n".join(refused))
    return [partial_line(check) for check in checks if not check.complete]


def _partial(check: LogCheck) -> dict[str, Any] | None:
    return None if check.complete else {"missing": list(check.missing), "duplicated": list(check.repeated)}


# ---- protocol --------------------------------------------------------------------------------------------------------


def checked_protocol(value: str | None) -> Protocol | None:
    """``--protocol``: every task scores as its ``value`` twin would (None: each task with its own protocol)."""
    if value is None:
        return None
    if value not in PROTOCOLS:
        raise RescoreRefused(f"--protocol {value!r}: choose one of {', '.join(PROTOCOLS)}")
    return value  # type: ignore[return-value]


# ---- lmms-eval runs --------------------------------------------------------------------------------------------------


def _task_dict(names: Sequence[str], model: str | None, path: Path) -> dict[Any, Any]:
    """lmms-eval's task dictionary for ``names`` (tasks and groups), loaded as ``lmms-eval --tasks`` loads them; a
    name that is not one of this package's task folders is refused before anything is loaded."""
    from scifig_tasks.lmms_eval.docs import load_tasks, task_manager
    from scifig_tasks.lmms_eval.plugin import TASKS_DIR

    manager = task_manager(model)
    for name in names:
        entry = manager.task_index.get(name)
        yaml_path = entry.get("yaml_path") if isinstance(entry, Mapping) else None
        if not isinstance(yaml_path, str | os.PathLike) or TASKS_DIR not in Path(yaml_path).resolve().parents:
            where = "unknown to lmms-eval" if entry is None else f"defined by {yaml_path}"
            raise _refuse_unknown(name, path, where)
    return load_tasks(names, manager)


def _leaf_tasks(task_dict: Mapping[Any, Any]) -> dict[str, Any]:
    from lmms_eval.api.task import Task

    found: dict[str, Any] = {}
    for key, value in task_dict.items():
        if isinstance(value, Task):
            found[str(key)] = value
        elif isinstance(value, Mapping):
            found.update(_leaf_tasks(value))
    return found


def _roots(results: Mapping[str, Any]) -> list[str]:
    """The names the run was asked for: groups and tasks that are no other group's member."""
    subtasks = results.get("group_subtasks") or {}
    members = {name for children in subtasks.values() for name in children}
    roots = [name for name in subtasks if name not in members]
    if not roots:  # a results file without group_subtasks: every task is a root
        roots = [name for name in results["results"] if name not in (results.get("groups") or {})]
    return sorted(roots)


def _members(results: Mapping[str, Any], name: str) -> set[str]:
    subtasks = results.get("group_subtasks") or {}
    found = {name}
    for child in subtasks.get(name, []):
        found |= _members(results, child)
    return found


def _select(results: Mapping[str, Any], wanted: Sequence[str] | None, path: Path) -> list[str]:
    roots = _roots(results)
    if not wanted:
        return roots
    known = set(results["results"]) | set(results.get("groups") or {}) | set(results.get("group_subtasks") or {})
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise RescoreRefused(f"{path}: no task or group {', '.join(unknown)} in this run (it has: {', '.join(roots)})")
    return list(wanted)


def _samples_files(results_path: Path) -> dict[str, Path]:
    prefix = results_path.name[: -len(RESULTS_SUFFIX)]
    return {
        path.name[len(f"{prefix}_samples_") : -len(".jsonl")]: path
        for path in sorted(results_path.parent.glob(f"{prefix}_samples_*.jsonl"))
    }


def _refuse_unknown(name: str, where: Path, reason: str) -> RescoreRefused:
    return RescoreRefused(
        f"{where}: task {name!r} is not a scifig task ({reason}); scifig rescore re-scores this package's tasks only"
    )


def _data_variable(task: Any) -> str:
    from scifig_tasks.core.sources import SOURCES
    from scifig_tasks.lmms_eval.plugin import scifig_source

    source = SOURCES.get(scifig_source(task.config) or "")
    return source.env_var if source is not None else "the task's data source"


def _document_hash(doc: Mapping[str, Any]) -> str:
    from lmms_eval.utils import handle_non_serializable

    text = json.dumps(dict(doc), indent=2, default=handle_non_serializable, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _prompt(task: Any, doc: Mapping[str, Any], results: Mapping[str, Any]) -> str | None:
    """The prompt lmms-eval logged as ``input`` for ``doc`` (``None`` when the run applied a chat template: that
    needs the model's tokenizer)."""
    if results.get("chat_template"):
        return None
    context = task.fewshot_context(
        doc,
        0 if task.config.num_fewshot is None else task.config.num_fewshot,
        results.get("system_instruction"),
        False,
        bool(results.get("fewshot_as_multiturn")),
        None,
    )
    return context if isinstance(context, str) else None


def check_document(
    task_name: str, task: Any, doc: Mapping[str, Any], sample: Mapping[str, Any], results: Mapping[str, Any], path: Path
) -> None:
    """Refuse a logged sample whose document is not the one loaded now (hash, target or prompt differ)."""
    problem = None
    logged_hash = sample.get("doc_hash")
    if isinstance(logged_hash, str) and logged_hash != NULL_DOC_HASH and logged_hash != _document_hash(doc):
        problem = "its doc_hash differs from the document's"
    elif "target" in sample and str(sample["target"]) != str(task.doc_to_target(doc)):
        problem = f"the logged target {sample['target']!r} is not the document's {task.doc_to_target(doc)!r}"
    elif isinstance(sample.get("input"), str):
        prompt = _prompt(task, doc, results)
        if prompt is not None and prompt != sample["input"]:
            problem = "the logged prompt (input) differs from the one built from the document"
    if problem:
        raise RescoreRefused(
            f"{path}: task {task_name}, doc_id {sample.get('doc_id')}: the data changed since the run ({problem}); "
            f"set {_data_variable(task)} to the data the run used (or score again with the model)"
        )


def _outputs(sample: Mapping[str, Any]) -> list[Any]:
    """What ``process_results`` received: the one request's filtered response (a text, or a list of texts for tasks
    keeping several responses), as lmms-eval logs it once the single-request wrapper is flattened."""
    return [_restored(sample.get("filtered_resps"))]


def _restored(value: Any) -> Any:
    """lmms-eval writes every logged response with ``str()``: a missing output (``None``, e.g. a reply with null
    content) is logged as the text ``"None"`` and is read back as ``None``; a model answering the bare word "None"
    is scored the same way (no benchmark accepts it as an answer)."""
    if isinstance(value, list):
        return [_restored(item) for item in value]
    return None if value == "None" else value


def _metric_names(task: Any) -> list[str]:
    return list(task.aggregation())


def rescore_task(
    task_name: str,
    task: Any,
    samples: list[dict[str, Any]],
    results: Mapping[str, Any],
    path: Path,
    workers: int,
    progress: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score ``samples`` again with the task's ``process_results``; return the new metric dicts and samples."""
    docs = task.eval_docs_no_media
    for sample in samples:
        doc_id = sample.get("doc_id")
        if not isinstance(doc_id, int) or not 0 <= doc_id < len(docs):
            raise RescoreRefused(
                f"{path}: task {task_name}, doc_id {doc_id!r} is not a document of the data loaded now "
                f"({len(docs)} documents); set {_data_variable(task)} to the data the run used"
            )
        check_document(task_name, task, docs[doc_id], sample, results, path)

    def score(sample: dict[str, Any]) -> dict[str, Any]:
        with judge.task_scope(task_name):  # each scoring thread charges its judge calls to the task
            metrics = task.process_results(docs[sample["doc_id"]], _outputs(sample))
        progress.update(1)
        return metrics

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        scored = list(pool.map(score, samples))
    names = set(_metric_names(task))
    rescored = []
    for sample, metrics in zip(samples, scored, strict=True):
        kept = {key: value for key, value in sample.items() if key not in names}
        rescored.append({**kept, **metrics})
    return scored, rescored


def _aggregate(
    task_dict: Mapping[Any, Any], leaves: Mapping[str, Any], scored: Mapping[str, list[dict[str, Any]]], bootstrap: int
) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """lmms-eval's own aggregation of per-sample metrics into task and group results."""
    from lmms_eval.evaluator_utils import (
        TaskOutput,
        consolidate_group_results,
        consolidate_results,
        prepare_print_tasks,
    )

    outputs = []
    for name, task in leaves.items():
        output = TaskOutput.from_taskdict(name, task)
        for metrics in scored[name]:
            for metric, value in metrics.items():
                output.sample_metrics[(metric, "none")].append(value)
        with judge.task_scope(name):
            output.calculate_aggregate_metric(bootstrap_iters=bootstrap)
        output.calculate_clt_aggregate_metric()
        outputs.append(output)
    results, _samples, _configs, versions, _shots, _better = consolidate_results(outputs)
    results, versions, show_groups, *_ = consolidate_group_results(results, versions, task_dict)
    tasks, groups = prepare_print_tasks(task_dict, results)
    return dict(tasks), dict(groups), bool(show_groups)


def rescore_lmms(
    path: Path,
    out: Path,
    wanted: Sequence[str] | None,
    protocol: str | None,
    workers: int = WORKERS,
    allow_partial: bool = False,
    dry: bool = False,
) -> RescoredRun:
    """Score an lmms-eval results file's sample logs again; write the run in lmms-eval's format under ``out``. A
    damaged log is refused unless ``allow_partial`` (:func:`accept`). ``dry``: score within
    :func:`scifig_tasks.core.judge.dry_run` (no judge request sent) and write nothing: the run's ``judge_usage``
    counts the requests re-scoring would send (``would_send``) and the cache hits."""
    from tqdm import tqdm

    results = read_results(path)
    names = _select(results, wanted, path)
    selected = set().union(*(_members(results, name) for name in names))
    groups = {name for name in selected if (results.get("group_subtasks") or {}).get(name)}
    tasks = sorted(name for name in selected if name in results["results"] and name not in groups)
    files = _samples_files(path)
    missing = [name for name in tasks if name not in files]
    if missing:
        raise RescoreRefused(
            f"{path}: no sample logs for {', '.join(missing)} (the run was written without --log_samples): the model's "
            "outputs are not saved, so they cannot be scored again"
        )
    model = (results.get("config") or {}).get("model")
    task_dict = _task_dict(names, model, path)
    leaves = _leaf_tasks(task_dict)
    from scifig_tasks.lmms_eval.plugin import scifig_source

    for name in tasks:
        if name not in leaves:
            raise _refuse_unknown(name, files[name], "the task loaded now has no such subtask")
        if scifig_source(leaves[name].config) is None:
            raise _refuse_unknown(name, files[name], "its task config names no scifig data source")
    logged = {name: read_jsonl(files[name]) for name in tasks}
    checks = {name: check_log(name, logged[name], results, str(files[name])) for name in tasks}
    partial = accept([checks[name] for name in tasks], f"{path.name} counts", allow_partial)
    logged = {name: distinct((sample.get("doc_id"), sample) for sample in logged[name]) for name in tasks}
    bootstrap = int((results.get("config") or {}).get("bootstrap_iters", 100000))
    scored: dict[str, list[dict[str, Any]]] = {}
    rescored: dict[str, list[dict[str, Any]]] = {}
    with tqdm(total=sum(len(rows) for rows in logged.values()), desc="re-scoring", unit="sample") as progress:
        for name in tasks:
            progress.set_postfix_str(name)
            scored[name], rescored[name] = rescore_task(
                name, leaves[name], logged[name], results, files[name], workers, progress
            )
    new_tasks, new_groups, show_groups = _aggregate(task_dict, leaves, scored, bootstrap)
    subtasks = results.get("group_subtasks") or {}
    usage = judge.usage_report(
        drain=True, groups={g: _members(results, g) & set(tasks) for g in groups if g in subtasks}
    )
    if dry:
        return RescoredRun(path, [], out / path.parent.name, [], partial=partial, judge_usage=usage)

    model_dir = out / path.parent.name
    model_dir.mkdir(parents=True, exist_ok=True)
    target = model_dir / path.name
    if target.resolve() == path.resolve():
        raise RescoreRefused(f"{path}: --out would overwrite the run itself; choose another folder")
    document = _results_document(results, new_tasks, new_groups if show_groups else {}, selected, path, protocol)
    if usage is not None:
        document[provenance.KEY]["judge_usage"] = usage
    damaged = {name: checks[name].as_json() for name in tasks if not checks[name].complete}
    if damaged:
        document["scifig_rescore"]["partial"] = damaged
    changes = environment_changes(results.get(provenance.KEY), document[provenance.KEY])
    written = [target]
    from lmms_eval.utils import handle_non_serializable

    target.write_text(json.dumps(document, indent=2, default=handle_non_serializable, ensure_ascii=False))
    for name in tasks:
        sample_path = model_dir / files[name].name
        with sample_path.open("w", encoding="utf-8") as handle:
            for sample in rescored[name]:
                handle.write(json.dumps(sample, default=handle_non_serializable, ensure_ascii=False) + "\n")
        written.append(sample_path)

    old_entries = {**results["results"], **(results.get("groups") or {})}
    new_entries = {**new_tasks, **new_groups}
    diffs: dict[str, TaskDiff] = {}
    for name in tasks:
        diff = TaskDiff(name, len(logged[name]), expected=checks[name].expected, partial=_partial(checks[name]))
        diff.metrics = _metric_pairs(old_entries.get(name, {}), new_entries.get(name, {}))
        metric_names = _metric_names(leaves[name])
        for sample, old_sample in zip(rescored[name], logged[name], strict=True):
            before = {key: old_sample[key] for key in metric_names if key in old_sample}
            after = {key: sample[key] for key in metric_names if key in sample}
            entry = changed_sample(sample.get("doc_id"), before, after, sample.get("filtered_resps"))
            if entry is not None:
                diff.changed.append(entry)
        diffs[name] = diff
    for name in sorted(groups):
        members = sorted(_members(results, name) & set(tasks))
        expected = [diffs[m].expected for m in members]
        diff = TaskDiff(name, sum(diffs[m].samples for m in members), members=members)
        diff.expected = None if None in expected else sum(e for e in expected if e is not None)
        diff.partial = [m for m in members if diffs[m].partial] or None
        diff.metrics = _metric_pairs(old_entries.get(name, {}), new_entries.get(name, {}))
        diff.changed_count = sum(diffs[m].n_changed for m in members)
        diffs[name] = diff
    from scifig_tasks.core.judge import judge_failures

    failed = judge_failures({"results": new_tasks, "groups": new_groups})
    diffs_sorted = [diffs[name] for name in sorted(diffs)]
    return RescoredRun(path, written, model_dir, diffs_sorted, failed, changes, partial, judge_usage=usage)


def _results_document(
    results: Mapping[str, Any],
    tasks: Mapping[str, Any],
    groups: Mapping[str, Any],
    selected: set[str],
    path: Path,
    protocol: str | None,
) -> dict[str, Any]:
    """The original results file with the re-scored ``results`` / ``groups``, a ``scifig_rescore`` note (which keeps
    the original environment block as ``source_environment``) and this environment's block."""
    document = copy.deepcopy(dict(results))
    document["results"] = dict(tasks)
    if groups:
        document["groups"] = dict(groups)
    else:
        document.pop("groups", None)
    for key in ("configs", "versions", "n-shot", "higher_is_better", "n-samples", "task_hashes"):
        if isinstance(document.get(key), dict):
            document[key] = {name: value for name, value in document[key].items() if name in selected}
    if isinstance(document.get("group_subtasks"), dict):
        document["group_subtasks"] = {k: v for k, v in document["group_subtasks"].items() if k in selected}
    document["scifig_rescore"] = {
        "source": str(path),
        "rescored_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "protocol": protocol or "each task's own",
        "judge": settings.current().get(settings.JUDGE_MODEL) or settings.current().get(settings.JUDGE) or None,
        "source_environment": results.get(provenance.KEY),
    }
    document[provenance.KEY] = provenance.environment("lmms-eval")
    return document


# ---- VLMEvalKit runs -------------------------------------------------------------------------------------------------


def _vlmeval_names() -> list[str]:
    """Today's dataset names and the deprecated ``SciFig_*`` ones (files written by earlier releases)."""
    from scifig_tasks.vlmeval.names import DEPRECATED
    from scifig_tasks.vlmeval.tsv import SPECS

    return sorted({*SPECS, *DEPRECATED}, key=len, reverse=True)  # longest first: grab_llm_extract before grab


def prediction_files(work_dir: Path) -> list[tuple[Path, str, str]]:
    """``(file, model, dataset)`` for every VLMEvalKit prediction file of a scifig dataset under ``work_dir``."""
    names = _vlmeval_names()
    found = []
    for path in sorted(work_dir.rglob("*")):
        if not path.is_file() or path.suffix.lstrip(".") not in PREDICTION_SUFFIXES:
            continue
        stem = path.name[: -len(path.suffix)]
        for name in names:
            if stem.endswith(f"_{name}") and len(stem) > len(name) + 1:
                found.append((path, stem[: -len(name) - 1], name))
                break
    return found


def _dataset_class(name: str) -> type:
    from scifig_tasks.vlmeval import register
    from scifig_tasks.vlmeval.datasets import CLASSES
    from scifig_tasks.vlmeval.mmsci import MMSCI_CLASSES

    register()
    for cls in (*CLASSES, *MMSCI_CLASSES):
        if name in cls.supported_datasets():
            return cls
    raise RescoreRefused(f"{name}: not a scifig VLMEvalKit dataset")


def rescore_vlmeval(
    path: Path, model: str, dataset: str, out: Path, allow_partial: bool = False, dry: bool = False
) -> RescoredRun:
    """Score a VLMEvalKit prediction file again with its dataset class's ``evaluate``, into ``out/<model>/``. A file
    that lacks or repeats questions of the dataset is refused unless ``allow_partial`` (:func:`accept`): then the
    questions predicted are scored and the scores file records ``partial``. ``dry``: as :func:`rescore_lmms`
    (scored in a temporary folder that is removed)."""
    if dry:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="scifig-rescore-dry-") as scratch:
            run = rescore_vlmeval(path, model, dataset, Path(scratch), allow_partial)
        return RescoredRun(path, [], out / model, [], partial=run.partial, judge_usage=run.judge_usage)
    from scifig_tasks.vlmeval.datasets import read_predictions
    from scifig_tasks.vlmeval.names import DEPRECATED

    model_dir = out / model
    model_dir.mkdir(parents=True, exist_ok=True)
    copied = model_dir / path.name
    if copied.resolve() == path.resolve():
        raise RescoreRefused(f"{path}: --out would overwrite the run itself; choose another folder")
    data = _dataset_class(dataset)(dataset=DEPRECATED.get(dataset, dataset))  # an old file: no deprecation line
    replies = read_predictions(str(path))
    _check_vlmeval_rows(path, dataset, data.data)
    all_indices = [str(index) for index in data.data["index"]]
    check = check_ids(dataset, str(path), all_indices, _prediction_rows(path), key="index")
    partial = accept([check], f"of {dataset}", allow_partial)
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
    diff = TaskDiff(dataset, len(new_records), expected=check.expected, partial=_partial(check))
    diff.metrics = _metric_pairs((old_scores or {}).get("metrics", {}), new_scores.get("metrics", {}))
    old_by_index = dict(zip(all_indices, old_records, strict=False))  # the run's records follow the whole dataset
    indices = [str(index) for index in data.data["index"]]
    for index, new in zip(indices, new_records, strict=False):
        if index not in old_by_index:
            continue
        entry = changed_sample(index, {"breakdown": old_by_index[index]}, {"breakdown": new}, new.get("prediction"))
        if entry is not None:
            entry["index"] = entry.pop("doc_id")
            if entry["output"] is None:
                entry["output"] = replies.get(index)
            diff.changed.append(entry)
    written = [copied, Path(f"{new_stem}{SCORES_SUFFIX}"), Path(f"{new_stem}{RECORDS_SUFFIX}")]
    failed = _count_judge_failed(new_scores.get("breakdown"))
    changes = environment_changes((old_scores or {}).get(provenance.KEY), new_scores.get(provenance.KEY) or {})
    failures = {dataset: failed} if failed else {}
    return RescoredRun(path, written, model_dir, [diff], failures, changes, partial, judge_usage=usage)


def _prediction_rows(path: Path) -> list[tuple[str, dict[str, str]]]:
    """Every row of a VLMEvalKit prediction file as ``(index, row)``, repeated indices kept (the file read as
    :func:`scifig_tasks.vlmeval.datasets.read_predictions` reads it, which keeps one reply per index)."""
    import pandas as pd

    suffix = path.suffix.lstrip(".").lower()
    if suffix == "tsv":
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    elif suffix == "xlsx":
        table = pd.read_excel(path, dtype=str, keep_default_na=False)
    elif suffix == "json":
        table = pd.DataFrame(json.loads(path.read_text(encoding="utf-8")))
    else:
        table = pd.read_pickle(path)
    rows = table.to_dict("records") if "index" in table.columns else []
    return [(str(row["index"]), {str(key): str(value) for key, value in row.items()}) for row in rows]


def _check_vlmeval_rows(path: Path, dataset: str, data: Any) -> None:
    """Refuse a prediction file whose questions are not the dataset's now (answers or indices differ)."""
    import pandas as pd

    suffix = path.suffix.lstrip(".").lower()
    if suffix != "tsv":
        return
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "answer" not in table.columns or "answer" not in data.columns:
        return
    expected = {str(index): str(answer) for index, answer in zip(data["index"], data["answer"], strict=True)}
    for index, answer in zip(table["index"], table["answer"], strict=True):
        if str(index) not in expected or expected[str(index)] != str(answer):
            raise RescoreRefused(
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


# ---- command ---------------------------------------------------------------------------------------------------------


def find_runs(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str, str]]]:
    """lmms-eval results files and VLMEvalKit prediction files named by, or found under, ``paths``."""
    results: list[Path] = []
    predictions: list[tuple[Path, str, str]] = []
    for path in paths:
        if path.is_file() and path.name.endswith(RESULTS_SUFFIX):
            results.append(path)
        elif path.is_file():
            found = prediction_files(path.parent)
            match = [entry for entry in found if entry[0] == path]
            if not match:
                raise RescoreRefused(
                    f"{path}: neither an lmms-eval *{RESULTS_SUFFIX} nor a scifig VLMEvalKit prediction file"
                )
            predictions += match
        elif path.is_dir():
            results += sorted(path.rglob(f"*{RESULTS_SUFFIX}"))
            predictions += prediction_files(path)
        else:
            raise RescoreRefused(f"{path}: no such file or directory")
    if not results and not predictions:
        where = ", ".join(str(path) for path in paths)
        raise RescoreRefused(f"no lmms-eval *{RESULTS_SUFFIX} or VLMEvalKit prediction file under {where}")
    return results, predictions


def write_diffs(runs: list[RescoredRun]) -> list[Path]:
    """``<model dir>/rescore_diff.json`` per model folder: every task's metrics before/after and changed samples."""
    by_dir: dict[Path, dict[str, Any]] = {}
    for run in runs:
        entry = by_dir.setdefault(run.model_dir, {"sources": [], "tasks": {}})
        entry["sources"].append(str(run.source))
        for diff in run.diffs:
            entry["tasks"][diff.task] = diff.as_json()
    written = []
    for model_dir, entry in by_dir.items():
        path = model_dir / DIFF_FILE
        path.write_text(json.dumps(entry, indent=1, ensure_ascii=False, default=str))
        written.append(path)
    return written


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def _n(diff: TaskDiff) -> str:
    """The samples scored: ``n``, or ``n of N, partial`` for a damaged log (``?`` when the run did not record N)."""
    if not diff.partial:
        return str(diff.samples)
    return f"{diff.samples} of {'?' if diff.expected is None else diff.expected}, partial"


def summary(runs: list[RescoredRun]) -> str:
    """The printed table: per task and headline metric, old and new value, the samples scored (n, and "partial"
    for a damaged log) and the number of changed samples."""
    rows = ["| task | metric | old | new | n | changed samples |", "|---|---|---:|---:|---:|---:|"]
    for run in runs:
        for diff in run.diffs:
            counts = f"{_n(diff)} | {diff.n_changed} of {diff.samples}"
            for metric, pair in diff.metrics.items():
                rows.append(f"| {diff.task} | {metric} | {_number(pair['old'])} | {_number(pair['new'])} | {counts} |")
                counts = " | "
            if not diff.metrics:
                rows.append(f"| {diff.task} | - | - | - | {counts} |")
    return "\n".join(rows)


def rescore(
    paths: Sequence[Path],
    out: Path,
    protocol: str | None = None,
    tasks: Sequence[str] | None = None,
    allow_partial: bool = False,
    dry: bool = False,
) -> list[RescoredRun]:
    """Score every run under ``paths`` again into ``out``; return what was written and the differences. Damaged
    logs are refused unless ``allow_partial``. ``dry``: send no judge request and write nothing; each run's
    ``judge_usage`` says what re-scoring would send (:func:`dry_run_lines`)."""
    chosen = checked_protocol(protocol)
    results, predictions = find_runs(paths)
    with rescoring_as(chosen), judge.dry_run() if dry else _nothing():
        runs = [rescore_lmms(path, out, tasks, chosen, allow_partial=allow_partial, dry=dry) for path in results]
        for path, model, dataset in predictions:
            if tasks and dataset not in tasks:
                continue
            runs.append(rescore_vlmeval(path, model, dataset, out, allow_partial, dry=dry))
    if not dry:
        write_diffs(runs)
    return runs


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def dry_run_lines(runs: Sequence[RescoredRun]) -> list[str]:
    """What ``--dry-run`` prints: per run and task, the judge requests re-scoring would send and the judge calls the
    cache answers, then the total. A reply that leads to further requests (MMSci's FActScore: one rating per atomic
    fact) counts its follow-ups only when it is cached: the count is then a lower bound, and the line says so."""
    lines, send, cached = [], 0, 0
    followups = False
    for run in runs:
        usage = run.judge_usage or {}
        for task, row in (usage.get("tasks") or {}).items():
            would, hits = int(row.get("would_send", 0)), int(row.get("cache_hits", 0))
            send, cached = send + would, cached + hits
            followups = followups or ("caption" in task and would > 0)
            lines.append(f"{run.source}: {task}: {would:,} judge requests to send, {hits:,} answered by the cache")
    if not lines:
        lines.append("no judge request: re-scoring these runs asks the judge nothing (or no judge is configured)")
    bound = " at least" if followups else ""
    lines.append(
        f"scifig rescore --dry-run: re-scoring would send{bound} {send:,} judge requests (retries aside); the judge "
        f"cache answers {cached:,}; nothing was sent or written"
    )
    return lines


def _quiet_lmms_eval() -> None:
    """lmms-eval logs every task folder it indexes at DEBUG level: keep its warnings only."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def _command(args: argparse.Namespace) -> int:
    with masked_output(secrets_of(os.environ), args.out):  # the logs it copies may hold a key a server echoed
        return _rescore_command(args)


def _rescore_command(args: argparse.Namespace) -> int:
    _quiet_lmms_eval()
    tasks = [name for name in (args.tasks or "").split(",") if name] or None
    if args.out is None and not args.dry_run:
        print("scifig rescore: error: --out is required (except with --dry-run)", file=sys.stderr)
        return 2
    try:
        runs = rescore(args.runs, args.out or Path("."), args.protocol, tasks, args.allow_partial, dry=args.dry_run)
    except (RescoreRefused, DataError) as exc:
        for line in str(exc).splitlines():
            print(f"scifig rescore: REFUSED: {line}", file=sys.stderr)
        return 1
    if args.dry_run:
        print("\n".join(dry_run_lines(runs)))
        return 0
    print(summary(runs))
    for run in runs:
        if run.judge_usage is not None:
            total = run.judge_usage["total"]
            print(f"judge for {run.source}: {judge.usage_words(total, priced=run.judge_usage['priced'])}")
    for run in runs:
        print(f"{run.source} -> {run.model_dir}")
    for run in runs:
        if run.environment_changes:
            print(
                f"scifig rescore: WARNING: {run.source} was scored in another environment: "
                + "; ".join(run.environment_changes),
                file=sys.stderr,
            )
    print(f"differences: {', '.join(str(run.model_dir / DIFF_FILE) for run in runs[:1])}" if runs else "")
    partial = [line for run in runs for line in run.partial]
    for line in partial:
        print(f"scifig rescore: PARTIAL: {line}", file=sys.stderr)
    failed = {task: count for run in runs for task, count in run.judge_failed.items()}
    if failed:
        from scifig_tasks.core.judge import failure_summary

        print(failure_summary("scifig rescore", failed), file=sys.stderr)
    return 1 if failed or partial else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scifig rescore")
    _arguments(parser)
    return _command(parser.parse_args(argv))


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="lmms-eval output folder or results file, or VLMEvalKit work dir",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the re-scored run and rescore_diff.json (required)"
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="score every task as its plain-name (default) or _paper twin would; default: each task's own",
    )
    parser.add_argument("--tasks", default=None, help="comma-separated tasks or groups of the run (default: all)")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="score a damaged log (samples missing or repeated) from what is there; the tables say n and "
        '"partial", and the exit status is 1',
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="send no judge request and write nothing: say how many judge requests re-scoring would send and how "
        "many the judge cache already answers",
    )


DESCRIPTION = """\
Score a finished run again from its saved model outputs, without calling the model: after the scorer changed, or to
read a run under the other protocol (--protocol paper: as the _paper tasks score, e.g. SciFIBench sends every output
to the LLM judge). Reads lmms-eval runs written with --log_samples and VLMEvalKit work dirs; the data must be the data
the run used (same SCIFIG_<BENCH>_DATA or Hub dataset), and an LLM judge, when a protocol needs one, is the one set
by SCIFIG_JUDGE_*.

Writes the re-scored run in the framework's own format under OUT/<model>/ (readable by scifig report) and
OUT/<model>/rescore_diff.json: each task's headline metrics before and after and every sample whose verdict
changed. A samples file that lacks or repeats documents the results file counts is refused, naming the file and the
doc ids; --allow-partial scores what is there, marked partial (exit status 1)."""

EPILOG = """\
examples:
  scifig rescore runs --out rescored
  scifig rescore runs --out rescored-paper --protocol paper --tasks scifibench
  scifig rescore --dry-run runs --protocol paper   # judge requests it would send, nothing sent
  scifig report rescored --out report"""


def register(commands: Any) -> None:
    """Add ``scifig rescore`` to the ``scifig`` command line."""
    parser = commands.add_parser(
        "rescore",
        help="score saved model outputs again with the current scorer (no model)",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    _arguments(parser)
    parser.set_defaults(handler=_command)
