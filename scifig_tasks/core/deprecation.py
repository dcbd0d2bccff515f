"""Deprecated names keep working for one version, each with one warning line per process.

The line says what goes and what to use instead: ``scifig: <old> is deprecated and goes in 0.3.0 — <instead>``.
"""

from __future__ import annotations

import sys

REMOVED_IN = "0.3.0"

_warned: set[str] = set()


def warn_once(old: str, instead: str) -> None:
    """Write the deprecation line for ``old`` to stderr, the first time only."""
    if old in _warned:
        return
    _warned.add(old)
    print(f"scifig: {old} is deprecated and goes in {REMOVED_IN} — {instead}", file=sys.stderr)
