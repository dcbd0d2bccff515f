"""A task's scoring options, bound to the scoring hook its YAML names.

A task's options are written once, in its YAML (:mod:`scifig_tasks.core.task_files`). lmms-eval hands them to the
prompt hooks (``doc_to_text`` / ``doc_to_messages`` receive ``lmms_eval_specific_kwargs``), but ``process_results``
receives only the document and the outputs, and lmms-eval's YAML loader imports a hook by name with no arguments. So
the options a scorer needs reach it through the hook the YAML names: ``bind(score, protocol="paper")`` is ``score``
with those keyword arguments, a plain function lmms-eval (upstream too) imports as it is — no patch, no context
variable. :func:`bound` reads the values back; a run checks that each task's scoring hook is bound to exactly the
values its YAML declares before the model is asked anything (:func:`refuse_disagreement`: lmms-eval when its tasks are
built, VLMEvalKit before a dataset is scored), so a plugin's hook bound to another value than its YAML says is one line,
not a silently different number; VLMEvalKit reads the YAML itself.
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


class OptionsDisagree(SystemExit):
    """A task's scoring hook is bound to other option values than its YAML declares: one line naming the task, the
    option and the fix, before the model is asked anything (a :class:`SystemExit`, status 1, which lmms-eval's
    catch-all leaves alone)."""

    def __init__(self, task: str, problems: list[str]) -> None:
        self.line = (
            f"task {task}: {'; '.join(problems)} — bind the scoring hook to the options its YAML declares "
            "(process_results = bind(score, OPTION=VALUE), scifig_tasks.core.task_options)"
        )
        super().__init__(f"scifig: {self.line}")


def refuse_disagreement(task: str, hook: Any, declared: Mapping[str, Any]) -> None:
    """Raise :class:`OptionsDisagree` when ``hook`` (task ``task``'s scoring hook) is bound otherwise than its YAML's
    options ``declared`` (:func:`disagreements`)."""
    try:
        problems = disagreements(hook, declared)
    except (TypeError, ValueError):  # a hook whose signature cannot be read: lmms-eval calls it as it is
        return
    if problems:
        raise OptionsDisagree(task, problems)
