"""The tasks and groups of the registered benchmarks' lmms-eval task folders, read from their YAMLs as text.

Each YAML's ``task`` (a task) or ``group`` with its ``task`` list (a group) and its ``metadata`` (the ``scifig_*``
facts ``scifig tasks`` lists); ``!function`` tags are read as ``None``, so nothing of lmms-eval is imported and the
read is quick. The folders are each registered benchmark's ``task_folder`` (:mod:`scifig_tasks.core.registry`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry

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

    @property
    def is_group(self) -> bool:
        return bool(self.members)

    def fact(self, key: str) -> str:
        """``metadata.scifig_<key>`` as text, or :data:`NO_VALUE`."""
        value = self.metadata.get(f"scifig_{key}")
        return NO_VALUE if value in (None, "") else str(value)


class _TaglessLoader:
    """A PyYAML safe loader that reads ``!function x`` (and any other tag) as ``None``."""

    _cls: Any = None

    @classmethod
    def get(cls) -> Any:
        if cls._cls is None:
            import yaml

            class Loader(yaml.SafeLoader):
                pass

            Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
            cls._cls = Loader
        return cls._cls


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaglessLoader.get())
    return config if isinstance(config, dict) else {}


def scifig_tasks(folders: Mapping[str, Path] | None = None) -> dict[str, TaskInfo]:
    """Every task and group of the benchmarks' task folders (default: every registered benchmark's) by name, in listing
    order (benchmark, then name)."""
    found: list[TaskInfo] = []
    if folders is None:
        folders = {name: Path(described.task_folder) for name, described in registry.benchmarks().items()}
    for benchmark, folder in folders.items():
        for path in sorted(Path(folder).glob("*.yaml")):
            config = _read_yaml(path)
            members = config.get("task")
            if isinstance(members, list):
                name = config.get("group")
                members = [str(m) for m in members if isinstance(m, str)]
            else:
                name, members = members, []
            if not isinstance(name, str):
                continue
            metadata = config.get("metadata")
            found.append(TaskInfo(name, benchmark, path, members, metadata if isinstance(metadata, dict) else {}))
    return {info.name: info for info in found}


def top_level(tasks: dict[str, TaskInfo]) -> list[TaskInfo]:
    """The tasks and groups that are in no group: what a user runs."""
    inside = {member for info in tasks.values() for member in info.members}
    return [info for info in tasks.values() if info.name not in inside]
