"""What the registry learns by reading files (task folders, lmms-eval's task names and index), kept on disk while
those files are unchanged. Manual: docs/protocols.md, "Registered benchmarks"."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

FORMAT = "scifig-registration/1"


def remembered(
    kind: str,
    key: str,
    find: Callable[[], tuple[Any, Iterable[Path | str] | None]],
    listed: Iterable[Path | str],
    holds: Callable[[Any], bool] | None = None,
) -> Any:
    """The finding ``find()`` returns (with the files it read), or the stored one while ``listed`` (the files that
    make up what is read: a folder's YAMLs, say) and every file read then are unchanged, and ``holds(value)`` (a
    further condition of the stored value, when given) is true. ``kind`` and ``key`` (any text) name the finding;
    its value must be JSON. A finding returned with ``None`` for the files read is not kept."""
    listed = sorted(map(str, listed))
    name = hashlib.sha256(json.dumps([FORMAT, kind, key, listed]).encode()).hexdigest()[:32]
    stored = _base() / "registration" / kind / f"{name}.json"
    try:
        entry = json.loads(stored.read_text(encoding="utf-8"))
        unchanged = all(_stamp(path) == stamp for path, stamp in entry["files"].items())
        if entry.get("format") == FORMAT and unchanged and (holds is None or holds(entry["value"])):
            return entry["value"]
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        pass
    value, read = find()
    if read is None:
        return value
    files = {path: _stamp(path) for path in sorted({*listed, *map(str, read)})}
    try:
        stored.parent.mkdir(parents=True, exist_ok=True)
        partial = stored.with_name(f"{stored.name}.partial{os.getpid()}")
        partial.write_text(json.dumps({"format": FORMAT, "files": files, "value": value}), encoding="utf-8")
        os.replace(partial, stored)
    except OSError:
        pass
    return value


def _stamp(path: str) -> list[int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


def _base() -> Path:
    """``XDG_CACHE_HOME``/scifig (read here with its declared parser: this runs while the registry is being built,
    which the process's settings value may itself need), else ``~/.cache/scifig``."""
    from scifig_tasks.core.settings import XDG_CACHE_HOME

    raw = os.environ.get(XDG_CACHE_HOME.name, "").strip()
    base = XDG_CACHE_HOME.read(raw) if raw else Path("~/.cache")
    base = base.expanduser()
    return (base if base.is_absolute() else Path("~/.cache").expanduser()) / "scifig"
