"""The benchmark scripts of ``tests/perf`` still run: each runs once, on a tiny input, the way the docs run it
(``python -m tests.perf.<script>`` from the repository root), exits 0 and prints its figures. A smoke run: the figures
themselves are not checked (performance is shown by the scripts, not by tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.lmms import offline_env
from tests.harness.paths import REPO

SMOKE_RUNS = [
    ("bench_mmsci_curation", ["--articles", "4", "--subjects", "2", "--size", "32"], "build: "),
    ("bench_sample_pages", ["--samples", "8", "--models", "1", "--repeat", "1"], "verdict: "),
    ("bench_png_encoder", ["--graphs", "1", "--dpi", "30", "--repeat", "1"], "verdict: "),
]


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.perf
@pytest.mark.parametrize(("script", "args", "printed"), SMOKE_RUNS, ids=[run[0] for run in SMOKE_RUNS])
def test_benchmark_script_runs_on_a_tiny_input(script: str, args: list[str], printed: str, tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", f"tests.perf.{script}", *args],
        cwd=REPO,
        env=offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert any(line.lstrip().startswith(printed) for line in completed.stdout.splitlines()), completed.stdout[-3000:]
