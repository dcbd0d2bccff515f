"""lmms-eval integration: task discovery, the ``scifig_chance`` model, patches and the reply cache; each benchmark's
task folder lives in its package (``scifig_tasks/benchmarks/<name>/tasks``)."""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
"""The folder holding the built-in benchmarks, each with its task folder (``scifig tasks-path``)."""


def task_folders() -> list[Path]:
    """The task folder of every registered benchmark (scifig's own and those of installed packages), resolved."""
    from scifig_tasks.core import registry

    return [Path(described.task_folder).resolve() for described in registry.benchmarks().values()]


def in_task_folder(path: Path | str) -> bool:
    """Whether ``path`` (a task YAML) lies in a registered benchmark's task folder."""
    resolved = Path(path).resolve()
    return any(folder == resolved.parent or folder in resolved.parents for folder in task_folders())
