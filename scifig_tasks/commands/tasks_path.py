"""``scifig tasks-path``: print the folder of the scifig lmms-eval tasks, for ``lmms-eval --include_path``. How
lmms-eval finds the tasks without it: docs/lmms-eval.md; how the command line is built: docs/cli.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP

DESCRIPTION = """\
Print the folder holding the scifig task definitions, to give to lmms-eval's --include_path. An installed scifig
makes lmms-eval find the tasks without it; the explicit form also lists them in "lmms-eval tasks list"."""

EPILOG = """\
example:
  lmms-eval --include_path "$(scifig tasks-path)" --model openai --tasks grab --output_path runs"""


def tasks_path() -> Path:
    """The folder of the scifig lmms-eval tasks."""
    from scifig_tasks.lmms_eval import TASKS_DIR

    return TASKS_DIR


def register(commands: Any) -> None:
    """Add ``scifig tasks-path`` to the ``scifig`` command line."""
    parser = commands.add_parser("tasks-path", help=HELP["tasks-path"], description=DESCRIPTION, epilog=EPILOG)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print :func:`tasks_path`."""
    print(tasks_path())
    return 0
