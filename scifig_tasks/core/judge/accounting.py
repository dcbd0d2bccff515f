"""Who a judge call is charged to and what each client counts.

:func:`task_scope` names the task a call is made for (and refuses a judge its scoring hook does not declare);
:class:`Ledger` holds one client's counters. :mod:`scifig_tasks.core.judge.usage` reports them. See docs/judge.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

NO_TASK = "(no task)"
"""The accounting label of judge calls made outside any :func:`task_scope`."""

USAGE_COUNTS = ("calls", "requests", "cache_hits", "shared", "judged", "failed", "would_send")
"""Per-task counters: ``calls`` (judgements asked for) = ``judged`` + ``cache_hits`` + ``shared`` + ``failed``
(+ ``would_send`` under :func:`dry_run`); ``requests`` counts HTTP requests sent, retries included."""
USAGE_TOKENS = ("prompt_tokens", "completion_tokens")
"""Token counters, summed from each reply's ``usage`` (a reply without one adds nothing)."""
USAGE_NOTES = ("other_model", "refused_form", "redirected", "timed_out")
"""Per-task counters a row holds only when not 0: ``other_model`` (replies naming another model than the configured
one), and of the ``failed`` calls, ``refused_form`` (every reply refused for its form), ``redirected`` (answered with
a redirect, not followed) and ``timed_out`` (no complete reply within the deadline)."""
_FAILURE_COUNTER = {"form": "refused_form", "redirect": "redirected", "timeout": "timed_out"}
"""The :data:`USAGE_NOTES` counter of each kind of failure that has one."""

_task: contextvars.ContextVar[str | None] = contextvars.ContextVar("scifig_judge_task", default=None)
_UNCHECKED = object()
"""A :func:`task_scope` given no hook: its judge use is not checked (a dataset class scoring on its own)."""
_hook: contextvars.ContextVar[Any] = contextvars.ContextVar("scifig_judge_hook", default=_UNCHECKED)


@contextlib.contextmanager
def task_scope(name: str | None, hook: Any = _UNCHECKED) -> Iterator[None]:
    """Charge the judge calls made in this block (in this thread, and in the threads ``complete_many`` starts from
    it) to the task ``name``; with ``hook`` (the task's scoring hook), a judge asked for in the block when the hook
    declares no judge use is refused (:func:`check_declared`)."""
    token, hook_token = _task.set(name), _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(hook_token)
        _task.reset(token)


class UndeclaredJudgeUse(SystemExit):
    """A task's scoring asked for the LLM judge although its hook declares no judge use: such a use would score
    outputs wrong without a judge (``judge_off``, exit 0) and escape the bound said before the run, so the run stops
    in one line naming the task, the hook and the fix. A :class:`SystemExit` (status 1), which lmms-eval's catch-all
    and retries leave alone."""

    def __init__(self, task: str, hook: Any) -> None:
        function = getattr(hook, "func", hook)
        where = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"
        self.line = (
            f"task {task}: its scoring hook {where} asks the LLM judge but declares no judge use — decorate it with "
            '@asks_judge("per_output" | "audited" | "at_aggregation") (scifig_tasks.core.judged_hooks), so that the '
            "run says its judge bound and is refused without a judge when it needs one"
        )
        super().__init__(f"\nscifig: {self.line}")  # on a line of its own: raised while a progress bar is drawn


def check_declared() -> None:
    """Raise :class:`UndeclaredJudgeUse` when the judge is asked for inside a :func:`task_scope` whose hook declares
    no judge use (:func:`scifig_tasks.core.judged_hooks.declared_judging`)."""
    hook = _hook.get()
    if hook is _UNCHECKED:
        return
    from scifig_tasks.core.judged_hooks import declared_judging

    if declared_judging(hook) is None:
        raise UndeclaredJudgeUse(current_task(), hook)


def current_task() -> str:
    """The task judge calls made now are charged to (:data:`NO_TASK` outside any :func:`task_scope`)."""
    return _task.get() or NO_TASK


class Ledger:
    """One client's counters: :attr:`stats` for the client and, per task, the counters of :data:`USAGE_COUNTS`, the
    tokens and ``wall_s``. Thread-safe."""

    STATS = ("requests", "cache_hits", "shared", "judged", "failed")
    """The client's own counts (``would_send`` and ``calls`` are per task only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = dict.fromkeys(self.STATS, 0)
        self._usage: dict[str, dict[str, float]] = {}
        self._active: dict[str, tuple[int, float]] = {}  # task -> (calls waiting on the judge, since when)
        self._causes: dict[str, tuple[int, str]] = {}  # failure kind -> (calls, the first one's example)
        self._answered_as: dict[str, int] = {}  # model named by replies, when not the configured one -> replies
        self._models_said: set[str] = set()

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._stats)

    def count(self, name: str) -> None:
        """Add one to counter ``name`` of the client and of the current task."""
        with self._lock:
            if name in self._stats:
                self._stats[name] += 1
            self._charge(current_task(), name, 1)

    def tokens(self, usage: Any) -> None:
        """Add a reply's ``usage`` (prompt and completion tokens) to the current task; a reply without one adds
        nothing."""
        found = {name: getattr(usage, name, None) for name in USAGE_TOKENS}
        task = current_task()
        with self._lock:
            for name, value in found.items():
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    self._charge(task, name, value)

    def failed_because(self, kind: str, example: str) -> None:
        """One failed call of the current task, and why (a :data:`~scifig_tasks.core.judge.replies.FailureKind`):
        counted in its :data:`USAGE_NOTES` counter, if the kind has one, and in :meth:`causes` (never drained: the
        closing line of a command names them)."""
        with self._lock:
            counter = _FAILURE_COUNTER.get(kind)
            if counter is not None:
                self._charge(current_task(), counter, 1)
            calls, first = self._causes.get(kind, (0, example))
            self._causes[kind] = (calls + 1, first)

    def causes(self) -> dict[str, tuple[int, str]]:
        """Each kind of failure of the client's life -> (failed calls, the first one's example)."""
        with self._lock:
            return dict(self._causes)

    def answered_by(self, model: str) -> None:
        """A reply naming ``model``, not the configured one: counted for the current task (``other_model``) and for
        the judge (:meth:`answered_as`)."""
        with self._lock:
            self._charge(current_task(), "other_model", 1)
            self._answered_as[model] = self._answered_as.get(model, 0) + 1

    def answered_as(self, *, drain: bool = False) -> dict[str, int]:
        """The models replies named, when not the configured one -> replies (since the last drain)."""
        with self._lock:
            found = dict(self._answered_as)
            if drain:
                self._answered_as.clear()
        return found

    def first_said(self, models: Iterable[str]) -> list[str]:
        """Those of ``models`` not said before, now taken as said (one console line per model per client)."""
        with self._lock:
            fresh = [model for model in models if model not in self._models_said]
            self._models_said.update(fresh)
        return fresh

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """One call of the current task: counted, and its time waiting on the judge added to the task's ``wall_s``
        (the union of its calls' intervals: calls in flight together count once)."""
        task = current_task()
        with self._lock:
            self._charge(task, "calls", 1)
            waiting, since = self._active.get(task, (0, time.monotonic()))
            self._active[task] = (waiting + 1, since)
        try:
            yield
        finally:
            with self._lock:
                waiting, since = self._active[task]
                if waiting == 1:
                    del self._active[task]
                    self._charge(task, "wall_s", time.monotonic() - since)
                else:
                    self._active[task] = (waiting - 1, since)

    def usage(self, *, drain: bool = False) -> dict[str, dict[str, float]]:
        """Per task: the counters of :data:`USAGE_COUNTS`, the tokens, ``wall_s`` and those of :data:`USAGE_NOTES`
        that are not 0; ``drain`` starts them afresh (each results file reports what was spent since the last one)."""
        with self._lock:
            found = {task: dict(usage) for task, usage in self._usage.items()}
            if drain:
                self._usage.clear()
        return found

    def _charge(self, task: str, name: str, amount: float) -> None:
        """Add ``amount`` to the task's counter ``name`` (the caller holds the lock)."""
        usage = self._usage.get(task)
        if usage is None:
            usage = self._usage[task] = dict.fromkeys((*USAGE_COUNTS, *USAGE_TOKENS, "wall_s"), 0)
        usage[name] = usage.get(name, 0) + amount
