"""``scifig vlmeval`` refuses, in one line and before VLMEvalKit is imported, what would spoil a run's files.

* A work dir another run holds (its ``.scifig-run.lock``, the lock ``scifig eval`` takes on its output folder):
  refused, naming the folder and the lock file. Before, a second run on the same work dir went ahead and both asked
  the model every question (16 requests for 8 questions), writing into the same prediction files.
* ``LMUData`` set but empty: refused, saying to set it to a folder or unset it. Before, VLMEvalKit silently wrote its
  data to ``~/LMUData`` (its rule: ``$LMUData`` only when that path exists).

The lock is held by this test process, as a first run holds it; each refused command is one short subprocess.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from tests.harness.grab_data import sample
from tests.harness.lmms import offline_env, scifig

LOCK = ".scifig-run.lock"
ARGS = ["vlmeval", "--model", "scifig_chance", "--data", "grab"]


@pytest.mark.slow
@pytest.mark.cli
def test_a_work_dir_another_run_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    work = tmp_path / "outputs"
    work.mkdir()
    env = {**offline_env(tmp_path), **sample(tmp_path / "grab"), "HOME": str(tmp_path)}
    env["LMUData"] = str(tmp_path / "LMUData")
    with open(work / LOCK, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the first run holds it
        held.truncate(0)
        held.write(f"{os.getpid()}\n".encode())
        held.flush()
        completed = scifig([*ARGS, "--work-dir", str(work)], env, tmp_path)

    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stderr.splitlines() == [
        f"scifig vlmeval: the work dir {work} is in use by another scifig run (process {os.getpid()}, lock file "
        f"{work / LOCK}) — wait for it to end, or give another --work-dir"
    ]
    assert sorted(path.name for path in work.iterdir()) == [LOCK]  # VLMEvalKit never ran
    assert not (tmp_path / "LMUData").exists()


@pytest.mark.slow
@pytest.mark.cli
def test_an_empty_lmudata_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {**offline_env(tmp_path), **sample(tmp_path / "grab"), "HOME": str(tmp_path), "LMUData": ""}

    completed = scifig([*ARGS, "--work-dir", str(tmp_path / "outputs")], env, tmp_path)

    assert completed.returncode == 2, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stderr.splitlines() == [
        "scifig vlmeval: LMUData is set but empty (VLMEvalKit would then write its data to ~/LMUData) — set LMUData "
        "to VLMEvalKit's data folder, or unset it to use ~/LMUData"
    ]
    assert not (tmp_path / "LMUData").exists() and not (tmp_path / "outputs").exists()
