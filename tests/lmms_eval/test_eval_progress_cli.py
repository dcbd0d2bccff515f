"""What ``scifig eval`` shows while and after it runs, through the real command line: one progress bar for the model
phase, however the model takes its requests (here lmms-eval's ``openai`` model one request at a time, under the
default reply cache), and closing lines that name the results file and the ``scifig report`` command that reads it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.harness import warm_start
from tests.harness.grab_data import Row, write_parquet
from tests.harness.lmms import CLI_TIMEOUT_S, _executable

QUESTIONS = 6
ROWS = [Row(("properties", "function", "series", "transform")[i % 4], str(i)) for i in range(QUESTIONS)]
BAR_START = re.compile(r"Model Responding:\s+0%\|[^|]*\|\s*0/(\d+)")
"""Where a progress bar is first drawn: ``Model Responding:   0%|          | 0/N``."""


def test_one_progress_bar_and_the_next_command(tmp_path: Path, openai_server, lmms_env) -> None:
    server = openai_server(lambda request: "1")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet"))}
    env |= {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-progress"}
    output = tmp_path / "out"
    model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=1"
    command = [_executable("scifig"), "eval", "--model", "openai", "--model_args", model_args, "--tasks", "grab"]
    completed = warm_start.run([*command, "--output_path", str(output)], env, timeout=CLI_TIMEOUT_S)
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert server.count == QUESTIONS

    assert BAR_START.findall(completed.stderr) == [str(QUESTIONS)]  # one bar over every request, not one per request

    *_, results_line, next_line = [line for line in completed.stderr.splitlines() if line.strip()]
    (results,) = output.rglob("*_results.json")
    assert results_line == f"scifig eval: results in {results}"
    assert shlex.split(next_line) == ["next:", "scifig", "report", str(results), "--out", str(output / "report")]
