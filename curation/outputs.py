"""Where the ``scifig curate`` commands write, and how each ends: the output paths checked before any work starts,
the output folder held by one command at a time, every failure said in one line, ``scifig curate <command>:
<problem>``, with its exit status (2 for a bad argument, bad input data or an output that cannot be written, 1 for a
folder another command holds or a write failing mid-build). The manual: docs/curation.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
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


def use_data_line(variable: str, folder: Path | str) -> str:
    """The line a build ends with: ``use VARIABLE=FOLDER``, the folder absolute (``~`` expanded) and quoted for a
    shell, so the line can be pasted in any folder (the dataset card keeps the command line as it was given)."""
    return f"use {variable}={shlex.quote(str(Path(folder).expanduser().absolute()))}"


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
    then, holding the first output folder (:func:`held_folder`; a folder another command holds ends it with status
    1), ``build()`` and ``report(built)`` (the lines that say what was written); the exit status. A failure ends
    it in one line (:func:`fail`): a :class:`~scifig_tasks.core.errors.CommandError` (CLIP weights that cannot be had)
    with its status, bad input data or a bad argument (``ValueError``, ``DataError`` included) with 2, an unreadable
    input or a write failing mid-build (``OSError``) with 1."""
    for path in outputs:
        problem = None if path is None else out_problem(path, file=file)
        if problem is not None:
            return fail(command, problem)
    folder = None if file or not outputs or outputs[0] is None else Path(outputs[0]).expanduser()
    return held_folder(command, folder, lambda: _built(command, build, report))


def _built(command: str, build: Callable[[], Built], report: Callable[[Built], object]) -> int:
    """``build()`` then ``report(built)``; the exit status, a failure said in one line (:func:`run_build`)."""
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


def held_folder(command: str, folder: Path | None, body: Callable[[], int]) -> int:
    """Rule: one command at a time writes to an output folder. ``body()`` runs while this process holds ``folder``'s
    lock file, the one ``scifig eval`` holds on its ``--output_path``
    (:func:`scifig_tasks.lmms_eval.output_folder.run_lock`: ``fcntl.flock``, released by the system however the
    process ends); a folder another process holds ends the command at once in one line naming the folder, the
    process and the lock file, status 1. The lock file stays after a build that succeeds; after one that fails it is
    removed when it is all the folder holds, so the folder is removed like any a failed command created and left
    empty (docs/cli.md). ``folder`` ``None``: nothing to hold."""
    from scifig_tasks.lmms_eval.output_folder import LOCK_FILE, FolderInUse, run_lock

    if folder is None:
        return body()
    lock = folder / LOCK_FILE
    try:
        with run_lock(folder, "output folder", "--out"):  # body() says its own errors: a FolderInUse is the lock's
            status = 1
            try:
                status = body()
            finally:
                if status != 0 and _holds_only(folder, lock):
                    lock.unlink(missing_ok=True)
            return status
    except FolderInUse as exc:
        return fail(command, f"{exc.what} — {exc.todo}", exc.status)


def _holds_only(folder: Path, lock: Path) -> bool:
    """Whether ``lock`` is the only file under ``folder`` (empty sub-folders aside)."""
    found = (Path(root) / name for root, _folders, files in os.walk(folder) for name in files)
    return all(path == lock for path in found)


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
