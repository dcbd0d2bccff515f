"""Judged runs keep the judge's configured number of requests in flight, in lmms-eval and in VLMEvalKit.

lmms-eval judges from ``process_results`` threads (``--process_docs_parallel``, default 4); with a judge configured
``scifig eval`` passes ``--process_docs_parallel`` = ``SCIFIG_JUDGE_MAX_CONCURRENCY`` unless the user chose a number.
VLMEvalKit's scoring pool is sized the same way (at least 8). Concurrency is counted in the judge server (its peak of
requests handled at once), never inferred from timings: the test's judge holds every request until the expected number
are held together (:class:`Gathering`), so a run reaches exactly that peak, and a run with fewer scoring threads stays
below it (each of its requests is released after a few seconds' wait instead).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path

import pytest

from scifig_tasks.lmms_eval import concurrency
from tests.harness import warm_start
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, by_question
from tests.harness.paths import REPO

PATIENCE_S = 3.0
OUTPUT_IN_PROMPT = re.compile(r'The output from the model answering the question is: "(.*)"\n', re.DOTALL)
TASKS = ("properties", "function", "series", "transform")
# 12 questions per GRAB subtask: lmms-eval scores the subtasks one after the other, each in its own thread pool
ROWS = [Row(TASKS[pid % 4], str(pid)) for pid in range(48)]
RAISED_LINE = "scifig eval: process_results runs in 6 threads (--process_docs_parallel 6;"


def extracting_judge(request: ChatRequest) -> Reply:
    """GRAB's extraction judge: the quoted model output is the extracted answer."""
    match = OUTPUT_IN_PROMPT.search(request.text)
    assert match, f"not GRAB's extraction prompt: {request.text[:200]!r}"
    return Reply(text=match.group(1))


class Gathering:
    """Judge policy: each request is held until ``size`` requests are held together (then all are answered), or
    for ``PATIENCE_S`` seconds when that many never arrive."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._condition = threading.Condition()
        self._held = 0
        self._released = 0  # groups released so far

    def __call__(self, request: ChatRequest) -> Reply:
        reply = extracting_judge(request)
        with self._condition:
            group = self._released
            self._held += 1
            if self._held == self.size:
                self._held, self._released = 0, self._released + 1
                self._condition.notify_all()
            elif not self._condition.wait_for(lambda: self._released != group, timeout=PATIENCE_S):
                self._held -= 1
        return reply


@pytest.fixture
def no_judge_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("SCIFIG_JUDGE", "SCIFIG_JUDGE_BASE_URL", "SCIFIG_JUDGE_MODEL", "SCIFIG_JUDGE_MAX_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    return monkeypatch


def judge_configured(monkeypatch: pytest.MonkeyPatch, concurrency_value: str) -> None:
    monkeypatch.setenv("SCIFIG_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SCIFIG_JUDGE_MODEL", "fake-judge")
    monkeypatch.setenv("SCIFIG_JUDGE_MAX_CONCURRENCY", concurrency_value)


# --- the rule, without a framework -----------------------------------------------------------------------------------


def test_docs_parallel_is_raised_to_the_judge_concurrency_and_never_lowered() -> None:
    assert concurrency.docs_parallel(4, None) == 4
    assert concurrency.docs_parallel(4, 8) == 8
    assert concurrency.docs_parallel(8, 8) == 8
    assert concurrency.docs_parallel(10, 6) == 10
    assert concurrency.docs_parallel(1, 16) == 16


def test_scifig_eval_passes_the_judge_concurrency_unless_a_number_is_chosen(
    tmp_path: Path, no_judge_env: pytest.MonkeyPatch
) -> None:
    argv = ["--model", "openai", "--tasks", "grab"]
    assert concurrency.with_judge_concurrency(argv) == (argv, None)  # no judge: lmms-eval's default
    judge_configured(no_judge_env, "6")
    added, line = concurrency.with_judge_concurrency(argv)
    assert added == [*argv, "--process_docs_parallel", "6"]
    assert line is not None and line.startswith(RAISED_LINE)
    for chosen in (["--process_docs_parallel", "2"], ["--process_docs_parallel=10"]):
        assert concurrency.with_judge_concurrency([*argv, *chosen]) == ([*argv, *chosen], None)
    config = tmp_path / "run.yaml"
    config.write_text("- model: openai\n  process_docs_parallel: 3\n")
    assert concurrency.with_judge_concurrency([*argv, "--config", str(config)])[1] is None  # the file's number
    config.write_text("model: openai\n")
    assert concurrency.with_judge_concurrency([f"--config={config}"])[0][-1] == "6"
    judge_configured(no_judge_env, "3")  # below lmms-eval's default: nothing added, never lowered
    assert concurrency.with_judge_concurrency(argv) == (argv, None)
    no_judge_env.setenv("SCIFIG_JUDGE_MAX_CONCURRENCY", "many")  # misconfigured: left to the scoring to report
    assert concurrency.with_judge_concurrency(argv) == (argv, None)
    no_judge_env.setenv("SCIFIG_JUDGE_MAX_CONCURRENCY", "16")
    no_judge_env.setenv("SCIFIG_JUDGE", "off")
    assert concurrency.with_judge_concurrency(argv) == (argv, None)


# --- through the real command lines ----------------------------------------------------------------------------------


def grab_llm_extract_run(
    tmp_path: Path, openai_server, lmms_env: dict[str, str], judge_concurrency: int
) -> tuple[dict[str, str], FakeOpenAIServer]:
    data = write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")
    model = openai_server(by_question({question_text(pid, row) + "\n": row.answer for pid, row in enumerate(ROWS)}))
    judge = openai_server(Gathering(judge_concurrency))
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_MAX_CONCURRENCY": str(judge_concurrency),
    }
    return env, judge


MODEL_ARGS = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]


def test_scifig_eval_keeps_the_judge_concurrency_in_flight(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    env, judge = grab_llm_extract_run(tmp_path, openai_server, lmms_env, judge_concurrency=6)

    run = run_cli("scifig", ["eval", *MODEL_ARGS, "--tasks", "grab_llm_extract"], env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    assert results["groups"]["grab_llm_extract"]["accuracy,none"] == 1.0
    assert judge.count == 48
    assert judge.max_in_flight == 6  # lmms-eval's default of 4 process_results threads raised to the judge's 6
    assert results["config"]["process_docs_parallel"] == 6  # the results record the number used
    assert run.output.count(RAISED_LINE) == 1, run.output[-4000:]


def test_scifig_eval_keeps_a_larger_process_docs_parallel(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    env, judge = grab_llm_extract_run(tmp_path, openai_server, lmms_env, judge_concurrency=6)
    args = ["eval", *MODEL_ARGS, "--tasks", "grab_llm_extract", "--process_docs_parallel", "10"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    assert results["groups"]["grab_llm_extract"]["accuracy,none"] == 1.0
    assert judge.max_in_flight == 6  # 10 threads, but the judge client allows 6 requests in flight
    assert results["config"]["process_docs_parallel"] == 10
    assert "process_results runs in" not in run.output
    assert "Postprocessed 12 docs for grab_series_llm_extract/none with 10 worker(s)" in run.output, run.output[-4000:]


VLMEVAL_SCORE = """
import json, sys
import pandas as pd
import vlmeval.dataset
from scifig_tasks.vlmeval import register

register()
dataset = vlmeval.dataset.build_dataset("SciFig_GRAB_LLMExtract")
table = pd.DataFrame({"index": list(dataset.data["index"]), "prediction": list(dataset.data["answer"])})
table.to_csv(sys.argv[1], sep="\\t", index=False)
print("METRICS " + json.dumps(dataset.evaluate(sys.argv[1])))
"""


@pytest.mark.slow
def test_vlmeval_scoring_keeps_the_judge_concurrency_in_flight(tmp_path: Path, openai_server) -> None:
    """More than VLMEvalKit's 8 scoring threads when the judge allows more (here 12)."""
    rows = [Row(TASKS[pid % 4], str(pid)) for pid in range(24)]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    judge = openai_server(Gathering(12))
    (tmp_path / "lmu").mkdir()
    env = {
        **offline_env(tmp_path),
        "SCIFIG_GRAB_DATA": str(data),
        "LMUData": str(tmp_path / "lmu"),
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_MAX_CONCURRENCY": "12",
    }
    completed = warm_start.run(
        [sys.executable, "-c", VLMEVAL_SCORE, str(tmp_path / "fake-vlm_SciFig_GRAB_LLMExtract.tsv")],
        env,
        cwd=REPO,
        timeout=300,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("METRICS ")]
    metrics = json.loads(line.removeprefix("METRICS "))
    assert (metrics["n"], metrics["correct"]) == (24, 24)
    assert judge.count == 24
    assert judge.max_in_flight == 12
