"""Every runtime patch of lmms-eval internals scifig makes, in one list (:data:`PATCHES`), each target and its
signature checked before it is applied; an lmms-eval whose targets changed ends the command in one line
(:class:`LmmsEvalVersionError`). Manual: docs/lmms-eval-integration.md, "Remaining patches"."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scifig_tasks.core.errors import CommandError

PINNED = "0.7.3"
"""The lmms-eval release the whole test suite runs on (the lock)."""
SIGNATURE_CHECKED = ("0.7", "0.7.1", "0.7.2")
"""Releases whose wheels were inspected statically (``pip download --no-deps``, the source read with ``ast``; the suite
was not run on them): the targets exist there with the expected parameters, unless a patch lists fewer."""
MARK = "_scifig_patch"
"""Attribute set on every replacement: the dotted path of the target it replaces."""
ORIGINAL = "_scifig_original"
"""Attribute set on every replacement: the lmms-eval object it replaced."""


class LmmsEvalVersionError(CommandError):
    """The installed lmms-eval lacks a target scifig patches, or has it with other parameters; printed in one line
    by the command-line error boundary (exit status 1)."""

    def __init__(self, what: str) -> None:
        super().__init__(what, status=1)


@dataclass(frozen=True)
class Patch:
    """One runtime patch of an lmms-eval target."""

    target: str
    """Dotted path of the attribute that is replaced (module path, then attribute names)."""
    signatures: Mapping[str, tuple[str, ...]]
    """Expected leading parameter names: of the target itself (key ``""``) or of its methods (a class target);
    further parameters are allowed when they have defaults (or are ``*args`` / ``**kwargs``)."""
    does: str
    why: str
    """Why lmms-eval has no public mechanism for it."""
    make: str = ""
    """``module:function`` building the replacement from the original (``install`` patches); ``run`` patches get
    theirs from the caller of :func:`during_run`."""
    scope: Literal["install", "run"] = "install"
    aliases: tuple[str, ...] = ()
    """Modules that import the target by value (``from X import name``): when already imported and still holding
    the original, their name is rebound too."""
    verified: tuple[str, ...] = (PINNED,)
    """lmms-eval releases the whole test suite ran on with this patch."""
    signature_checked: tuple[str, ...] = SIGNATURE_CHECKED
    """Further releases whose source has the target with the expected parameters (read statically, not run)."""

    @property
    def versions(self) -> str:
        """``0.7.3 (signatures also checked on 0.7, 0.7.1, 0.7.2)``."""
        checked = f" (signatures also checked on {', '.join(self.signature_checked)})" if self.signature_checked else ""
        return ", ".join(self.verified) + checked

    @property
    def owner(self) -> str:
        return self.target.rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        return self.target.rsplit(".", 1)[1]


PATCHES: tuple[Patch, ...] = (
    Patch(
        "lmms_eval.tasks.TaskManager.initialize_tasks",
        {"": ("self", "include_path", "include_defaults")},
        "appends scifig's task folder to every TaskManager's search path (after --include_path folders) and warns "
        "once when a task of another folder replaces one of scifig's",
        "lmms-eval 0.7 finds tasks only in its own folder and --include_path: no entry point for task folders "
        "(LMMS_EVAL_PLUGINS is read after the CLI's TaskManager is built); see docs/upstream-task-entry-points.md",
        make="scifig_tasks.lmms_eval.plugin:wrap_initialize_tasks",
    ),
    Patch(
        "lmms_eval.tasks.TaskManager._get_task_and_group",
        {"": ("self", "task_dir")},
        "keeps each folder's task index (task, group and tag names -> type and YAML) on disk while the folder's YAMLs "
        "and the files they include are unchanged (scifig_tasks.core.registration_cache), so a process does not parse "
        "lmms-eval's few thousand task YAMLs again; while indexing, lmms_eval.utils.load_yaml_config is wrapped to "
        "note the files read and the manager's logger to note whether anything was logged (then nothing is kept)",
        "every TaskManager parses every YAML of its folders (seconds for lmms-eval's own); no index cache or option",
        make="scifig_tasks.lmms_eval.plugin:wrap_get_task_and_group",
        signature_checked=(),  # the 0.7, 0.7.1 and 0.7.2 wheels were not at hand when this patch was added
    ),
    Patch(
        "lmms_eval.tasks.TaskManager.match_tasks",
        {"": ("self", "task_list")},
        "stops the run in one line (exit 1) when a requested name is a task of a benchmark plugin left out at "
        "registration (scifig_tasks.core.registry: its description or task folder is broken), naming the package, "
        "the part and the fix",
        "lmms-eval says only 'Tasks not found' for such a name, logs it and exits 0",
        make="scifig_tasks.lmms_eval.plugin:wrap_match_tasks",
    ),
    Patch(
        "lmms_eval.api.task.ConfigurableTask.download",
        {"": ("self", "dataset_kwargs")},
        "loads the data of tasks whose metadata names a scifig_source through scifig_tasks.core.data.load_benchmark "
        "(SCIFIG_<BENCH>_DATA or the Hub, validated before any model call, images kept as bytes); notes every task "
        "built, whose replies scifig eval counts for failed model requests",
        "a task YAML can only name a datasets.load_dataset path or load_from_disk; no custom loader hook, and "
        "datasets 4+ runs no loading scripts",
        make="scifig_tasks.lmms_eval.plugin:wrap_download",
    ),
    Patch(
        "lmms_eval.utils.make_table",
        {"": ("result_dict", "column")},
        "leaves scifig's nested breakdown metrics out of the printed tables (they stay in the results JSON)",
        "lmms-eval prints every metric value; no per-metric display option",
        make="scifig_tasks.lmms_eval.table:wrap_make_table",
        aliases=("lmms_eval.__main__",),
    ),
    Patch(
        "lmms_eval.loggers.evaluation_tracker.EvaluationTracker.save_results_aggregated",
        {"": ("self", "results", "samples", "datetime_str")},
        "adds the scifig environment block (versions, data origin, judge usage) to the *_results.json",
        "no hook to add entries to the results file before it is written",
        make="scifig_tasks.lmms_eval.environment:wrap_save_results_aggregated",
    ),
    Patch(
        "lmms_eval.api.task.ConfigurableTask.process_results",
        {"": ("self", "doc", "results")},
        "charges the judge calls made while scoring a document to its task, and scores a scifig task's document "
        "without lmms-eval's tenacity retry (its judge client retries on its own; an error is said as itself)",
        "process_results hooks are called without the task's name; no per-task context; the retry (5 tries, 2 s "
        "apart, then RetryError hiding the error) is a decorator of the method, with no option",
        make="scifig_tasks.lmms_eval.environment:wrap_process_results",
    ),
    Patch(
        "lmms_eval.evaluator_utils.TaskOutput.calculate_aggregate_metric",
        {"": ("self", "bootstrap_iters")},
        "charges the judge calls made by aggregation (breakdowns, FActScore, G-Eval) to their task",
        "aggregation functions are called without the task's name; no per-task context",
        make="scifig_tasks.lmms_eval.environment:wrap_calculate_aggregate_metric",
    ),
    Patch(
        "lmms_eval.api.metrics.stderr_for_metric",
        {"": ("metric", "bootstrap_iters")},
        "answers without importing the amber_g and coco_cap_chair task modules (nltk, scipy.stats: 1-2 s of CPU per "
        "run) when the metric is none of their functions, with the same result "
        "(scifig_tasks.lmms_eval.deferred_imports.wrap_stderr_for_metric)",
        "the function imports both modules on every call, for any metric, to extend its list of bootstrapped "
        "functions; no option to leave them out",
        make="scifig_tasks.lmms_eval.deferred_imports:wrap_stderr_for_metric",
        aliases=("lmms_eval.evaluator_utils",),
        signature_checked=(),  # the 0.7, 0.7.1 and 0.7.2 wheels were not at hand when this patch was added
    ),
    Patch(
        "lmms_eval.api.task.ConfigurableTask.build_all_requests",
        {"": ("self",)},
        "says the most judge requests the run can send once every task's requests are built",
        "no hook between building the requests and running the model",
        make="scifig_tasks.lmms_eval.environment:wrap_build_all_requests",
    ),
    Patch(
        "lmms_eval.evaluator_utils.get_task_list",
        {"": ("task_dict",)},
        "notes the tasks of the run, so that the judge-bound line is said after the last one is built, and refuses "
        "them before any request is built when one cannot be scored without the judge and none is configured",
        "same as build_all_requests",
        make="scifig_tasks.lmms_eval.environment:wrap_get_task_list",
        aliases=("lmms_eval.evaluator",),
    ),
    Patch(
        "lmms_eval.__main__.cli_evaluate_single",
        {"": ("args",)},
        "during scifig eval: records each configuration's exception or results, so that scifig eval exits 1 "
        "naming the error (lmms-eval's CLI logs it and exits 0); without scifig --debug the exception ends the "
        "configuration there (no results, as lmms-eval ends it), so that lmms-eval prints no traceback and no "
        "--verbosity=DEBUG advice before scifig's one line",
        "cli_evaluate catches every exception of a run (re-raised only under --verbosity DEBUG), prints its "
        "traceback and returns None; the results files hold no failure and none is written without --output_path",
        scope="run",
    ),
    Patch(
        "lmms_eval.__main__.EvaluationTracker",
        {
            "save_results_aggregated": ("self", "results", "samples", "datetime_str"),
            "save_results_samples": ("self", "task_name", "samples"),
        },
        "during scifig eval: a subclass whose results and samples files are written into a staging folder, checked "
        "and renamed into place, and whose file that could not be written whole ends the run naming it "
        "(scifig_tasks.lmms_eval.output_folder; relies on the attributes output_path, date_id and "
        "general_config_tracker.model_name_sanitized)",
        "EvaluationTracker catches a failed write (a full disk), logs it and goes on, leaving a 0-byte or cut file "
        "and exit status 0; the CLI builds the tracker itself and the writing has no hook",
        scope="run",
        signature_checked=(),  # the 0.7, 0.7.1 and 0.7.2 wheels were not at hand when this patch was added
    ),
    Patch(
        "lmms_eval.evaluator.ResponseCache",
        {
            "create": ("cache_root",),
            "execute": ("self", "lm", "reqtype", "requests"),
            "_store": ("self", "cache_key", "request_type", "task_name", "doc_id", "idx", "gen_kwargs", "response"),
            "_log_to_audit": ("self", "request_type", "task_name", "doc_id", "idx", "gen_kwargs", "response"),
        },
        "during scifig eval with --use_cache: scifig's response cache (replies stored as they arrive, keys holding "
        "what the model is sent, no failures stored, secrets masked) and one progress bar for the model phase: "
        "during each call it makes to the model, the tqdm class the model's module imported draws nothing "
        "(scifig_tasks.lmms_eval.response_cache.model_bars_silenced)",
        "simple_evaluate builds ResponseCache.create(...) itself; no option to give another cache class; a model "
        "draws a bar per generate_until call (one per chunk the cache sends) and has no option to turn it off",
        scope="run",
        signature_checked=("0.7.1", "0.7.2"),  # 0.7 has no ResponseCache.create
    ),
)
"""Every runtime patch of lmms-eval, in the order :func:`install` applies them."""

BY_TARGET: dict[str, Patch] = {patch.target: patch for patch in PATCHES}

_lock = threading.RLock()
_installing = threading.local()


def object_at(dotted: str) -> Any:
    """The object at ``dotted``: the longest importable module prefix, then attributes. Raises ``LookupError``."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(value, part):
                raise LookupError(dotted)
            value = getattr(value, part)
        return value
    raise LookupError(dotted)


def original(value: Any) -> Any:
    """The lmms-eval object behind a scifig replacement (``value`` itself when it is not one)."""
    return value.__dict__.get(ORIGINAL, value) if hasattr(value, "__dict__") else value


def _params(function: Any) -> list[inspect.Parameter]:
    return list(inspect.signature(function).parameters.values())


def _render(name: str, parameters: list[inspect.Parameter] | tuple[str, ...]) -> str:
    def word(parameter: inspect.Parameter | str) -> str:
        if isinstance(parameter, str):
            return parameter
        prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        return prefix + parameter.name

    return f"{name}({', '.join(word(parameter) for parameter in parameters)})"


def compatible(parameters: list[inspect.Parameter], expected: tuple[str, ...]) -> bool:
    """The leading parameters are ``expected``; any others have defaults or are ``*args`` / ``**kwargs``."""
    if [parameter.name for parameter in parameters[: len(expected)]] != list(expected):
        return False
    optional = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return all(p.kind in optional or p.default is not inspect.Parameter.empty for p in parameters[len(expected) :])


def installed_lmms_eval() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lmms-eval")
    except PackageNotFoundError:
        return "unknown"


def problem(patch: Patch) -> str | None:
    """What is wrong with ``patch``'s target in the installed lmms-eval (``None``: present as expected)."""
    try:
        target = original(object_at(patch.target))
    except LookupError:
        return f"has no {patch.target}"
    for method, expected in patch.signatures.items():
        function = getattr(target, method, None) if method else target
        shown = f"{patch.target}.{method}" if method else patch.target
        if function is None:
            return f"has no {shown}"
        try:
            parameters = _params(function)
        except (TypeError, ValueError):
            return f"has {shown} without a readable signature"
        if not compatible(parameters, expected):
            return f"has {_render(shown.rsplit('.', 1)[1], parameters)}"
    return None


def check(patches: tuple[Patch, ...] = PATCHES) -> None:
    """Raise :class:`LmmsEvalVersionError` (one line) for the first of ``patches`` whose target is missing or has
    other parameters than expected."""
    from scifig_tasks.core.provenance import scifig_version

    for patch in patches:
        found = problem(patch)
        if found is None:
            continue
        expected = "; ".join(
            _render(f"{patch.target}.{method}" if method else patch.target, params)
            for method, params in patch.signatures.items()
        )
        raise LmmsEvalVersionError(
            f"scifig {scifig_version()} patches {expected}, verified on lmms-eval {patch.versions}; "
            f"the installed lmms-eval {installed_lmms_eval()} {found}: install the pinned one with "
            f"`pip install 'lmms-eval=={PINNED}'` or see docs/lmms-eval-integration.md"
        )


def _factory(patch: Patch) -> Callable[[Any], Any]:
    module, _, function = patch.make.partition(":")
    return getattr(importlib.import_module(module), function)


def _apply(patch: Patch, make: Callable[[Any], Any]) -> Any:
    """Replace ``patch``'s target by ``make(original)``, marked; rebind the aliases; return the original."""
    import sys

    owner = object_at(patch.owner)
    current = getattr(owner, patch.name)
    if (current.__dict__.get(MARK) if hasattr(current, "__dict__") else None) == patch.target:
        return original(current)
    replacement = make(current)
    setattr(replacement, MARK, patch.target)
    setattr(replacement, ORIGINAL, current)
    setattr(owner, patch.name, replacement)
    for alias in patch.aliases:
        module = sys.modules.get(alias)
        if module is not None and getattr(module, patch.name, None) is current:
            setattr(module, patch.name, replacement)
    return current


def _restore(patch: Patch, saved: Any) -> None:
    import sys

    owner = object_at(patch.owner)
    replacement = getattr(owner, patch.name)
    setattr(owner, patch.name, saved)
    for alias in patch.aliases:
        module = sys.modules.get(alias)
        if module is not None and getattr(module, patch.name, None) is replacement:
            setattr(module, patch.name, saved)


def install() -> None:
    """Check, then apply, every ``install`` patch; idempotent. A call made while one is under way (lmms-eval loading
    the plugin's entry point during this function's own imports) returns at once."""
    if getattr(_installing, "active", False):
        return
    with _lock:
        _installing.active = True
        try:
            patches = tuple(patch for patch in PATCHES if patch.scope == "install")
            check(patches)
            for patch in patches:
                _apply(patch, _factory(patch))
        finally:
            _installing.active = False


def applied() -> dict[str, bool]:
    """Each patch's target -> whether the replacement is in place now."""
    found = {}
    for patch in PATCHES:
        try:
            value = object_at(patch.target)
        except LookupError:
            found[patch.target] = False
            continue
        found[patch.target] = (value.__dict__.get(MARK) if hasattr(value, "__dict__") else None) == patch.target
    return found


@contextlib.contextmanager
def during_run(replacements: Mapping[str, Callable[[Any], Any]]) -> Iterator[None]:
    """Within the block, the ``run`` patches named in ``replacements`` (target -> ``make(original)``) are in place;
    they are checked first and restored afterwards."""
    patches = tuple(BY_TARGET[target] for target in replacements)
    if any(patch.scope != "run" for patch in patches):
        raise ValueError("during_run applies run patches only")
    check(patches)
    with _lock:
        saved = [(patch, _apply(patch, replacements[patch.target])) for patch in patches]
    try:
        yield
    finally:
        with _lock:
            for patch, value in reversed(saved):
                _restore(patch, value)
