"""Models a scoring hook fetches at run time, declared on the hook and checked before the model is asked anything.

Rule: every model scifig fetches while a run is under way is checked before the work starts, by the one rule of
:mod:`scifig_tasks.core.hub_cache` (in the local cache, or one request to the Hub, never a minute of retries). A
scoring hook that loads a model declares its check with :func:`fetches`, saying what a run without it loses (MMSci
captioning: BERTScore F1, the paper's captioning table reports it beside BLEU, ROUGE, METEOR and CIDEr). The run
then says in one line, before the first request, which model cannot be had, where it was looked for and the way out
(download once, a local copy, ``HF_HUB_OFFLINE=1``), and what will be n/a; the other metrics are still computed, and
the scoring records the same reason beside the n/a. lmms-eval (``scifig eval`` and plain ``lmms-eval``: when the
tasks are built) and ``scifig vlmeval`` (when a dataset is loaded) run the checks; each check runs once a process.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_ATTRIBUTE = "scifig_fetches"


@dataclass(frozen=True)
class FetchedModel:
    """A model a hook loads at run time: ``check`` (raises :class:`~scifig_tasks.core.hub_cache.Unavailable`, or
    returns the line saying the process went offline, or None) and what the run loses without it (``without``)."""

    check: Callable[[], str | None]
    without: str


def fetches(check: Callable[[], str | None], *, without: str) -> Callable[[F], F]:
    """Declare that the decorated scoring hook loads a model at run time, checked by ``check``."""

    def declare(function: F) -> F:
        setattr(function, _ATTRIBUTE, FetchedModel(check, without))
        return function

    return declare


def declared(hook: Any) -> FetchedModel | None:
    """The model a hook declares it fetches (on a ``functools.partial`` or the function it wraps), or None."""
    while getattr(hook, _ATTRIBUTE, None) is None and isinstance(hook, partial):
        hook = hook.func
    return getattr(hook, _ATTRIBUTE, None)


_checked: dict[FetchedModel, list[str]] = {}


def check_lines(hooks: Iterable[Any]) -> list[str]:
    """The lines to say before the run for the models the scoring ``hooks`` declare (each model checked once a
    process): one per model that cannot be had (what is looked for, where, the way out, what will be n/a), and one
    when the process went offline to read a cached model."""
    from scifig_tasks.core.hub_cache import Unavailable

    lines: list[str] = []
    for model in dict.fromkeys(found for hook in hooks if (found := declared(hook)) is not None):
        if model not in _checked:
            try:
                went_offline = model.check()
                _checked[model] = [went_offline] if went_offline else []
            except Unavailable as exc:
                _checked[model] = [f"{exc.what} — {model.without}; {exc.todo}"]
            lines += _checked[model]
    return lines


def say_checks(hooks: Iterable[Any], command: str = "scifig") -> None:
    """Print :func:`check_lines` for ``hooks`` on stderr, each as ``COMMAND: LINE``."""
    for line in check_lines(hooks):
        print(f"{command}: {line}", file=sys.stderr, flush=True)
