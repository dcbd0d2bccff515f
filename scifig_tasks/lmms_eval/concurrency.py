"""Judged lmms-eval runs keep the LLM judge's configured number of requests in flight.

Why. Every output that goes to the judge -- all of them in GRAB's ``grab_llm_extract`` (the paper's LLM-extraction
ablation), the answers the rules refuse in SciFIBench, MMSci and GRAB's multiple choice, Plot Twist's
reformatting -- is judged from the task's ``process_results``, one blocking call per document. lmms-eval runs
``process_results`` in ``process_docs_parallel`` threads (``--process_docs_parallel``, default 4), so no more than
that many judge requests are ever in flight, whatever the judge client allows (``SCIFIG_JUDGE_MAX_CONCURRENCY``,
default 8, :mod:`scifig_tasks.core.judge`). Measured with ``python -m tests.perf.bench_judge_throughput``
(200 judged outputs, 0.5 s per judge reply, 8 allowed in flight; ideal 12.5 s): 26.5 s with 4 threads (47% of
ideal, at most 4 in flight), 14.2 s (88%, 8 in flight) with this module.
(MMSci's FActScore and G-Eval are judged at aggregation time through ``JudgeClient.complete_many``, which already
uses the judge's own concurrency.)

Rule implemented. When a judge is configured (:func:`scifig_tasks.core.judge.configured_concurrency`),
``process_docs_parallel`` is raised to the judge's ``max_concurrency`` -- never lowered: a larger
``--process_docs_parallel`` is kept -- and one INFO line says so. Without a judge (or with ``SCIFIG_JUDGE=off``)
lmms-eval's value is used unchanged. The results JSON's ``config.process_docs_parallel`` records the number used.

How. :func:`install` wraps ``lmms_eval.evaluator.simple_evaluate`` (what the CLI, ``scifig eval`` and most scripts
call; the raised value is what it records) and ``lmms_eval.evaluator.evaluate`` (for callers that build their own
task dictionary); both look the argument up by name, so positional and keyword calls are served alike. The plugin
calls :func:`install` while ``lmms_eval.evaluator`` is itself being imported (lmms-eval loads the ``lmms_eval.models``
entry points, this package's among them, before it defines ``evaluate``). In that case the wrapping waits for the
import to finish: the import system binds a finished submodule on its package (``setattr(lmms_eval, "evaluator",
module)``), and a one-shot hook on the ``lmms_eval`` package's ``__setattr__`` wraps the module at that moment, before
any caller can reach ``simple_evaluate``; the hook then removes itself. Idempotent.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from scifig_tasks.core.judge import configured_concurrency

PARAMETER = "process_docs_parallel"
WRAPPED = ("simple_evaluate", "evaluate")
"""The functions of ``lmms_eval.evaluator`` that take ``process_docs_parallel``."""

_lock = threading.Lock()


def docs_parallel(requested: int, judge_concurrency: int | None) -> int:
    """The ``process_results`` threads to use: ``requested``, raised to ``judge_concurrency`` when a judge is set."""
    return requested if judge_concurrency is None else max(requested, judge_concurrency)


def raising(function: Callable[..., Any], where: str) -> Callable[..., Any]:
    """``function`` (which takes ``process_docs_parallel``) with that argument raised by :func:`docs_parallel`."""
    parameters = inspect.signature(function).parameters
    index = list(parameters).index(PARAMETER)
    default = parameters[PARAMETER].default

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        positional = index < len(args)
        requested = int(args[index] if positional else kwargs.get(PARAMETER, default))
        judge = configured_concurrency()
        used = docs_parallel(requested, judge)
        if used != requested:
            from loguru import logger  # lmms-eval's logger: this line shows where its own INFO lines do

            logger.info(
                f"scifig: process_results runs in {used} threads ({PARAMETER} was {requested}) so that the LLM "
                f"judge's {judge} concurrent requests (SCIFIG_JUDGE_MAX_CONCURRENCY) can all be in flight; "
                f"a larger --{PARAMETER} is kept"
            )
            if positional:
                args = (*args[:index], used, *args[index + 1 :])
            else:
                kwargs[PARAMETER] = used
        return function(*args, **kwargs)

    wrapper._scifig_concurrency = where  # type: ignore[attr-defined]
    return wrapper


def wrap_evaluator(module: types.ModuleType) -> None:
    """Wrap ``simple_evaluate`` and ``evaluate`` of a fully imported ``lmms_eval.evaluator``; idempotent."""
    with _lock:
        for name in WRAPPED:
            function = getattr(module, name)
            if hasattr(function, "_scifig_concurrency"):
                continue
            if PARAMETER not in inspect.signature(function).parameters:  # an lmms-eval without the knob: nothing to do
                continue
            setattr(module, name, raising(function, f"{module.__name__}.{name}"))


def _imported(module: types.ModuleType | None) -> bool:
    return module is not None and all(callable(getattr(module, name, None)) for name in WRAPPED)


def _when_bound(package: types.ModuleType, child: str, callback: Callable[[types.ModuleType], None]) -> None:
    """Call ``callback(submodule)`` once, when the import system binds the finished submodule ``child`` on
    ``package``; then restore the package's own module type."""
    base = type(package)
    if getattr(base, "_scifig_waits_for", None) == child:
        return

    class BindingHook(base):  # type: ignore[misc,valid-type]
        _scifig_waits_for = child

        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if name == child and isinstance(value, types.ModuleType) and _imported(value):
                super().__setattr__("__class__", base)
                callback(value)

    package.__class__ = BindingHook


def install() -> None:
    """Make ``lmms_eval.evaluator`` raise ``process_docs_parallel`` to the judge's concurrency (see module doc)."""
    evaluator = sys.modules.get("lmms_eval.evaluator")
    if _imported(evaluator):
        wrap_evaluator(evaluator)  # type: ignore[arg-type]
        return
    import lmms_eval

    _when_bound(lmms_eval, "evaluator", wrap_evaluator)
