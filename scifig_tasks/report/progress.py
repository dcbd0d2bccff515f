"""How the report's parts say what they are doing (``scifig report`` prints it on stderr: a line per step)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Where a part of the report says what it is doing: a line per step (``detail``: a count within a step, which
    the receiver may thin out)."""

    def __call__(self, text: str, *, detail: bool = False) -> None: ...


def quiet(text: str, *, detail: bool = False) -> None:
    """A :class:`Progress` that says nothing (``scifig demo``'s report, a notebook)."""
