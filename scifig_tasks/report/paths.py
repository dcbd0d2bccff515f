"""No machine path on the report's pages: a file is named relative to the report folder, or by its name when it lies
far from it, and absolute paths inside sentences (notes made elsewhere) are shortened the same way."""

from __future__ import annotations

import os
import re
from pathlib import Path

FAR = 2
"""A results file more than this many folders above the report is named by its file name only."""
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~\\-])(?:/|[A-Za-z]:\\)(?:[\w.+@-]+[/\\])+[\w.+@-]*")
"""An absolute POSIX or Windows path inside a sentence (not a URL: ``https://`` is preceded by ``:``)."""


def shown_path(path: Path | str, out: Path) -> str:
    """A path as the report shows it: relative to the report folder when it lies within :data:`FAR` folders above
    it, else its file name (no machine path on the page)."""
    target = Path(path)
    try:
        relative = Path(os.path.relpath(target.resolve(), out.resolve()))
    except ValueError:  # another drive
        return target.name
    if relative.parts[: FAR + 1].count("..") > FAR or relative.is_absolute():
        return target.name
    return relative.as_posix()


def shown(text: str, out: Path) -> str:
    """``text`` with every absolute path in it as :func:`shown_path` names it."""
    return ABSOLUTE_PATH.sub(lambda match: shown_path(match.group(0), out), text)
