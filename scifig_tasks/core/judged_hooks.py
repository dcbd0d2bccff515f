"""How a task's scoring hook may use the LLM judge, declared on the hook itself.

A ``process_results`` hook that can send an output to the judge says so with :func:`asks_judge`; the run's judge
bound (the most requests a run can send, said before the model runs) reads the declaration
(:func:`declared_judging`), whatever the hook is called and wherever its task folder lives:

* ``"per_output"``: an output goes to the judge at most once, when the rules cannot read it;
* ``"audited"``: the same, and the judge audit (``SCIFIG_JUDGE_AUDIT``) also samples a share of the outputs the rules
  read (multiple choice);
* ``"at_aggregation"``: the judge is asked when lmms-eval aggregates, a number of requests not known in advance
  (MMSci captioning's FActScore and G-Eval).

A hook without a declaration never asks the judge.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypeVar

HookJudging = Literal["per_output", "audited", "at_aggregation"]
F = TypeVar("F", bound=Callable[..., Any])
_ATTRIBUTE = "scifig_asks_judge"


def asks_judge(use: HookJudging) -> Callable[[F], F]:
    """Declare how the decorated hook may ask the judge."""

    def declare(function: F) -> F:
        setattr(function, _ATTRIBUTE, use)
        return function

    return declare


def declared_judging(hook: Any) -> HookJudging | None:
    """The judge use a hook declares (on a ``functools.partial`` or, failing that, the function it wraps), None
    when it declares none."""
    while getattr(hook, _ATTRIBUTE, None) is None and isinstance(hook, partial):
        hook = hook.func
    return getattr(hook, _ATTRIBUTE, None)
