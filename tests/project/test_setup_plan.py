"""``.ci/setup`` says where it is: one line per phase (``1/4`` ... ``4/4``, with the time of day), then the time it
took and the next command. ``--plan`` prints those lines with the commands each phase would run and runs none of them,
so this is checked in a fraction of a second without installing or byte-compiling anything. The script runs from a
copy in the test's folder (with the lock beside it), so that even a script that ignored ``--plan`` could not touch
this checkout's ``.venv``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.paths import REPO

pytestmark = pytest.mark.cli

PHASE = re.compile(r"^\.ci/setup \[\d\d:\d\d:\d\d\] (?P<phase>[1-4])/4 (?P<what>.+)$")
PLANNED = "    would run: "
NEXT = r"\.ci/setup \[\d\d:\d\d:\d\d\] done in \d+ s\. Next: \.venv/bin/scifig doctor, then \.venv/bin/scifig demo"


def test_setup_says_each_phase_the_time_it_took_and_the_next_command(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    for name in ("setup", "requirements.lock"):
        shutil.copy(REPO / ".ci" / name, tmp_path / ".ci" / name)

    def setup(option: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(tmp_path / ".ci" / "setup"), option],
            env={**os.environ, "SCIFIG_PYTHON": sys.executable},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    done = setup("--plan")

    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [match["phase"] for line in lines if (match := PHASE.match(line))] == ["1", "2", "3", "4"], lines
    assert PHASE.match(lines[0])["what"] == "creating ./.venv"  # a checkout without one
    assert re.fullmatch(NEXT, lines[-1]), lines[-1]
    assert [line for line in lines[:-1] if not PHASE.match(line) and not line.startswith(PLANNED)] == []
    planned = [line.removeprefix(PLANNED) for line in lines if line.startswith(PLANNED)]
    assert planned[0] == f"{sys.executable} -m venv .venv"
    assert any(
        "pip" in command and "--require-hashes" in command and "-r .ci/requirements.lock" in command
        for command in planned
    )
    assert any("-m compileall" in command for command in planned)
    assert planned[-1] == ".venv/bin/python -m scifig_tasks.commands.main --version"
    assert sorted(path.name for path in tmp_path.iterdir()) == [".ci"]  # nothing made, nothing installed

    refused = setup("--fast")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (
        ".ci/setup: unknown option --fast (--plan: print the phases and their commands, run nothing)\n"
    )
