"""A task's scoring options, written once in its YAML and bound to its scoring hook.

lmms-eval hands a task's options (``lmms_eval_specific_kwargs``) to the prompt hooks but not to ``process_results``.
A scorer declared with :func:`reads_task_options` gets them bound by scifig when it loads the task (:func:`for_task`,
in both frameworks), so a ``_paper`` twin states ``protocol: paper`` and nothing else; :func:`bind` is the explicit
form a stock lmms-eval folder uses. docs/adding-a-benchmark.md has the manual."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_READS_OPTIONS = "scifig_reads_task_options"


def reads_task_options(scorer: F) -> F:
    """Declare that ``scorer`` takes its task's options as keyword-only arguments, bound when the task is loaded
    (:func:`for_task`): one hook for every task of a folder, whatever options each declares."""
    setattr(scorer, _READS_OPTIONS, True)
    return scorer


def reads_options(hook: Any) -> bool:
    """Whether ``hook`` (or the function a :func:`bind` wraps) was declared with :func:`reads_task_options`."""
    while isinstance(hook, partial) and not getattr(hook, _READS_OPTIONS, False):
        hook = hook.func
    return bool(getattr(hook, _READS_OPTIONS, False))


def for_task(hook: Any, options: Mapping[str, Any]) -> Any:
    """The hook a task scores with: a hook that reads its task's options bound to those of ``options`` it takes as
    keyword-only arguments (an option it lacks is reported by :func:`disagreements`); any other hook as it is."""
    if not reads_options(hook) or isinstance(hook, partial):
        return hook
    return bind(hook, **{name: options[name] for name in _keywords(hook) if name in options})


def _keywords(scorer: Any) -> dict[str, inspect.Parameter]:
    while isinstance(scorer, partial):
        scorer = scorer.func
    parameters = inspect.signature(scorer).parameters.items()
    return {name: parameter for name, parameter in parameters if parameter.kind is parameter.KEYWORD_ONLY}


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
    keywords = _keywords(hook)
    found += [
        f"the task declares {name}={declared[name]!r}, the hook is not bound to it"
        for name in sorted(keywords.keys() & declared.keys() - bound_options.keys())
    ]
    found += [
        f"the hook takes {name} and the task declares none"
        for name, parameter in sorted(keywords.items())
        if parameter.default is parameter.empty and name not in declared and name not in bound_options
    ]
    return found


_MISSING = object()


class OptionsDisagree(SystemExit):
    """A task's scoring hook is bound to other option values than its YAML declares: one line naming the task, the
    option and the fix, before the model is asked anything (a :class:`SystemExit`, status 1, which lmms-eval's
    catch-all leaves alone)."""

    def __init__(self, task: str, problems: list[str]) -> None:
        if all(problem.startswith("the hook takes") for problem in problems):
            todo = "declare each option the scorer takes in its YAML (lmms_eval_specific_kwargs: default: OPTION: VALUE"
        else:
            todo = "bind the scoring hook to the options its YAML declares (process_results = bind(score, OPTION=VALUE)"
        self.line = f"task {task}: {'; '.join(problems)} — {todo}, scifig_tasks.core.task_options)"
        super().__init__(f"scifig: {self.line}")


def refuse_disagreement(task: str, hook: Any, declared: Mapping[str, Any]) -> None:
    """Raise :class:`OptionsDisagree` when ``hook`` (task ``task``'s scoring hook) is bound otherwise than its YAML's
    options ``declared`` (:func:`disagreements`)."""
    try:
        problems = disagreements(for_task(hook, declared), declared)
    except (TypeError, ValueError):  # a hook whose signature cannot be read: lmms-eval calls it as it is
        return
    if problems:
        raise OptionsDisagree(task, problems)
