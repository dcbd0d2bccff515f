"""An lmms-eval task YAML read as lmms-eval reads it, without lmms-eval: ``include`` chains and ``!function`` tags.

A ``!function module.name`` tag is read as a :class:`FunctionTag` (resolved, when asked, as lmms-eval resolves it:
``module.py`` beside the YAML that holds the tag) and any other tag as ``None``, so nothing of lmms-eval is imported and
the read is quick. ``include`` files are applied first, the including file's keys replacing theirs (:func:`resolved`).
The task folders' listing (:mod:`scifig_tasks.core.task_files`) and the checks made when a benchmark is registered
(:mod:`scifig_tasks.core.task_folder_checks`) read YAMLs through this module.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class FunctionTag:
    """A ``!function module.name`` tag of a YAML in ``folder``."""

    folder: Path
    name: str

    def resolve(self) -> Callable[..., Any]:
        """The function the tag names, from ``module.py`` beside its YAML (imported once per process)."""
        module_name, _, attribute = self.name.rpartition(".")
        return getattr(_module(self.folder / f"{module_name}.py"), attribute)


@functools.cache
def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"scifig_task_file_{path.parent.name}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _loader() -> Any:
    """A PyYAML safe loader that reads ``!function x`` as a :class:`FunctionTag` and any other tag as ``None``."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # libyaml's when installed
        folder = Path()

    Loader.add_constructor("!function", lambda loader, node: FunctionTag(loader.folder, loader.construct_scalar(node)))
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return Loader


def read_yaml(path: Path) -> dict[str, Any]:
    """A task YAML (``!function`` tags as :class:`FunctionTag`, other tags ``None``); ``{}`` when it is no mapping.
    A new top-level dict each call (its values are shared with other calls: do not change them in place); the file is
    parsed once per process while its size and modification time stay the same."""
    stat = path.stat()
    return dict(_parsed(path, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=1024)
def _parsed(path: Path, mtime_ns: int, size: int) -> dict[str, Any]:
    loader = _loader()(path.read_text(encoding="utf-8"))
    loader.folder = path.parent
    try:
        config = loader.get_single_data()
    finally:
        loader.dispose()
    return config if isinstance(config, dict) else {}


def resolved(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The YAML with its ``include`` files applied first and its own keys replacing theirs; of several included
    files the first listed wins (lmms-eval's order)."""
    if path in seen:
        raise ValueError(f"{path}: `include` loops back to itself ({' -> '.join(str(p.name) for p in seen)})")
    config = read_yaml(path)
    included = config.pop("include", None)
    merged: dict[str, Any] = {}
    for name in reversed([included] if isinstance(included, str) else included or []):
        merged |= resolved(path.parent / name, (*seen, path))
    return merged | config
