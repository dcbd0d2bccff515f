"""lmms-eval integration: task folders (one per benchmark), the ``scifig_chance`` model and task discovery."""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent
"""The folder lmms-eval searches for this package's task YAMLs (``scifig tasks-path``)."""
