"""``scifig rescore`` of lmms-eval runs: read a finished run's results file and sample logs, score every logged output
again with the task's own code and write the re-scored run in lmms-eval's format (the diff, the table and the rule for
damaged logs: :mod:`scifig_tasks.rescore_report`).

Manual: docs/reports.md, "Re-scoring an lmms-eval run".
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scifig_tasks.core import judge, provenance, settings
from scifig_tasks.core.run_files import RESULTS_SUFFIX, read_jsonl, read_results
from scifig_tasks.core.sample_logs import check_log, distinct
from scifig_tasks.rescore_report import (
    RescoredRun,
    RescoreRefused,
    TaskDiff,
    accept,
    changed_sample,
    data_changes,
    environment_changes,
    metric_pairs,
    partial_ids,
)

NULL_DOC_HASH = hashlib.sha256(b"null").hexdigest()
"""lmms-eval 0.7.3 hashes ``Instance.doc``, which it never sets: every sample's ``doc_hash`` is this value."""
WORKERS = 4
"""Samples scored at once (lmms-eval's ``process_docs_parallel`` default); the judge client bounds its own calls."""


def _task_dict(names: Sequence[str], model: str | None, path: Path) -> dict[Any, Any]:
    """lmms-eval's task dictionary for ``names`` (tasks and groups), loaded as ``lmms-eval --tasks`` loads them; a
    name that is not one of this package's task folders is refused before anything is loaded."""
    from scifig_tasks.lmms_eval import in_task_folder
    from scifig_tasks.lmms_eval.docs import load_tasks, task_manager

    manager = task_manager(model)
    for name in names:
        entry = manager.task_index.get(name)
        yaml_path = entry.get("yaml_path") if isinstance(entry, Mapping) else None
        if not isinstance(yaml_path, str | os.PathLike) or not in_task_folder(yaml_path):
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


def selected_tasks(path: Path, wanted: Sequence[str] | None) -> list[str]:
    """The tasks of the results file ``path`` that re-scoring ``wanted`` (None: all) scores, groups left out."""
    results = read_results(path)
    selected = set().union(*(_members(results, name) for name in _select(results, wanted, path)))
    groups = results.get("group_subtasks") or {}
    return sorted(name for name in selected if name in results["results"] and not groups.get(name))


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
    from scifig_tasks.core import registry
    from scifig_tasks.lmms_eval.plugin import scifig_source

    source = registry.sources().get(scifig_source(task.config) or "")
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
    damaged log is refused unless ``allow_partial`` (:func:`scifig_tasks.rescore_report.accept`). ``dry``: score within
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
    # the names and the logs are checked before lmms-eval (and torch) is loaded: a refusal comes in a second
    from scifig_tasks.core import task_files

    ours = task_files.scifig_tasks()
    for name in names:
        if name not in ours:
            raise _refuse_unknown(name, path, "no registered benchmark's task folder defines it")
    logged = {name: read_jsonl(files[name]) for name in tasks}
    checks = {name: check_log(name, logged[name], results, str(files[name])) for name in tasks}
    partial = accept([checks[name] for name in tasks], f"{path.name} counts", allow_partial)
    model = (results.get("config") or {}).get("model")
    task_dict = _task_dict(names, model, path)
    leaves = _leaf_tasks(task_dict)
    from scifig_tasks.lmms_eval.plugin import scifig_source

    for name in tasks:
        if name not in leaves:
            raise _refuse_unknown(name, files[name], "the task loaded now has no such subtask")
        if scifig_source(leaves[name].config) is None:
            raise _refuse_unknown(name, files[name], "its task config names no scifig data source")
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
        diff = TaskDiff(name, len(logged[name]), expected=checks[name].expected, partial=partial_ids(checks[name]))
        diff.metrics = metric_pairs(old_entries.get(name, {}), new_entries.get(name, {}))
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
        diff.metrics = metric_pairs(old_entries.get(name, {}), new_entries.get(name, {}))
        diff.count_members([diffs[m] for m in members])
        diffs[name] = diff
    from scifig_tasks.core.judge import judge_failures

    failed = judge_failures({"results": new_tasks, "groups": new_groups})
    diffs_sorted = [diffs[name] for name in sorted(diffs)]
    data = data_changes(results.get(provenance.KEY), document[provenance.KEY])
    return RescoredRun(
        path, written, model_dir, diffs_sorted, failed, changes, partial, judge_usage=usage, data_changes=data
    )


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
