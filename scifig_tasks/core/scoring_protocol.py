"""Which protocol a run scores with: scifig's default, or the paper's own setting, chosen by the task's name.

A plain task name scores with the rules the package documents; its ``_paper`` twin as the paper or its authors' code
does. Manual: docs/protocols.md, 'One switch: the task name'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

from scifig_tasks.core import settings
from scifig_tasks.core.deprecation import renamed, warn_once

Protocol = Literal["default", "paper"]
PROTOCOLS: tuple[Protocol, ...] = ("default", "paper")
PAPER_SUFFIX = "_paper"
GLOBAL_VARIABLE = "SCIFIG_PROTOCOL"

_rescoring_as: Protocol | None = None


def variable(benchmark: str) -> str:
    """The deprecated per-benchmark switch: ``SCIFIG_MMSCI_PROTOCOL`` for ``mmsci``."""
    return f"SCIFIG_{benchmark.upper()}_PROTOCOL"


def protocol_of(task: str) -> Protocol:
    """The protocol a task's name selects: ``paper`` for a ``*_paper`` task and each of its sub-tasks."""
    return "paper" if task.endswith(PAPER_SUFFIX) else "default"


def plain_twin(task: str) -> str:
    """The task a ``*_paper`` task is the twin of (``mmsci_paper`` -> ``mmsci``): the same questions under scifig's
    protocol; other names unchanged."""
    return task.removesuffix(PAPER_SUFFIX)


def in_force(benchmark: str, named: Protocol = "default", environ: Mapping[str, str] | None = None) -> Protocol:
    """The protocol a task of ``benchmark`` whose name selects ``named`` scores with.

    ``scifig rescore --protocol`` wins while it re-scores; a ``_paper`` task is always ``paper``; a plain-name task is
    ``default`` unless a deprecated variable says otherwise (with a one-line warning, once per process)."""
    if _rescoring_as is not None:
        return _rescoring_as
    if named == "paper":
        return "paper"
    given = settings.current() if environ is None else settings.Settings.from_environment(environ, warn=False)
    for name in (variable(benchmark), GLOBAL_VARIABLE):
        if settings.is_setting(name) and given.given(name):
            chosen: Protocol = given.get(name)
            twin = f"{benchmark}{PAPER_SUFFIX}" if chosen == "paper" else benchmark
            warn_once(name, f"run the {twin} task (the task name chooses the protocol)")
            return chosen
    return "default"


@contextmanager
def rescoring_as(value: Protocol | None) -> Iterator[None]:
    """While re-scoring saved outputs, score every task with ``value`` (None: each task's own protocol)."""
    global _rescoring_as
    previous, _rescoring_as = _rescoring_as, value
    try:
        yield
    finally:
        _rescoring_as = previous


__getattr__ = renamed(__name__, {"of_task": "protocol_of"})
