"""``scifig eval``'s output folder (``--output_path``): one run at a time, results and samples files that are complete
or an error, and a failure inside the run said in one line (lmms-eval's traceback only under ``scifig --debug``).

Every test runs the real ``scifig eval`` in a subprocess with the offline ``scifig_chance`` model on four GRAB
questions (one per task):

* One run at a time: the test process holds the folder's lock itself (``fcntl.flock`` on ``OUT/.scifig-run.lock``, as
  a running ``scifig eval`` does) instead of racing two runs; ``scifig eval`` on that folder is refused in one line
  that names the folder and says what to do, before lmms-eval starts (nothing is written there).
* A full disk, simulated portably: mounting a small tmpfs needs root, so the run's process gets a file-size limit
  (``resource.setrlimit(RLIMIT_FSIZE)`` in the child, through ``preexec_fn``). Every write past the limit then fails
  with EFBIG ("File too large") where a full disk fails with ENOSPC, and lmms-eval treats both alike (it logs the
  ``OSError`` and goes on, exit status 0). The limit is above every other file the run writes (the data cache, about
  3 KB; the samples files, under 1 KB) and below the results file (about 25 KB).
* A failure inside the run: a GRAB gold answer ``nan`` (refused when the data is loaded, before any model call).
"""

from __future__ import annotations

import fcntl
import os
import re
import resource
import subprocess
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.grab_data import Row, records, write_parquet, write_records
from tests.harness.lmms import CLI_TIMEOUT_S, _executable, offline_env

ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")]
LOCK = ".scifig-run.lock"
FILE_SIZE_LIMIT = 12 * 1024
"""Bytes: more than the data cache and the samples files of the run, less than its results file."""

pytestmark = [pytest.mark.slow, pytest.mark.cli]


def scifig_eval(
    args: list[str], env: dict[str, str], limit_file_size: bool = False
) -> subprocess.CompletedProcess[str]:
    """``scifig ARGS`` in a subprocess (``limit_file_size``: every file it writes is cut at :data:`FILE_SIZE_LIMIT`,
    set in a fresh process before it starts)."""
    if not limit_file_size:
        return warm_start.run([_executable("scifig"), *args], env, timeout=CLI_TIMEOUT_S)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))

    return subprocess.run(
        [_executable("scifig"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        preexec_fn=limit,
    )


def grab_env(tmp_path: Path, answer: str = "5") -> dict[str, str]:
    """An offline environment pointing GRAB at four questions (the third one's gold answer ``answer``)."""
    rows = records(ROWS)
    rows[2]["answer"] = answer
    data = write_records(rows, tmp_path / "data" / "GRAB.parquet")
    return {**offline_env(tmp_path), "SCIFIG_GRAB_DATA": str(data)}


def lines_of(completed: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in (completed.stdout + completed.stderr).splitlines() if line.startswith(prefix)]


def lock_is_free(folder: Path) -> bool:
    with open(folder / LOCK, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def test_a_folder_another_run_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    out.mkdir()
    env = {**offline_env(tmp_path), "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "data" / "GRAB.parquet"))}
    with open(out / LOCK, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the first run holds it
        held.truncate(0)
        held.write(f"{os.getpid()}\n".encode())
        held.flush()
        completed = scifig_eval(
            ["eval", "--model", "scifig_chance", "--tasks", "grab", "--limit", "1", "--output_path", str(out)], env
        )
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stderr.splitlines() == [
        f"scifig eval: the output folder {out} is in use by another scifig run (process {os.getpid()}, lock file "
        f"{out / LOCK}) — wait for it to end, or give another --output_path"
    ]
    assert sorted(path.name for path in out.iterdir()) == [LOCK]  # no cache folder, no results: lmms-eval never ran


def test_a_file_that_cannot_be_written_completely_fails_the_run_naming_it(tmp_path: Path) -> None:
    out, staging = tmp_path / "runs", tmp_path / "tmp"
    staging.mkdir()
    env = {**grab_env(tmp_path), "TMPDIR": str(staging)}
    args = ["eval", "--model", "scifig_chance", "--tasks", "grab", "--limit", "1", "--log_samples", "--no-cache"]

    completed = scifig_eval([*args, "--output_path", str(out)], env, limit_file_size=True)

    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output[-4000:]
    (failed,) = lines_of(completed, "scifig eval: FAILED")
    assert re.fullmatch(
        rf"scifig eval: FAILED: could not write {re.escape(str(out))}/\d{{8}}_\d{{6}}_results\.json completely: it "
        rf"is written first in the temporary folder \(TMPDIR={re.escape(str(staging))}\), where the write failed "
        r"\(OSError\(27, 'File too large'\)\); nothing is left under its name — free space in "
        rf"{re.escape(str(staging))}, or set TMPDIR to a folder with room, and run the same command again",
        failed,
    ), failed
    assert "Traceback" not in output and "Error during evaluation" not in output, output[-4000:]
    written = sorted(path.relative_to(out) for path in out.rglob("*") if path.is_file())
    assert written == [Path(LOCK)], written  # no results file, no samples file, no half-written file under a name
    assert not list(staging.glob("scifig-writing-*"))  # what lmms-eval wrote aside is gone
    assert lock_is_free(out)  # released when the run ended


def test_a_failure_inside_the_run_is_one_line_and_the_traceback_only_under_debug(tmp_path: Path) -> None:
    env = grab_env(tmp_path, answer="nan")
    args = ["eval", "--model", "scifig_chance", "--tasks", "grab", "--no-cache", "--output_path", str(tmp_path / "o")]
    refusal = (
        f"scifig eval: FAILED: DataError: {tmp_path / 'data' / 'GRAB.parquet'}, row 2 (0-based), column 'answer': "
        "'nan' reads as nan, not a finite number"
    )

    quiet = scifig_eval(args, env)
    debug = scifig_eval(["--debug", *args], env)

    for completed in (quiet, debug):
        assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
        (failed,) = lines_of(completed, "scifig eval: FAILED")
        assert failed.startswith(refusal), failed
    quiet_output = quiet.stdout + quiet.stderr
    assert "Traceback" not in quiet_output and "Error during evaluation" not in quiet_output, quiet_output[-4000:]
    assert "Traceback (most recent call last)" in debug.stdout + debug.stderr
