"""How a task's scoring hook may use the LLM judge, declared on the hook itself.

``per_output``, ``audited`` or ``at_aggregation``; ``required=True`` refuses a run with no judge before the model is
asked anything. Manual: docs/judge.md, 'How a scoring hook declares the judge'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar

from scifig_tasks.core.task_options import bound

HookJudging = Literal["per_output", "audited", "at_aggregation"]
F = TypeVar("F", bound=Callable[..., Any])
_ATTRIBUTE = "scifig_asks_judge"


@dataclass(frozen=True)
class JudgeUse:
    """How a scoring hook may ask the judge, and whether it cannot score without one."""

    use: HookJudging
    required: bool = False


ByOptions = Callable[[Mapping[str, Any]], JudgeUse | None]
"""A declaration that depends on the task's options (its ``protocol``, say): the options -> the use, or None."""


def asks_judge(use: HookJudging | ByOptions, *, required: bool = False) -> Callable[[F], F]:
    """Declare how the decorated hook may ask the judge (``required``: it cannot score without one), or, given a
    function of the task's options, how each task it scores may."""

    def declare(function: F) -> F:
        setattr(function, _ATTRIBUTE, use if callable(use) else JudgeUse(use, required))
        return function

    return declare


def declared_use(hook: Any) -> JudgeUse | None:
    """The judge use a hook declares (on a ``functools.partial`` or, failing that, the function it wraps), for the
    options bound to it; None when it declares none."""
    options = bound(hook)
    while getattr(hook, _ATTRIBUTE, None) is None and isinstance(hook, partial):
        hook = hook.func
    found = getattr(hook, _ATTRIBUTE, None)
    return found(options) if callable(found) else found


def declared_judging(hook: Any) -> HookJudging | None:
    """The judge use a hook declares, None when it declares none."""
    found = declared_use(hook)
    return found.use if found is not None else None


def requires_judge(hook: Any) -> bool:
    """Whether a hook declares it cannot score without the judge."""
    found = declared_use(hook)
    return found is not None and found.required


JUDGE_SETTINGS = "set SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL (or SCIFIG_JUDGE=<preset>)"
"""What to set for a judge, as every refusal and flag says it."""


class JudgeRequired(SystemExit):
    """Tasks that cannot be scored without the LLM judge were asked for and none is configured: said in one line
    (:attr:`what` — :attr:`todo`) before the model is asked anything.

    A :class:`SystemExit` (status 1, the line printed as the process's last words, as argparse ends a bad command
    line): lmms-eval's CLI catches every ``Exception`` of a run, prints its traceback and goes on, and its tenacity
    retries around data loading and ``process_results`` repeat any ``Exception`` for up to a minute; neither touches a
    ``SystemExit``. ``scifig`` commands check first and print the same line with their own name. ``instead``: the
    tasks that ask the same questions without requiring the judge
    (:func:`scifig_tasks.core.judge.required.judge_refusal` finds them)."""

    def __init__(self, tasks: Sequence[str], instead: Sequence[str] = ()) -> None:
        self.tasks = list(tasks)
        self.what = f"{', '.join(self.tasks)} cannot be scored without an LLM judge, and none is configured"
        unique = list(dict.fromkeys(instead))
        self.todo = JUDGE_SETTINGS + (f", or run {', '.join(unique)} (scored without requiring one)" if unique else "")
        super().__init__(f"scifig: {self.sentence}")

    @property
    def sentence(self) -> str:
        """``WHAT — TODO``, without a command's name."""
        return f"{self.what} — {self.todo}"

    def line(self, command: str) -> str:
        """The refusal as ``command`` says it: ``scifig eval: WHAT — TODO``."""
        return f"{command}: {self.sentence}"


def judge_configured() -> bool:
    """Whether the settings configure a usable judge (``SCIFIG_JUDGE_*``; off, unset or misconfigured: no)."""
    from scifig_tasks.core.judge.config import configured_concurrency

    return configured_concurrency() is not None


def refuse_without_judge(tasks: Sequence[str], available: bool | None = None) -> None:
    """Raise :class:`JudgeRequired` for ``tasks`` (those that require the judge) when no judge is ``available``
    (default: :func:`judge_configured`)."""
    if tasks and not (judge_configured() if available is None else available):
        raise JudgeRequired(tasks)
