"""Deprecated names keep working for one version, each with one warning line per process.

The line says what goes and what to use instead: ``scifig: <old> is deprecated and goes in 0.3.0 — <instead>``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

REMOVED_IN = "0.3.0"

_warned: set[str] = set()


def warn_once(old: str, instead: str) -> None:
    """Write the deprecation line for ``old`` to stderr, the first time only."""
    if old in _warned:
        return
    _warned.add(old)
    print(f"scifig: {old} is deprecated and goes in {REMOVED_IN} — {instead}", file=sys.stderr)


def renamed(module: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` giving each old name (``names``: old -> new) the new object, with one deprecation
    line."""

    def old_name(name: str) -> Any:
        if name in names:
            warn_once(f"{module}.{name}", f"use {module}.{names[name]}")
            return getattr(sys.modules[module], names[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return old_name
