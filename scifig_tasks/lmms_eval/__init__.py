"""lmms-eval integration: task folders (one per benchmark), the ``scifig_chance`` model and task discovery."""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent
"""The folder holding scifig's own task folders (``scifig tasks-path``)."""


def task_folders() -> list[Path]:
    """The task folder of every registered benchmark (scifig's own and those of installed packages), resolved."""
    from scifig_tasks.core import registry

    return [Path(described.task_folder).resolve() for described in registry.benchmarks().values()]


def in_task_folder(path: Path | str) -> bool:
    """Whether ``path`` (a task YAML) lies in a registered benchmark's task folder."""
    resolved = Path(path).resolve()
    return any(folder == resolved.parent or folder in resolved.parents for folder in task_folders())
