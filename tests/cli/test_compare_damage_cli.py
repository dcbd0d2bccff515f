"""``scifig compare`` on damaged runs and with a ``--json`` file that cannot be written, through the real command line.

Two runs written here in lmms-eval's format (a results file counting six GRAB questions and their sample log; no model
run). A sample log emptied (0 bytes) or cut in the middle of a line is refused in one line that names the log, says
it is empty or unreadable while the results file counts 6 samples and that the run must be evaluated again, exit
status 1 (not "only A has it", not "build it again with scifig curate"). ``--json FILE`` on a full disk (the child's
``RLIMIT_FSIZE`` set to 64 bytes through ``preexec_fn``: a write past it fails with EFBIG, as on a full disk, while
Python's start-up still finds a temporary folder) exits 1 with one line naming the file and leaves the file as it was:
no partial or empty file, no temporary file.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env

TASK = "grab_functions"
N = 6
PREFIX = "20250101_000000"


def write_run(folder: Path, model: str, right: set[int]) -> Path:
    """One model's ``grab_functions`` run of :data:`N` questions (pids 100..), the ones in ``right`` right."""
    folder.mkdir(parents=True)
    results = {
        "results": {TASK: {"alias": TASK, "accuracy,none": len(right) / N}},
        "versions": {TASK: "2.2"},
        "n-samples": {TASK: {"original": N, "effective": N}},
        "model_name": model,
        "date": PREFIX,
    }
    (folder / f"{PREFIX}_results.json").write_text(json.dumps(results))
    lines = []
    for doc in range(N):
        record = {"pid": 100 + doc, "task": "function", "category": "Extrema", "complexity": 0}
        record |= {"correct": int(doc in right), "output_status": "ok", "judge": "not_used", "extracted": None}
        lines.append(json.dumps({"doc_id": doc, "breakdown": record, "filtered_resps": ["7"]}) + "\n")
    (folder / f"{PREFIX}_samples_{TASK}.jsonl").write_text("".join(lines))
    return folder


def scifig_compare(*args: str | Path, env: dict[str, str], before: Callable[[], None] | None = None):
    """``scifig compare ARGS`` in a subprocess (``before`` runs in a fresh child before it starts)."""
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "compare", *map(str, args)]
    if before is None:
        return warm_start.run(command, env | {"PYTHONDONTWRITEBYTECODE": "1"}, timeout=CLI_TIMEOUT_S)
    return subprocess.run(
        command,
        env=env | {"PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        preexec_fn=before,
    )


FULL_AT = 64
"""Bytes a file may hold in the child: the comparison's JSON (about 1 kB) does not fit."""


def full_disk() -> None:
    """In the child: no regular file may grow past :data:`FULL_AT` bytes (writes fail with EFBIG)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FULL_AT, FULL_AT))


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    a = write_run(tmp_path / "a", "model-a", {0, 1, 2})
    b = write_run(tmp_path / "b", "model-b", {0, 1, 2, 3, 4})
    return a, b, offline_env(tmp_path / "env")


@pytest.mark.slow
@pytest.mark.cli
def test_an_empty_or_cut_sample_log_is_refused_naming_the_file(runs: tuple[Path, Path, dict[str, str]]) -> None:
    a, b, env = runs
    log = b / f"{PREFIX}_samples_{TASK}.jsonl"
    whole = log.read_text()
    todo = "run the evaluation of B again with --log_samples, or restore the log from a copy of the run"

    log.write_bytes(b"")
    done = scifig_compare(a, b, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"scifig compare: B ({b}): the sample log {log} is empty while its results file {PREFIX}_results.json counts "
        f"{N} samples of {TASK} — {todo}"
    ]
    assert "only A has it" not in done.stdout

    log.write_text(whole[: len(whole) - 40])  # the last line cut in the middle (a write that did not finish)
    done = scifig_compare(a, b, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"scifig compare: B ({b}): the sample log {log} is unreadable (line {N}: not valid JSON")
    assert line.endswith(f"while its results file {PREFIX}_results.json counts {N} samples of {TASK} — {todo}")
    assert "curate" not in line


@pytest.mark.slow
@pytest.mark.cli
def test_json_on_a_full_disk_leaves_no_partial_file(runs: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    a, b, env = runs
    target = tmp_path / "out" / "comparison.json"
    target.parent.mkdir()
    target.write_text('{"earlier": "comparison"}')

    done = scifig_compare(a, b, "--json", target, env=env, before=full_disk)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"scifig compare: could not write {target} (File too large)"), line
    assert target.read_text() == '{"earlier": "comparison"}'  # the earlier file as it was, never a partial one
    assert [path.name for path in target.parent.iterdir()] == ["comparison.json"]  # no temporary file left

    done = scifig_compare(a, b, "--json", target, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = [e for e in json.loads(target.read_text())["comparisons"] if e["status"] == "compared"]
    assert (entry["task"], entry["n"], entry["only_b"]) == (TASK, N, 2)
    assert [path.name for path in target.parent.iterdir()] == ["comparison.json"]
