"""A task's scoring options, bound to the scoring hook its YAML names.

A task's options are written once, in its YAML (:mod:`scifig_tasks.core.task_files`). lmms-eval hands them to the
prompt hooks (``doc_to_text`` / ``doc_to_messages`` receive ``lmms_eval_specific_kwargs``), but ``process_results``
receives only the document and the outputs, and lmms-eval's YAML loader imports a hook by name with no arguments. So
the options a scorer needs reach it through the hook the YAML names: ``bind(score, protocol="paper")`` is ``score``
with those keyword arguments, a plain function lmms-eval (upstream too) imports as it is — no patch, no context
variable. :func:`bound` reads the values back, and the test of every registered task checks that each scoring hook is
bound to exactly the values its YAML declares; VLMEvalKit reads the YAML itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any


def bind(hook: Callable[..., Any], **options: Any) -> partial[Any]:
    """``hook`` with the task options ``options`` as keyword arguments."""
    return partial(hook, **options)


def bound(hook: Any) -> dict[str, Any]:
    """The options bound to a scoring hook by :func:`bind` (outermost binding wins), empty for a plain function."""
    options: dict[str, Any] = {}
    while isinstance(hook, partial):
        options = dict(hook.keywords) | options
        hook = hook.func
    return options


def disagreements(hook: Any, declared: Mapping[str, Any]) -> list[str]:
    """How a scoring hook's bound options differ from the options its task declares: a bound value the task declares
    otherwise or not at all, or a declared option the scorer takes as a keyword but is not bound to (it would score
    with its own default). Empty when they agree."""
    bound_options = bound(hook)
    found = [
        f"the hook is bound to {name}={value!r}, the task declares "
        + (f"{name}={declared[name]!r}" if name in declared else f"no {name}")
        for name, value in bound_options.items()
        if declared.get(name, _MISSING) != value
    ]
    scorer = hook
    while isinstance(scorer, partial):
        scorer = scorer.func
    keywords = {
        name
        for name, parameter in inspect.signature(scorer).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY
    }
    found += [
        f"the task declares {name}={declared[name]!r}, the hook is not bound to it"
        for name in sorted(keywords & declared.keys() - bound_options.keys())
    ]
    return found


_MISSING = object()
