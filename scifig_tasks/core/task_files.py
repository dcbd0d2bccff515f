"""The tasks and groups of the registered benchmarks' lmms-eval task folders, read from their YAMLs as text.

Each YAML's ``task`` (a task) or ``group`` with its ``task`` list (a group), its ``metadata`` (the ``scifig_*`` facts
``scifig tasks`` lists) and its options; a ``!function module.name`` tag is read as a :class:`FunctionTag` (resolved,
when asked, as lmms-eval resolves it: ``module.py`` beside the YAML that holds the tag) and any other tag as ``None``,
so nothing of lmms-eval is imported and the read is quick. The folders are each registered benchmark's ``task_folder``
(:mod:`scifig_tasks.core.registry`).

Task options. A task's options (the protocol it scores with, its prompt variant, a tolerance rule, a word budget) are
written once, in its YAML, as the ``default`` entry of lmms-eval's own ``lmms_eval_specific_kwargs`` — read through the
YAML's ``include`` chain as lmms-eval reads it (the including file's keys replace the included file's). lmms-eval hands
them to the task's prompt hooks; its scoring hook is the one the YAML names, bound to the same values
(:mod:`scifig_tasks.core.task_options`); VLMEvalKit's dataset of the same name reads them here (:func:`options`);
``scifig export-upstream`` copies the YAML as it is, so an exported task keeps them.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

NO_VALUE = "—"
"""Printed where a fact is unknown or does not apply."""


@dataclass
class TaskInfo:
    """One task or group defined by a YAML of a registered benchmark's task folder."""

    name: str
    benchmark: str
    path: Path
    members: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    """The YAML's own ``metadata`` (not its included files')."""
    options: dict[str, Any] = field(default_factory=dict)
    """The task's options (module docstring); empty for a group."""

    @property
    def is_group(self) -> bool:
        return bool(self.members)

    def fact(self, key: str) -> str:
        """``metadata.scifig_<key>`` as text, or :data:`NO_VALUE`."""
        value = self.metadata.get(f"scifig_{key}")
        return NO_VALUE if value in (None, "") else str(value)


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
    """A task YAML (``!function`` tags as :class:`FunctionTag`, other tags ``None``); ``{}`` when it is no mapping."""
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


def _options(config: Mapping[str, Any], path: Path) -> dict[str, Any]:
    kwargs = config.get("lmms_eval_specific_kwargs") or {}
    chosen = kwargs.get("default", {}) if isinstance(kwargs, dict) else None
    if not isinstance(chosen, dict):
        raise ValueError(f"{path}: lmms_eval_specific_kwargs.default must be a mapping of option names to values")
    return dict(chosen)


def scifig_tasks(folders: Mapping[str, Path] | None = None) -> dict[str, TaskInfo]:
    """Every task and group of the benchmarks' task folders (default: every registered benchmark's) by name, in listing
    order (benchmark, then name)."""
    found: list[TaskInfo] = []
    if folders is None:
        from scifig_tasks.core import registry  # the registry checks task folders with this module

        folders = {name: Path(described.task_folder) for name, described in registry.benchmarks().items()}
    for benchmark, folder in folders.items():
        for path in sorted(Path(folder).glob("*.yaml")):
            config = read_yaml(path)
            members = config.get("task")
            if isinstance(members, list):
                name = config.get("group")
                members = [str(m) for m in members if isinstance(m, str)]
            else:
                name, members = members, []
            if not isinstance(name, str):
                continue
            metadata = config.get("metadata")
            options = {} if members else _options(resolved(path), path)
            metadata = metadata if isinstance(metadata, dict) else {}
            found.append(TaskInfo(name, benchmark, path, members, metadata, options))
    return {info.name: info for info in found}


def top_level(tasks: dict[str, TaskInfo]) -> list[TaskInfo]:
    """The tasks and groups that are in no group: what a user runs."""
    inside = {member for info in tasks.values() for member in info.members}
    return [info for info in tasks.values() if info.name not in inside]


def options(name: str, tasks: Mapping[str, TaskInfo] | None = None) -> dict[str, Any]:
    """The options of the task ``name``, or of every task of the group ``name`` (which must agree: a group whose
    tasks differ in an option has no one value of it, and is refused naming the option and the tasks)."""
    tasks = scifig_tasks() if tasks is None else tasks
    if name not in tasks:
        raise KeyError(f"{name}: no task or group of that name in the registered benchmarks' task folders")
    info = tasks[name]
    if not info.is_group:
        return dict(info.options)
    found = [(member, options(member, tasks)) for member in info.members]
    first_name, first = found[0]
    for member, chosen in found[1:]:
        if chosen != first:
            differing = sorted(key for key in first.keys() | chosen.keys() if first.get(key) != chosen.get(key))
            raise ValueError(
                f"{info.path}: the tasks of group {name} differ in option {differing[0]} "
                f"({first_name}: {first.get(differing[0])!r}, {member}: {chosen.get(differing[0])!r})"
            )
    return first
