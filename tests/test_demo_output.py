"""``scifig demo`` is quiet: it prints what runs, the results table and the report's path (at most 40 lines);
lmms-eval's log lines, progress bars and tables go to ``OUT/demo.log`` (``--verbose`` prints them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCIFIG = Path(sys.executable).parent / "scifig"


def test_demo_prints_the_table_and_the_report_path_only(tmp_path: Path, lmms_env: dict[str, str]) -> None:
    out = tmp_path / "demo"
    completed = subprocess.run(
        [str(SCIFIG), "demo", "--out", str(out), "--per-task", "1", "--workers", "1"],
        env=lmms_env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    printed = (completed.stdout + completed.stderr).splitlines()
    assert len(printed) <= 40, printed
    assert completed.stderr == ""
    stdout = completed.stdout.splitlines()
    assert "| task | n | accuracy | 95% CI |" in stdout
    assert sum(line.startswith("| grab") for line in stdout) == 5
    assert stdout[-1] == str((out / "report" / "report.html").resolve())
    assert "INFO" not in completed.stdout and "\x1b[" not in completed.stdout and "it/s" not in completed.stdout
    log = (out / "demo.log").read_text(encoding="utf-8")
    assert "lmms_eval" in log and "|grab" in log  # lmms-eval's log lines and its own table went there
