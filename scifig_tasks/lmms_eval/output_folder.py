"""``scifig eval``'s output folder (``--output_path``): one run at a time (:func:`run_lock`, which ``scifig vlmeval``
takes on its work dir too), results and samples files that are whole or an error (:func:`complete_files`), and a run
whose model requests failed said so in its results file, under its printed table and in its last line
(:func:`count_requests`, :func:`failed_requests_line`).

Manual: docs/lmms-eval.md, "The output folder: one run at a time, whole files"; docs/cli.md, "A failed model request
fails the run".
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.raw_outputs import REQUEST_FAILED_MARKER, output_status
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
    """Another scifig run (``scifig eval``, ``scifig vlmeval``) holds the folder (exit status 1): the line names the
    folder, the process holding it and the lock file, and says which option gives another folder."""

    def __init__(self, folder: Path, holder: str, what: str = "output folder", option: str = "--output_path") -> None:
        by = f"process {holder}, " if holder else ""
        super().__init__(
            f"the {what} {folder} is in use by another scifig run ({by}lock file {folder / LOCK_FILE})",
            f"wait for it to end, or give another {option}",
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


class StagingWriteError(CommandError):
    """A results or samples file lmms-eval could not write in its staging folder, under the temporary folder: the
    line names that folder and the variable that chose it, not the output folder (exit status 1)."""

    def __init__(self, path: Path, reason: str) -> None:
        folder, variable = temporary_folder()
        chosen = f"{variable}={folder}" if variable else f"{folder}, the system's temporary folder"
        super().__init__(
            f"could not write {path} completely: it is written first in the temporary folder ({chosen}), where the "
            f"write failed ({reason}); nothing is left under its name",
            f"free space in {folder}, or set TMPDIR to a folder with room, and run the same command again",
            status=1,
        )


def temporary_folder() -> tuple[str, str | None]:
    """The folder Python's ``tempfile`` writes in, and the variable that chose it (``TMPDIR``, ``TEMP`` or ``TMP``,
    the first set to that folder; ``None``: none did, it is the system's)."""
    folder = tempfile.gettempdir()
    for variable in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(variable)
        if value and os.path.abspath(value) == os.path.abspath(folder):
            return folder, variable
    return folder, None


def _rank() -> int:
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


@contextlib.contextmanager
def run_lock(
    output_path: str | Path | None, what: str = "output folder", option: str = "--output_path"
) -> Iterator[None]:
    """Hold ``<output_path>/.scifig-run.lock`` exclusively within the block (the folder is created when missing);
    :class:`FolderInUse` (naming the folder as ``what`` and the ``option`` that gives another) when another process
    holds it. Nothing is locked without an output path, on a rank other than 0, or where ``fcntl`` is missing."""
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
            raise FolderInUse(folder, _holder(descriptor), what, option) from None
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


def complete_files(
    tracker: type, written: list[Path] | None = None, annotate: Callable[[Any], None] | None = None
) -> type:
    """lmms-eval's ``EvaluationTracker`` (``tracker``) whose results and samples files are whole or an error
    (:class:`OutputWriteError`): written aside, checked, then renamed into place (the module's rule). The final path
    of each results file put in place is appended to ``written``; ``annotate(results)`` adds scifig's entries to the
    results before they are written (and printed: the CLI prints the same dictionary afterwards)."""

    class CompleteFilesTracker(tracker):  # type: ignore[misc, valid-type]
        def save_results_aggregated(self, results: Any, samples: Any, datetime_str: str, *args: Any, **kw: Any) -> Any:
            if annotate is not None:
                annotate(results)
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
    :class:`StagingWriteError` (the staging folder, in the temporary folder, could not take it) or
    :class:`OutputWriteError` (the output folder could not) is raised."""
    output_path = tracker.output_path
    if not output_path:
        yield
        return
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX))
    except OSError as exc:
        raise StagingWriteError(Path(output_path) / name, repr(exc)) from exc
    logged: list[str] = []
    tracker.output_path = str(staging)
    try:
        with _logged_exceptions(logged):
            yield
        folder = Path(output_path)
        subfolder = Path(getattr(tracker.general_config_tracker, "model_name_sanitized", None) or "")
        staged, final = staging / subfolder / name, folder / subfolder / name
        problem = whole(staged)
        if problem is not None:  # the write that failed is lmms-eval's, in the staging folder
            raise StagingWriteError(final, logged[-1] if logged else problem)
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


# --- model requests that failed ----------------------------------------------------------------------------------

REQUESTS_KEY = "scifig_model_requests"
"""The results file's entry on the run's model requests (:func:`requests_entry`): ``status`` ``failed`` when any
failed."""
FIRST_ERROR_CHARS = 200
"""How much of the first failure's error the line and the results file keep."""


@dataclass
class RequestCount:
    """The model requests of a run: how many were answered and how many failed, per task, and the first failure's
    error. A request is one reply (each repeat of a sampled question is one); a reply is failed when it is a
    framework's failure marker (:func:`scifig_tasks.core.raw_outputs.output_status`: lmms-eval's
    ``[LMMS_EVAL_REQUEST_FAILED ...]``, VLMEvalKit's ``Failed to obtain answer ...``); an empty reply is the model's
    answer, not a failed request."""

    failed: int = 0
    total: int = 0
    first_error: str | None = None
    tasks: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, task: str, reply: Any) -> None:
        """Count one reply of ``task`` (a multi-round reply, a list, is one request: failed when a round failed)."""
        texts = [item for item in reply if isinstance(item, str)] if isinstance(reply, list) else [reply]
        failures = [text for text in texts if isinstance(text, str) and output_status(text) == "request_failed"]
        counts = self.tasks.setdefault(task, {"failed": 0, "total": 0})
        counts["total"] += 1
        self.total += 1
        if failures:
            counts["failed"] += 1
            self.failed += 1
            if self.first_error is None:
                self.first_error = failure_error(failures[0])


def failure_error(reply: str) -> str:
    """The error a failure marker carries, on one line, secrets masked (an error may quote the key it was sent:
    :func:`scifig_tasks.core.secrets.mask_credentials` with the labels of the process's secrets): lmms-eval's
    ``[LMMS_EVAL_REQUEST_FAILED after N retries] ERROR`` gives ``ERROR``; any other marker (VLMEvalKit's, which
    carries none) is given whole."""
    from scifig_tasks.core import settings
    from scifig_tasks.core.secrets import mask_credentials

    text = reply.strip()
    if text.startswith(REQUEST_FAILED_MARKER) and "]" in text:
        text = text.split("]", 1)[1].strip() or text
    return mask_credentials(" ".join(text.split()), settings.process_secrets())[:FIRST_ERROR_CHARS]


def count_requests(tasks: Iterable[Any]) -> RequestCount:
    """The requests of the built lmms-eval ``tasks`` (each instance's ``resps``: one reply per repeat), by task name,
    the tasks in name order (so the first error is the same whatever order they were built in)."""
    count = RequestCount()
    named = sorted(((_task_name(task), task) for task in tasks), key=lambda item: item[0])
    for name, task in named:
        for instance in getattr(task, "instances", None) or []:
            for reply in getattr(instance, "resps", None) or []:
                count.add(name, reply)
    return count


def _task_name(task: Any) -> str:
    return str(getattr(getattr(task, "config", None), "task", None) or type(task).__name__)


def failed_requests_line(count: RequestCount, endpoint: str | None) -> str:
    """What ``scifig eval`` and ``scifig vlmeval`` say of a run whose model requests failed (after ``FAILED:``): how
    many of how many, the endpoint (credentials already masked) and the first error, what the scores are worth and
    what to do."""
    where = f"endpoint {endpoint}; " if endpoint else ""
    return (
        f"{count.failed} of {count.total} model requests failed ({where}first error: {count.first_error}) — the "
        "scores count them as wrong answers; check that the model server is up, its address and its API key, then "
        "run the same command again"
    )


def requests_entry(count: RequestCount, endpoint: str | None) -> dict[str, Any]:
    """The results file's :data:`REQUESTS_KEY` entry: ``status`` (``failed`` when any request failed, else ``ok``),
    the counts, overall and per task, the endpoint, the first error and the line (``None`` when nothing failed)."""
    failed = count.failed > 0
    return {
        "status": "failed" if failed else "ok",
        "failed": count.failed,
        "total": count.total,
        "endpoint": endpoint,
        "first_error": count.first_error,
        "tasks": count.tasks,
        "message": failed_requests_line(count, endpoint) if failed else None,
    }


def failed_requests(results: Any) -> str | None:
    """The line of a results dictionary whose :data:`REQUESTS_KEY` entry says requests failed (None otherwise)."""
    entry = results.get(REQUESTS_KEY) if isinstance(results, dict) else None
    if isinstance(entry, dict) and entry.get("status") == "failed":
        return str(entry.get("message"))
    return None


class RunRequests:
    """The model requests of the lmms-eval configuration that runs now: the tasks lmms-eval builds while
    :meth:`noting` (noted by the data-loading patch, :func:`scifig_tasks.lmms_eval.plugin.noting_tasks`) and the
    model's endpoint; :meth:`annotate` puts their count into the configuration's results."""

    def __init__(self) -> None:
        self.tasks: list[Any] = []
        self.endpoint: str | None = None

    @contextlib.contextmanager
    def noting(self, endpoint: str | None) -> Iterator[None]:
        """Within the block, the tasks built are this configuration's (the previous one's are forgotten)."""
        from scifig_tasks.lmms_eval.plugin import noting_tasks

        self.tasks, self.endpoint = [], endpoint
        with noting_tasks(self.tasks):
            yield

    def annotate(self, results: Any) -> None:
        """Add the :data:`REQUESTS_KEY` entry to ``results`` (lmms-eval's results dictionary), in place."""
        if isinstance(results, dict):
            results[REQUESTS_KEY] = requests_entry(count_requests(self.tasks), self.endpoint)
