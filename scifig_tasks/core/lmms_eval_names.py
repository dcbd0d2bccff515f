"""The task, group and tag names lmms-eval itself defines, read as text from its installed ``tasks`` folder.

A scifig benchmark may not use one of them (:mod:`scifig_tasks.core.registry` refuses it): lmms-eval's own task of the
same name would run instead, silently. The names are collected by a regular expression over the YAMLs' top-level
``task:``, ``group:`` and ``tag:`` lines (:func:`yaml_names`) rather than by lmms-eval's task manager, which parses
every file and imports torch; lmms-eval is not imported. The scan of lmms-eval's folder (a few thousand files) is kept
on disk per lmms-eval installation (its folder and version), so it is paid once.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Iterable
from pathlib import Path

_NAME_LINE = re.compile(r"^['\"]?(task|group|tag)['\"]?[ \t]*:[ \t]*([^\n#]*)", re.MULTILINE)
_LIST_ITEM = re.compile(r"\A(?:[ \t]*\n)*[ \t]*-[ \t]*([^\s#]+)[^\n]*\n?")


def yaml_names(folder: Path) -> set[str]:
    """Task, group and tag names the task YAMLs under ``folder`` define, read from their top-level ``task:``,
    ``group:`` and ``tag:`` lines (a scalar, a flow list, or a block list under ``group:``/``tag:``; keys may be
    quoted) and from those of the file each ``include:`` names (lmms-eval reads a name an included template sets).
    A name too many is harmless (lmms-eval then says it is unknown); one too few would refuse a real task."""
    names: set[str] = set()
    texts: dict[Path, str] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints")]
        for file in files:
            if file.endswith(".yaml"):
                text = _text(Path(root, file), texts)
                names.update(names_in(text))
                for include in _INCLUDE.findall(text):
                    names.update(names_in(_text(Path(root, include.strip("'\"")), texts)))
    return names


_INCLUDE = re.compile(r"^['\"]?include['\"]?[ \t]*:[ \t]*(\S+)", re.MULTILINE)


def _text(path: Path, texts: dict[Path, str]) -> str:
    """The text of a YAML file (a byte-order mark dropped), read once; empty when it cannot be read."""
    if path not in texts:
        try:
            texts[path] = path.read_text(encoding="utf-8-sig", errors="replace")
        except OSError:
            texts[path] = ""
    return texts[path]


def names_in(text: str) -> Iterable[str]:
    for match in _NAME_LINE.finditer(text):
        key, value = match.group(1), match.group(2).strip()
        if value.startswith("["):
            yield from (item.strip(" '\"") for item in value.strip("[]").split(",") if item.strip(" '\""))
        elif value:
            yield value.strip("'\"")
        elif key != "task":  # a block list of groups or tags (a task: list holds a group's members)
            rest = text[match.end() + 1 :]
            while item := _LIST_ITEM.match(rest):
                yield item.group(1).strip("'\"")
                rest = rest[item.end() :]


def lmms_eval_tasks_dir() -> Path | None:
    """lmms-eval's ``tasks`` folder, found without importing lmms-eval; None when it is not installed."""
    try:
        spec = importlib.util.find_spec("lmms_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "tasks"
    return folder if folder.is_dir() else None


@functools.cache
def own_names() -> dict[str, str]:
    """lmms-eval's own task, group and tag names -> the YAML defining each (relative to its ``tasks`` folder); empty
    when lmms-eval is not installed. Scanned once per installation (:mod:`scifig_tasks.core.registration_cache`)."""
    folder = lmms_eval_tasks_dir()
    if folder is None:
        return {}
    try:
        version = importlib.metadata.version("lmms_eval")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    from scifig_tasks.core.registration_cache import remembered

    return remembered("lmms_eval_names", f"{version}|{folder}", lambda: (_scan(folder), []), [folder])


def _scan(folder: Path) -> dict[str, str]:
    names: dict[str, str] = {}
    texts: dict[Path, str] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints"))
        for file in sorted(files):
            if file.endswith(".yaml"):
                path = Path(root, file)
                for name in names_in(_text(path, texts)):
                    names.setdefault(name, str(path.relative_to(folder)))
    return names
