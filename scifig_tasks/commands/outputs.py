"""Output folders of a command that fails: the ones it created and left empty are removed; the closing lines of a
command that wrote run files.

Rule: a command that ends with an error (a non-zero exit status, an exception, an interrupt) removes each folder of
its output paths that it created -- the path itself and the parents that did not exist when it started -- and that
holds no file (only empty folders, if any). A folder that existed before the command, or that holds a file (a
partial result, a log), is never removed. A command that succeeds keeps what it made, empty or not.

* :func:`run_handler`: a sub-command's handler run under the rule, its output paths read from the options named in
  :data:`OUTPUT_OPTIONS` (``scifig`` runs every handler through it, so every command that takes ``--out`` follows it).
* :func:`removed_if_failed`: the rule for a folder a command chooses itself (``scifig export-tsv``'s ``$LMUData``).
* :func:`next_step_lines`: how ``scifig eval`` and ``scifig vlmeval`` end: where the run's files are, and the
  ``scifig report`` command that reads them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

OUTPUT_OPTIONS = ("out", "json", "output_dir")
"""The options (argparse destinations) whose :class:`~pathlib.Path` value is where a command writes: a folder, or a
file whose folders it creates (``scifig compare --json FILE``, ``scifig curate scifibench-from-scicap --out FILE``)."""


def missing_folders(path: Path) -> list[Path]:
    """``path`` and each of its parents that does not exist now, deepest first: what creating ``path`` (or a file
    in it) would create."""
    missing = []
    current = Path(path).expanduser().absolute()
    while not current.exists() and not current.is_symlink() and current != current.parent:
        missing.append(current)
        current = current.parent
    return missing


def _holds_no_file(folder: Path) -> bool:
    """True when ``folder`` is a real folder (not a link) with nothing in it but empty folders."""
    if folder.is_symlink() or not folder.is_dir():
        return False
    for _root, folders, files in os.walk(folder):
        if files or any((Path(_root) / name).is_symlink() for name in folders):
            return False
    return True


def remove_empty(folders: Iterable[Path]) -> list[Path]:
    """Remove each of ``folders`` (deepest first) that exists and holds no file; returns the ones removed."""
    removed = []
    for folder in sorted(folders, key=lambda path: len(path.parts), reverse=True):
        if not _holds_no_file(folder):
            continue
        for root, inner, _files in os.walk(folder, topdown=False):
            for name in inner:
                with contextlib.suppress(OSError):
                    (Path(root) / name).rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def output_paths(args: argparse.Namespace) -> list[Path]:
    """The output paths ``args`` gives (:data:`OUTPUT_OPTIONS` holding a path)."""
    return [value for name in OUTPUT_OPTIONS if isinstance(value := getattr(args, name, None), Path)]


@contextlib.contextmanager
def removed_if_failed(*paths: Path | None) -> Iterator[list[Path]]:
    """Run the block; when it raises (an interrupt included, a ``SystemExit`` with a non-zero status), remove the
    folders of ``paths`` it created and left empty. Yields the folders that did not exist on entry: a block that
    fails by returning a status calls :func:`remove_empty` on them itself."""
    created = [folder for path in paths if path is not None for folder in missing_folders(path)]
    try:
        yield created
    except SystemExit as exc:
        if exc.code not in (0, None):
            remove_empty(created)
        raise
    except BaseException:
        remove_empty(created)
        raise


def run_handler(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace, *more: Path | None) -> int:
    """``handler(args)``; when it fails (a non-zero status or an exception), the output folders it created and left
    empty are removed (:func:`removed_if_failed`): those of ``args``'s output paths and of ``more``."""
    with removed_if_failed(*output_paths(args), *more) as created:
        status = handler(args)
        if status:
            remove_empty(created)
        return status


REPORT_FOLDER = "report"
"""Where the closing line's ``scifig report`` writes, under the command's output folder."""


def next_step_lines(command: str, written: Sequence[Path], output_path: str | Path) -> list[str]:
    """The closing lines of ``command`` (``scifig eval``, ``scifig vlmeval``) that wrote the run files ``written``
    (lmms-eval results files, VLMEvalKit scores files): where they are, and the ``scifig report`` command that reads
    them into ``output_path``'s :data:`REPORT_FOLDER`, quoted for a shell; no line when none was written."""
    if not written:
        return []
    paths = " ".join(shlex.quote(str(path)) for path in written)
    out = shlex.quote(str(Path(output_path) / REPORT_FOLDER))
    return [f"{command}: results in {', '.join(map(str, written))}", f"next: scifig report {paths} --out {out}"]
