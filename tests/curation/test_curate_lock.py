"""``scifig curate`` holds its output folder while it builds, and says what it wrote as the data file holds it.

* One build at a time: the test process holds the folder's lock itself (``fcntl.flock`` on ``OUT/.scifig-run.lock``,
  as a running ``scifig curate`` or ``scifig eval`` does) instead of racing two builds. ``scifig curate grab`` on that
  folder, through the installed command line, is refused in one line naming the folder, the process holding it and
  the lock file, exit status 1, before the generator is imported (under a second, where a build of two questions
  takes about 8 s); nothing else is written there.
* Counts read back: a second writer replacing ``GRAB.parquet`` right after this build published it (what a second
  build into the same folder did before the lock: the first said "N questions written" while the file held the
  second's rows). The build then fails in one line naming the file and what it holds, and writes no card; a build
  left alone prints, and writes in its card, the count the file holds. In-process through ``main`` with the smallest
  settings (a few questions at ``--dpi 10``, one worker).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.harness import warm_start
from tests.harness.lmms import _executable

LOCK = ".scifig-run.lock"
SMALL = ["--dpi", "10", "--workers", "1"]
"""The cheapest generator settings: tiny images, no worker processes."""

pytestmark = [pytest.mark.slow, pytest.mark.cli]


def test_a_folder_another_command_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "grab-data"
    out.mkdir()
    with open(out / LOCK, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the first build holds it
        held.truncate(0)
        held.write(f"{os.getpid()}\n".encode())
        held.flush()
        completed = warm_start.run(
            [_executable("scifig"), "curate", "grab", "--out", str(out), "--limit", "2", *SMALL],
            os.environ,
            timeout=300,
        )
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert completed.stderr.splitlines() == [
        f"scifig curate grab: the output folder {out} is in use by another scifig run (process {os.getpid()}, "
        f"lock file {out / LOCK}) — wait for it to end, or give another --out"
    ]
    assert completed.stdout == ""
    assert sorted(path.name for path in out.iterdir()) == [LOCK]  # nothing built


def test_the_summary_and_the_card_count_what_the_data_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from curation import parquet
    from scifig_tasks.commands.main import main

    alone = tmp_path / "alone"
    assert main(["curate", "grab", "--out", str(alone), "--limit", "3", *SMALL]) == 0
    assert f"GRAB: 3 questions written to {alone}" in capsys.readouterr().out
    assert pq.ParquetFile(alone / "GRAB.parquet").metadata.num_rows == 3
    assert "\n3 questions.\n" in (alone / "README.md").read_text(encoding="utf-8")

    publish = parquet.ParquetRows.close

    def another_writer(rows: parquet.ParquetRows) -> None:
        """Publish, then another build's file (3 questions) lands under the same name, as a concurrent build's did."""
        publish(rows)
        shutil.copyfile(alone / "GRAB.parquet", rows.path)

    monkeypatch.setattr(parquet.ParquetRows, "close", another_writer)
    raced = tmp_path / "raced"
    code = main(["curate", "grab", "--out", str(raced), "--limit", "2", *SMALL])
    captured = capsys.readouterr()

    assert code == 1, captured.out + captured.err
    assert captured.err.splitlines()[-1] == (
        f"scifig curate grab: {raced / 'GRAB.parquet'} holds 3 questions, not the 2 this build wrote: another "
        f"command wrote to {raced} at the same time — run the build again, one command at a time per folder"
    )
    assert "questions written" not in captured.out
    assert not (raced / "README.md").exists()  # no card describing rows the file does not hold
