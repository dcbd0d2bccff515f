"""The real ``scifig demo`` (the README's main job: 40 GRAB questions generated locally, scored by the chance model
through lmms-eval, then ``scifig report``), run once per test session (per pytest-xdist worker) in an offline
environment and read by the demo's and the report's tests, which write only under their own ``tmp_path``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.lmms import offline_env

PER_TASK = 10
"""``scifig demo``'s default number of questions per GRAB task (4 tasks: 40 questions)."""


@dataclass(frozen=True)
class DemoRun:
    out: Path
    """The ``--out`` folder: data/, results/, report/, demo.log."""
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    work = tmp_path_factory.mktemp("demo")
    scifig = Path(sys.executable).parent / "scifig"
    completed = subprocess.run(
        [str(scifig), "demo", "--out", str(work / "demo")],
        env=offline_env(work),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    yield DemoRun(work / "demo", completed.stdout, completed.stderr)
