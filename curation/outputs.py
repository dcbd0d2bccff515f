"""Where the ``scifig curate`` commands write, and how each ends: the output paths checked before any work starts,
every failure said in one line, ``scifig curate <command>: <problem>``, with its exit status (2 for a bad argument,
bad input data or an output that cannot be written, 1 for a write failing mid-build). The manual: docs/curation.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from scifig_tasks.commands.outputs import run_handler
from scifig_tasks.core.errors import CommandError

BAD_INPUT = 2
"""Exit code of a curate command stopped by a bad argument, bad input data or an output it cannot write."""

Built = TypeVar("Built")


def out_problem(path: Path, *, file: bool = False) -> str | None:
    """Why ``path`` cannot be written, or ``None``: a directory to create or fill (``file=False``) or a file to
    create or replace (``file=True``). A build can run long before it writes its first file, so the check creates
    and removes a probe file in the nearest existing folder: nothing is left behind."""
    path = Path(path).expanduser()
    if path.exists():
        if file and path.is_dir():
            return f"{path} is a directory, expected a file path"
        if not file and not path.is_dir():
            return f"{path} exists and is not a directory"
    folder = path.parent if file or not path.exists() else path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"cannot create {path}: {folder} is not a directory"
    try:
        handle, probe = tempfile.mkstemp(prefix=".scifig-write-probe-", dir=folder)
    except OSError as exc:
        return f"cannot write {path}: {folder} is not writable ({exc.strerror or exc})"
    os.close(handle)
    os.unlink(probe)
    return None


def fail(command: str, problem: object, code: int = BAD_INPUT) -> int:
    """Print ``scifig curate <command>: <problem>`` (one line) on stderr; return ``code``."""
    text = " ".join(str(problem).split())
    print(f"scifig curate {command}: {text}", file=sys.stderr)
    return code


def run_build(
    command: str,
    build: Callable[[], Built],
    report: Callable[[Built], object],
    *outputs: Path | None,
    file: bool = False,
) -> int:
    """The body of every curate command: each of ``outputs`` checked (:func:`out_problem`; ``file``: they are files),
    then ``build()``, then ``report(built)`` (the lines that say what was written); the exit status. A failure ends
    it in one line (:func:`fail`): a :class:`~scifig_tasks.core.errors.CommandError` (CLIP weights that cannot be had)
    with its status, bad input data or a bad argument (``ValueError``, ``DataError`` included) with 2, an unreadable
    input or a write failing mid-build (``OSError``) with 1."""
    for path in outputs:
        problem = None if path is None else out_problem(path, file=file)
        if problem is not None:
            return fail(command, problem)
    try:
        built = build()
    except CommandError as exc:
        return fail(command, f"{exc.what} — {exc.todo}" if exc.todo else exc.what, exc.status)
    except ValueError as exc:
        return fail(command, exc)
    except OSError as exc:
        return fail(command, exc, 1)
    report(built)
    return 0


def stand_alone(
    register: Callable[[Any], None], argv: Sequence[str] | None, prog: str, description: str, dest: str = "command"
) -> int:
    """Run a benchmark's curate commands outside ``scifig`` (``python -m curation.<bench>.cli ...``): its
    ``register(subparsers)`` under a parser of its own, the chosen command's handler run as ``scifig curate`` runs it
    (a failed build removes the empty folders it made)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    register(parser.add_subparsers(dest=dest, required=True))
    args = parser.parse_args(argv)
    return run_handler(args.handler, args)
