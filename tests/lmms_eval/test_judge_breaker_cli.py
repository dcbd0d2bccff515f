"""A dead judge fails fast: GRAB's LLM-extraction run through the real ``lmms-eval`` CLI with the judge pointing at a
closed port on 127.0.0.1.

The model is a local server answering every question; the judge endpoint refuses connections. The first judge call
finds the port closed, the client's circuit breaker opens, one ERROR line names the endpoint and what to check, and
every further call is marked ``judge_failed`` without being sent. Before the breaker the same 20-question run took
about 291 s (every call retried six times with back-off) and exited 0 with accuracy 0 and nothing flagged as a
failure of the judge.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.openai_server import FakeOpenAIServer, by_question

KEY = "sk-judge-dead-5151-NEVER-PRINTED"
N_QUESTIONS = 20
TIME_LIMIT_S = 30.0


def closed_port_url() -> str:
    with FakeOpenAIServer() as server:
        return server.base_url  # nothing listens on this loopback port once the server has stopped


@pytest.mark.parametrize(("command", "exit_code"), [("lmms-eval", 0), ("scifig", 1)], ids=["lmms-eval", "scifig-eval"])
def test_dead_judge_fails_fast_and_flags_every_sample(
    tmp_path: Path, openai_server, lmms_env, run_cli, command: str, exit_code: int
) -> None:
    """``scifig eval`` also exits 1 and counts the samples that could not be judged (lmms-eval still exits 0)."""
    tasks = ("properties", "function", "series", "transform")  # five questions in each GRAB task
    rows = [Row(tasks[pid % 4], str(pid)) for pid in range(N_QUESTIONS)]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    model = openai_server(
        by_question({question_text(pid, row) + "\n": f"The answer is {pid}." for pid, row in enumerate(rows)})
    )
    judge_url = closed_port_url()
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": KEY,
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab_llm_extract", "--log_samples"]

    start = time.monotonic()
    run = run_cli(command, ["eval", *args] if command == "scifig" else args, env, tmp_path / "out")
    elapsed = time.monotonic() - start
    print(f"dead-judge grab_llm_extract run ({command}): {elapsed:.1f} s")

    assert run.returncode == exit_code, run.output[-4000:]
    if command == "scifig":
        assert "scifig eval: 20 samples could not be judged (judge_failed: grab_functions_llm_extract 5, " in run.output
    assert elapsed < TIME_LIMIT_S, f"took {elapsed:.1f} s"
    assert model.count == N_QUESTIONS, run.output[-3000:]
    samples = [
        sample
        for task in ("properties", "functions", "series", "transforms")
        for sample in run.samples(f"grab_{task}_llm_extract")
    ]
    assert sorted(sample["breakdown"]["pid"] for sample in samples) == list(range(N_QUESTIONS))
    assert {sample["breakdown"]["judge"] for sample in samples} == {"judge_failed"}
    assert all(sample["accuracy"] == 0.0 for sample in samples)
    group = run.results()["groups"]["grab_llm_extract"]
    assert group["breakdown,none"]["flags"]["judge"] == {"judge_failed": 20}
    assert group["accuracy,none"] == 0.0

    port = judge_url.split(":")[2].split("/")[0]
    # one ERROR record (its level is checked in test_judge_reliability.py; without a logging handler only the message
    # reaches the console), and no line per call: 20 calls, at most two lines naming the endpoint
    breaker = [line for line in run.output.splitlines() if "Circuit breaker open" in line]
    assert len(breaker) == 1, breaker
    assert f"LLM judge at http://127.0.0.1:{port}/v1: connection refused. Circuit breaker open" in breaker[0]
    assert "SCIFIG_JUDGE_BASE_URL" in breaker[0]
    assert len([line for line in run.output.splitlines() if f"127.0.0.1:{port}" in line]) <= 2
    assert KEY not in run.output
    assert not any(KEY in path.read_text() for path in run.output_path.rglob("*.json*"))
