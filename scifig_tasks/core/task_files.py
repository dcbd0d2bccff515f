"""The tasks and groups of the registered benchmarks' lmms-eval task folders, read from their YAMLs as text.

Task options are written once, as the ``default`` entry of a YAML's ``lmms_eval_specific_kwargs``. Manual:
docs/protocols.md, 'Task files and task options'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core.task_yaml import read_yaml, resolved

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
    """The YAML's ``metadata``, through its ``include`` chain as lmms-eval reads it (a variant task that includes its
    parent and names no facts of its own has the parent's)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The task's options (docs/protocols.md, 'Task files and task options'); empty for a group."""

    @property
    def is_group(self) -> bool:
        return bool(self.members)

    @property
    def source(self) -> str | None:
        """The data source the task reads (``metadata.scifig_source``); None for a group."""
        value = self.metadata.get("scifig_source")
        return None if self.is_group or value is None else str(value)

    def fact(self, key: str) -> str:
        """``metadata.scifig_<key>`` as text, or :data:`NO_VALUE`."""
        value = self.metadata.get(f"scifig_{key}")
        return NO_VALUE if value in (None, "") else str(value)


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
        from scifig_tasks.core import registry

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
            whole = config if members else resolved(path)
            metadata = whole.get("metadata")
            options = {} if members else _options(whole, path)
            metadata = metadata if isinstance(metadata, dict) else {}
            found.append(TaskInfo(name, benchmark, path, members, metadata, options))
    return {info.name: info for info in found}


def top_level(tasks: dict[str, TaskInfo]) -> list[TaskInfo]:
    """The tasks and groups that are in no group: what a user runs."""
    inside = {member for info in tasks.values() for member in info.members}
    return [info for info in tasks.values() if info.name not in inside]


def leaves(name: str, tasks: Mapping[str, TaskInfo], seen: frozenset[str] = frozenset()) -> list[str]:
    """The tasks the task or group ``name`` runs: itself, or its groups' members at every depth (a name of no task
    folder: itself)."""
    info = tasks.get(name)
    if info is None or not info.is_group:
        return [name]
    return [leaf for member in info.members if member not in seen for leaf in leaves(member, tasks, seen | {name})]


def scoring_hook(info: TaskInfo | None) -> Any:
    """The ``process_results`` hook a task's YAML names, its task options bound (as lmms-eval and VLMEvalKit score
    with it); None for no task or a hook that is not a function."""
    from scifig_tasks.core.task_options import for_task
    from scifig_tasks.core.task_yaml import FunctionTag

    hook = None if info is None else resolved(info.path).get("process_results")
    return for_task(hook.resolve(), info.options) if isinstance(hook, FunctionTag) else None


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
