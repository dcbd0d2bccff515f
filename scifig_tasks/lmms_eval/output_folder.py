"""``scifig eval``'s output folder (``--output_path``): one run at a time (:func:`run_lock`), and results and samples
files that are whole or an error (:func:`complete_files`).

Manual: docs/lmms-eval.md, "The output folder: one run at a time, whole files".
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.run_files import read_results, results_file_name, samples_file_name

try:
    import fcntl
except ImportError:  # no flock (Windows): runs on one folder are not serialised there
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".scifig-run.lock"
"""The file in the output folder a running ``scifig eval`` holds locked."""
STAGING_PREFIX = "scifig-writing-"
"""The staging folders' names in the temporary folder."""
EVALUATION_TRACKER = "lmms_eval.__main__.EvaluationTracker"
"""The run patch through which the results and samples files are written whole (:func:`complete_files`)."""
_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(Error|Exception)\(")
"""How lmms-eval's tracker logs the exception of a failed write: ``OSError(28, 'No space left on device')``."""


class FolderInUse(CommandError):
    """Another ``scifig eval`` run holds the output folder (exit status 1)."""

    def __init__(self, folder: Path, holder: str) -> None:
        by = f" (process {holder})" if holder else ""
        super().__init__(
            f"the output folder {folder} is in use by another scifig eval run{by}",
            "wait for it to end, or give another --output_path",
            status=1,
        )


class OutputWriteError(CommandError):
    """A results or samples file that could not be written whole; nothing is left under its name (exit status 1)."""

    def __init__(self, path: Path, reason: str, folder: Path) -> None:
        super().__init__(
            f"could not write {path} completely ({reason}); nothing is left under its name",
            f"free space under {folder} (or make it writable) and run the same command again, or give another "
            "--output_path",
            status=1,
        )


def _rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


@contextlib.contextmanager
def run_lock(output_path: str | Path | None) -> Iterator[None]:
    """Hold ``<output_path>/.scifig-run.lock`` exclusively within the block (the folder is created when missing);
    :class:`FolderInUse` when another process holds it. Nothing is locked without an output path, on a rank other
    than 0, or where ``fcntl`` is missing."""
    if output_path is None or fcntl is None or _rank() != 0:
        yield
        return
    folder = Path(output_path)
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderInUse(folder, _holder(descriptor)) from None
        with contextlib.suppress(OSError):  # the process id only serves the refusal line; a full disk may refuse it
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _holder(descriptor: int) -> str:
    """The process id written in the lock file ("" when it holds none)."""
    with contextlib.suppress(OSError):
        text = os.pread(descriptor, 32, 0).decode("ascii", errors="replace").strip()
        return text if text.isdigit() else ""
    return ""


def complete_files(tracker: type, written: list[Path] | None = None) -> type:
    """lmms-eval's ``EvaluationTracker`` (``tracker``) whose results and samples files are whole or an error
    (:class:`OutputWriteError`): written aside, checked, then renamed into place (the module's rule). The final path
    of each results file put in place is appended to ``written``."""

    class CompleteFilesTracker(tracker):  # type: ignore[misc, valid-type]
        def save_results_aggregated(self, results: Any, samples: Any, datetime_str: str, *args: Any, **kw: Any) -> Any:
            with _written_aside(self, results_file_name(datetime_str), _results_whole, written):
                return super().save_results_aggregated(results, samples, datetime_str, *args, **kw)

        def save_results_samples(self, task_name: str, samples: Any, *args: Any, **kw: Any) -> Any:
            name = samples_file_name(getattr(self, "date_id", ""), task_name)
            with _written_aside(self, name, functools.partial(_lines_whole, len(samples))):
                return super().save_results_samples(task_name, samples, *args, **kw)

    return CompleteFilesTracker


@contextlib.contextmanager
def _written_aside(
    tracker: Any, name: str, whole: Callable[[Path], str | None], published: list[Path] | None = None
) -> Iterator[None]:
    """Within the block ``tracker`` writes under a staging folder; afterwards its file ``name`` is checked with
    ``whole`` (the problem, or ``None``) and published (:func:`_publish`; its path appended to ``published``), or
    :class:`OutputWriteError` is raised."""
    output_path = tracker.output_path
    if not output_path:
        yield
        return
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX))
    logged: list[str] = []
    tracker.output_path = str(staging)
    try:
        with _logged_exceptions(logged):
            yield
        folder = Path(output_path)
        subfolder = Path(getattr(tracker.general_config_tracker, "model_name_sanitized", None) or "")
        staged, final = staging / subfolder / name, folder / subfolder / name
        problem = whole(staged)
        if problem is not None:
            raise OutputWriteError(final, logged[-1] if logged else problem, folder)
        if staged.exists():
            _publish(staged, final, folder)
            if published is not None:
                published.append(final)
    finally:
        tracker.output_path = output_path
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _logged_exceptions(found: list[str]) -> Iterator[None]:
    """Collect in ``found`` the exceptions lmms-eval's tracker logs within the block (it logs ``repr(e)`` after
    "Could not save ...", then goes on)."""
    from loguru import logger

    def keep(message: Any) -> None:
        text = message.record["message"]
        if _EXCEPTION.match(text):
            found.append(text)

    handler = logger.add(keep, level="DEBUG", format="{message}", filter="lmms_eval.loggers.evaluation_tracker")
    try:
        yield
    finally:
        logger.remove(handler)


def _results_whole(path: Path) -> str | None:
    """What is wrong with the results file ``path`` (``None``: JSON with a ``results`` mapping)."""
    if not path.is_file():
        return "lmms-eval did not write it"
    try:
        read_results(path)
    except (OSError, ValueError) as exc:  # a DataError, or UTF-8 cut inside a character
        return f"what lmms-eval wrote is not whole: {exc}"
    return None


def _lines_whole(expected: int, path: Path) -> str | None:
    """What is wrong with the samples file ``path`` (``None``: ``expected`` lines, each ended; no file for none)."""
    if not path.is_file():
        return None if expected == 0 else "lmms-eval did not write it"
    lines, last = 0, b"\n"
    with path.open("rb") as handle:
        for chunk in iter(functools.partial(handle.read, 1 << 20), b""):
            lines, last = lines + chunk.count(b"\n"), chunk[-1:]
    if lines != expected or last != b"\n":
        return f"lmms-eval wrote {lines} whole lines of {expected}"
    return None


def _publish(staged: Path, final: Path, folder: Path) -> None:
    """Copy ``staged`` beside ``final`` under a name no reader matches, flush it to disk and rename it onto ``final``;
    :class:`OutputWriteError` naming ``final`` when a step fails (the partial copy removed)."""
    temporary = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        with staged.open("rb") as source, open(temporary, "xb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
            target.flush()
            os.fsync(target.fileno())
        os.replace(temporary, final)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise OutputWriteError(final, repr(exc), folder) from exc


REPORT_FOLDER = "report"
"""The report folder the closing line of ``scifig eval`` suggests: ``<--output_path>/report``."""


def next_step_lines(written: list[Path], output_path: str | Path) -> list[str]:
    """The closing lines of a ``scifig eval`` that wrote the results files ``written``: where they are, and the
    ``scifig report`` command that reads them (no line when none was written)."""
    import shlex

    if not written:
        return []
    paths = " ".join(shlex.quote(str(path)) for path in written)
    out = shlex.quote(str(Path(output_path) / REPORT_FOLDER))
    return [f"scifig eval: results in {', '.join(map(str, written))}", f"next: scifig report {paths} --out {out}"]
