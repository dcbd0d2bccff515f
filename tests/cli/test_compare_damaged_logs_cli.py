"""A sample log damaged in ways that keep it a plausible file: a byte that is not UTF-8, one whole line deleted.

Two runs written here in lmms-eval's format (``tests/cli/test_compare_damage_cli.py``'s: a results file counting six
GRAB questions and their sample log; no model run), run B's log then damaged.

* Not UTF-8: ``scifig compare`` (a subprocess) refuses B in one line naming the log, the line and the byte offset of
  the first byte that does not decode, and what was expected, exit status 1 (not a bare codec error naming no file);
  ``scifig report`` and ``scifig rescore`` (in-process through ``main``, the same reader) name the log too.
* One line deleted: doc ids 0..5 counted by the results file (``n-samples``), doc id 3 absent from the log.
  ``scifig compare`` refuses B in one line naming the log and the missing doc id, exit status 1 (not "different
  questions" with exit status 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_compare_damage_cli import PREFIX, TASK, N, scifig_compare, write_run
from tests.harness.lmms import offline_env

TODO = "run the evaluation of B again with --log_samples, or restore the log from a copy of the run"

pytestmark = [pytest.mark.slow, pytest.mark.cli]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    a = write_run(tmp_path / "a", "model-a", {0, 1, 2})
    b = write_run(tmp_path / "b", "model-b", {0, 1, 2, 3, 4})
    return a, b, offline_env(tmp_path / "env")


def not_utf8(log: Path, line: int) -> int:
    """Replace the first ``7`` of the 0-based ``line`` of ``log`` by the byte 0xff; its byte offset in the file."""
    data = log.read_bytes()
    start = sum(len(text) for text in data.splitlines(keepends=True)[:line])
    offset = data.index(b'"7"', start) + 1
    log.write_bytes(data[:offset] + b"\xff" + data[offset + 1 :])
    return offset


def test_a_log_that_is_not_utf8_is_refused_naming_the_file_line_and_byte(
    runs: tuple[Path, Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b, env = runs
    log = b / f"{PREFIX}_samples_{TASK}.jsonl"
    offset = not_utf8(log, 3)
    problem = (
        f"line 4: not UTF-8: byte 0xff at byte offset {offset} does not decode; expected UTF-8 text, one JSON object "
        "per line"
    )

    done = scifig_compare(a, b, env=env)

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"scifig compare: B ({b}): the sample log {log} is unreadable ({problem}) while its results file "
        f"{PREFIX}_results.json counts {N} samples of {TASK} — {TODO}"
    ]

    from scifig_tasks.commands.main import main

    for name, env_value in env.items():
        monkeypatch.setenv(name, env_value)
    named = f"{log}, row 3 (0-based): not UTF-8: byte 0xff at byte offset {offset} does not decode"
    for command, prefix in (
        (["report", str(b), "--out", str(tmp_path / "report")], "scifig report: "),
        (["rescore", str(b), "--dry-run"], "scifig rescore: REFUSED: "),
    ):
        assert main(command) == 1
        *progress, line = capsys.readouterr().err.splitlines()  # scifig report says its steps first
        assert all(step.startswith("scifig report: ") and named not in step for step in progress), progress
        assert line.startswith(prefix + named), line
        assert line.endswith(" — run the evaluation again, or restore the file from a copy of the run"), line


def test_a_log_missing_a_line_is_refused_naming_the_missing_doc_id(runs: tuple[Path, Path, dict[str, str]]) -> None:
    a, b, env = runs
    log = b / f"{PREFIX}_samples_{TASK}.jsonl"
    kept = [line for line in log.read_text().splitlines(keepends=True) if json.loads(line)["doc_id"] != 3]
    log.write_text("".join(kept))

    done = scifig_compare(a, b, env=env)

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"scifig compare: B ({b}): the sample log {log} is damaged (doc_id 3 missing: {N - 1} of the {N} samples) "
        f"while its results file {PREFIX}_results.json counts {N} samples of {TASK} — {TODO}"
    ]
    assert "different questions" not in done.stdout
