"""The ``scifig_environment`` block of lmms-eval's ``*_results.json``, the judge's accounting per task, the bound on
judge requests said before the model runs and the refusal of tasks that need a judge when none is configured.

Manual: docs/lmms-eval-integration.md, "The environment block in results files" and "Judge accounting and judge
checks".
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from functools import partial, wraps
from typing import Any

from scifig_tasks.core import judge, registry, settings
from scifig_tasks.core.judged_hooks import HookJudging, declared_judging, requires_judge
from scifig_tasks.core.provenance import DATA, KEY, environment, loaded_data

USAGE_KEY = "judge_usage"
"""The environment block's entry holding the judge accounting."""


def has_scifig_task(results: dict[str, Any]) -> bool:
    configs = results.get("configs")
    if not isinstance(configs, dict):
        return False
    return any(
        isinstance(config, dict) and isinstance(config.get("metadata"), dict) and "scifig_source" in config["metadata"]
        for config in configs.values()
    )


def data_origins(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Which data each scifig source of the run's tasks read: what loading noted (origin, revision, rows), else
    (a source this process did not load) where its setting points: local files or the Hub dataset."""
    found: dict[str, dict[str, Any]] = {}
    for config in (results.get("configs") or {}).values():
        name = (config.get("metadata") or {}).get("scifig_source") if isinstance(config, dict) else None
        if name in registry.sources() and name not in found:
            local = registry.sources()[name].local_path(settings.current())
            found[name] = {"local": True} if local is not None else {"hub": config.get("dataset_path")}
    loaded = loaded_data(found)
    return {name: loaded.get(name, where) for name, where in found.items()}


def scoring_hook(config: Any) -> Any:
    """A task config's ``process_results``; a scifig hook that reads its task's options gets them bound, once, read
    from the task's YAML as VLMEvalKit reads them (:func:`scifig_tasks.core.task_options.for_task`). A task of
    another name whose YAML includes a scifig one (not a registered task) gets the options lmms-eval read for it."""
    from scifig_tasks.core import task_files
    from scifig_tasks.core.task_options import for_task, reads_options

    hook = getattr(config, "process_results", None)
    if reads_options(hook) and not isinstance(hook, partial):
        registered = task_files.scifig_tasks()
        name = getattr(config, "task", None)
        kwargs = getattr(config, "lmms_eval_specific_kwargs", None) or {}
        options = task_files.options(name) if name in registered else dict(kwargs.get("default") or {})
        config.process_results = hook = for_task(hook, options)
    return hook


def _judging(task: Any) -> HookJudging | None:
    """How a task's ``process_results`` hook declares it may ask the judge (None: it never does)."""
    return declared_judging(scoring_hook(getattr(task, "config", None)))


def _requires_judge(task: Any) -> bool:
    """Whether a built task's ``process_results`` hook declares it cannot score without the judge."""
    return requires_judge(scoring_hook(getattr(task, "config", None)))


def _outputs(task: Any) -> int:
    """The model outputs the task's built requests will produce (every repeat counted)."""
    return sum(max(1, int(getattr(instance, "repeats", 1) or 1)) for instance in getattr(task, "instances", []))


def judge_bound(tasks: Mapping[str, Any], share: float) -> tuple[int, list[str], list[str]]:
    """The most judge requests the built ``tasks`` can send (retries aside): per output of a task that may judge it,
    one; the per-task words (``grab_properties_llm_extract 40``, ``scifibench_cs_figure2caption 50 (audit up to
    20)``) and the tasks judged at aggregation, whose count is not known in advance."""
    total, words, later = 0, [], []
    for name, task in tasks.items():
        use = _judging(task)
        if use is None:
            continue
        if use == "at_aggregation":
            later.append(name)
            continue
        outputs = _outputs(task)
        total += outputs
        audit = min(outputs, max(math.ceil(share * outputs), 20)) if use == "audited" and share > 0 else 0
        words.append(f"{name} {outputs:,}" + (f" (audit up to {audit:,})" if audit else ""))
    return total, words, later


def bound_line(tasks: Mapping[str, Any]) -> str | None:
    """The line said before a judged run starts (None without a judge or without a task that may ask it)."""
    if judge.configured_concurrency() is None:
        return None
    share = settings.current().get(settings.JUDGE_AUDIT)
    total, words, later = judge_bound(tasks, share)
    if not words and not later:
        return None
    line = f"scifig: this run sends the LLM judge at most {total:,} requests (retries aside, before its cache answers"
    line += f" any): {', '.join(words)}" if words else " any)"
    if later:
        line += (
            f"; and for {', '.join(later)} two per judged caption plus one per atomic fact (not known in advance; "
            "SCIFIG_MMSCI_JUDGED_SUBSET bounds the captions)"
        )
    return line


class _Pending:
    """The tasks of one ``evaluate`` call whose requests are not built yet; the bound line is said after the last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tasks: dict[int, tuple[str, Any]] = {}
        self.built: dict[str, Any] = {}

    def expect(self, outputs: Iterable[Any]) -> None:
        with self.lock:
            self.tasks = {id(output.task): (output.task_name, output.task) for output in outputs}
            self.built = {}

    def built_one(self, task: Any) -> dict[str, Any] | None:
        """Note ``task`` built; every expected task once they all are."""
        with self.lock:
            found = self.tasks.pop(id(task), None)
            if found is None:
                return None
            self.built[found[0]] = found[1]
            if self.tasks:
                return None
            built, self.built = self.built, {}
            return built


_pending = _Pending()


def _say(line: str) -> None:
    from loguru import logger  # lmms-eval's logger: the line shows where its own INFO lines do

    logger.info(line)


def _groups(results: Mapping[str, Any]) -> dict[str, list[str]]:
    """Group -> its leaf tasks, from the results' ``group_subtasks``."""
    subtasks = results.get("group_subtasks")
    if not isinstance(subtasks, dict):
        return {}

    def leaves(name: str, seen: frozenset[str]) -> list[str]:
        members = subtasks.get(name) or []
        if not members:
            return [name]
        return [leaf for member in members if member not in seen for leaf in leaves(member, seen | {member})]

    return {name: leaves(name, frozenset({name})) for name, members in subtasks.items() if members}


# The replacements below are applied by :mod:`scifig_tasks.lmms_eval.patches` (which lists their targets and checks
# their signatures); each takes lmms-eval's original and returns the wrapped one.


def wrap_save_results_aggregated(save: Any) -> Any:
    """``EvaluationTracker.save_results_aggregated`` that adds the environment block and the judge accounting."""

    @wraps(save)
    def save_with_environment(self: Any, results: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if isinstance(results, dict) and has_scifig_task(results):
            results[KEY] = {**environment("lmms-eval"), DATA: data_origins(results)}
            usage = judge.usage_report(drain=True, groups=_groups(results))
            if usage is not None:
                results[KEY][USAGE_KEY] = usage
        return save(self, results, *args, **kwargs)

    return save_with_environment


def wrap_process_results(process_results: Any) -> Any:
    """``ConfigurableTask.process_results`` charging the judge calls it makes to the task; a scifig task's is called
    without lmms-eval's tenacity retry (docs/lmms-eval-integration.md, "Judge accounting and judge checks")."""
    from scifig_tasks.lmms_eval.plugin import scifig_source

    unretried = process_results.__wrapped__ if hasattr(process_results, "retry_with") else process_results

    @wraps(process_results)
    def process_results_charged(self: Any, *args: Any, **kwargs: Any) -> Any:
        ours = scifig_source(self.config) is not None
        score = unretried if ours else process_results
        hook = scoring_hook(self.config) if ours else None
        with judge.task_scope(getattr(self.config, "task", None), *([hook] if ours else [])):
            return score(self, *args, **kwargs)

    return process_results_charged


def wrap_calculate_aggregate_metric(aggregate: Any) -> Any:
    """``TaskOutput.calculate_aggregate_metric`` charging the judge calls of aggregation to the task."""

    from scifig_tasks.lmms_eval.plugin import scifig_source

    @wraps(aggregate)
    def aggregate_charged(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = getattr(getattr(self, "task", None), "config", None)
        checked = [scoring_hook(config)] if config is not None and scifig_source(config) is not None else []
        with judge.task_scope(self.task_name, *checked):
            return aggregate(self, *args, **kwargs)

    return aggregate_charged


def wrap_build_all_requests(build: Any) -> Any:
    """``ConfigurableTask.build_all_requests`` that says the judge bound once the run's last task is built."""

    @wraps(build)
    def build_then_bound(self: Any, *args: Any, **kwargs: Any) -> Any:
        built = build(self, *args, **kwargs)
        tasks = _pending.built_one(self)
        if tasks:
            line = bound_line(tasks)
            if line is not None:
                _say(line)
        return built

    return build_then_bound


def _bind_options(built: Iterable[Any]) -> None:
    """Each scifig task's scoring hook gets the options its YAML declares (:func:`scifig_tasks.core.task_options.
    for_task`, read as VLMEvalKit reads them), and one bound otherwise is refused (:func:`scifig_tasks.core.
    task_options.refuse_disagreement`), before any request is built."""
    from scifig_tasks.core import task_files
    from scifig_tasks.core.task_options import refuse_disagreement
    from scifig_tasks.lmms_eval.plugin import scifig_source

    ours = [output for output in built if scifig_source(getattr(output.task, "config", None)) is not None]
    if not ours:
        return
    declared = task_files.scifig_tasks()
    for output in ours:
        info = declared.get(output.task_name)
        if info is not None and not info.is_group:
            refuse_disagreement(output.task_name, output.task.config.process_results, info.options)
            scoring_hook(output.task.config)


def wrap_get_task_list(get_task_list: Any) -> Any:
    """``evaluator_utils.get_task_list`` noting the run's tasks (for the judge bound), and refusing them before any
    request is built when one cannot be scored without the judge and none is configured
    (:class:`~scifig_tasks.core.judged_hooks.JudgeRequired`); the models their scoring fetches at run time are checked
    then too (:mod:`scifig_tasks.core.fetched_models`)."""

    @wraps(get_task_list)
    def task_list_expected(task_dict: dict[Any, Any]) -> Any:
        outputs = get_task_list(task_dict)
        built = [output for output in outputs if getattr(output, "task", None) is not None]
        _bind_options(built)
        needing = [output.task_name for output in built if _requires_judge(output.task)]
        if needing:
            from scifig_tasks.core.judge.required import judge_refusal

            refused = judge_refusal(needing)
            if refused is not None:
                raise refused
        if built:
            from loguru import logger  # lmms-eval's logger: the lines show among its own, before the requests

            from scifig_tasks.core.fetched_models import check_lines

            for line in check_lines(scoring_hook(getattr(output.task, "config", None)) for output in built):
                logger.warning(f"scifig: {line}")
        _pending.expect(built)
        return outputs

    return task_list_expected
