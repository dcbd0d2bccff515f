"""What a judge says is checked before it counts, through the real ``scifig eval`` CLI with local model and judge
servers on 127.0.0.1.

* A reply that is not the answer asked for (empty, "N/A", unrelated text) is asked again like a failed request; when
  retries run out the sample is ``judge_failed``, the run exits 1 naming the count, and nothing is cached, so a rerun
  against a healthy judge asks again and gets the right score. (Before: the empty replies were scored as judged
  -- GRAB extraction 0.30 instead of 0.65 -- and "N/A" was cached, so a rerun kept the wrong score.)
* Cache entries hold no secret: model and judge keys echoed by the servers, and the user:password of the judge URL.
* A judge that accepts connections and never answers ends the run about one timeout after the first request, with
  one early line saying it is slow and one breaker line (a 3 s timeout; the defaults the docs give -- 60 s, the line
  after 20 s, the breaker after 2 timeouts -- are read from the settings and the breaker in process); a slow judge
  that does answer is left alone.
* Identical judge requests in flight at the same time are sent once.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import served_env
from tests.harness.openai_server import ChatRequest, Reply, by_question, echoing_key, fixed_latency
from tests.harness.scifibench_data import Question, build, write_splits
from tests.harness.vlmeval import run_vlmeval

MODEL_KEY = "sk-model-echoed-7f3a-NEVER-STORED"
JUDGE_KEY = "sk-judge-echoed-91bc-NEVER-STORED"
URL_PASSWORD = "hunter2-url-password"
N_GRAB = 12
QUOTED_OUTPUT = re.compile(r'answering the question is: "The answer is (\d+)\.')
GRAB_ARGS = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]


def grab_setup(tmp_path: Path, openai_server, lmms_env: dict[str, str], model_policy=None) -> dict[str, str]:
    """GRAB data with N_GRAB questions whose answer is the pid, and a model that states it."""
    tasks = ("properties", "function", "series", "transform")
    rows = [Row(tasks[pid % 4], str(pid)) for pid in range(N_GRAB)]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    answers = {question_text(pid, row) + "\n": f"The answer is {pid}." for pid, row in enumerate(rows)}
    model = openai_server((model_policy or (lambda policy: policy))(by_question(answers)))
    return {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": MODEL_KEY,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": JUDGE_KEY,
    }


def extracting(request: ChatRequest) -> Reply:
    """A healthy GRAB extraction judge: the number the quoted output states."""
    return Reply(text=QUOTED_OUTPUT.search(request.text).group(1))


def grab_eval(run_cli, env: dict[str, str], out: Path):
    run = run_cli("scifig", ["eval", *GRAB_ARGS, "--tasks", "grab_llm_extract", "--log_samples"], env, out)
    return run, run.results()["groups"]["grab_llm_extract"] if run.results() else None


def cache_entries(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["SCIFIG_JUDGE_CACHE"]).rglob("*.json"))


def half_empty(request: ChatRequest) -> Reply:
    """A healthy judge, except that every other question's first reply is empty (HTTP 200)."""
    pid = int(QUOTED_OUTPUT.search(request.text).group(1))
    return Reply(text="") if pid % 2 == 0 and request.attempt == 1 else extracting(request)


NOT_ANSWERS = ("N/A", "I like this plot very much.")
"""Replies that are not the number asked for: a refusal, and unrelated text."""


def test_replies_that_are_not_answers_fail_loudly_are_never_cached_and_empty_ones_are_asked_again(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """One run, both kinds of reply (alternating by question): each is asked again, then flagged, never cached. The
    rerun, on the same (empty) cache, gets empty first replies for every other question: each is asked again and the
    run scores as with a healthy judge."""
    env = grab_setup(tmp_path, openai_server, lmms_env)

    def not_an_answer(request: ChatRequest) -> Reply:
        pid = int(QUOTED_OUTPUT.search(request.text).group(1))
        return Reply(text=NOT_ANSWERS[pid % 2])

    judge = openai_server(not_an_answer)
    env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MAX_RETRIES": "1"}
    run, group = grab_eval(run_cli, env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]
    assert f"scifig eval: {N_GRAB} samples could not be judged" in run.output
    assert group["breakdown,none"]["flags"]["judge"] == {"judge_failed": N_GRAB}
    assert cache_entries(env) == []
    asked = {NOT_ANSWERS[int(QUOTED_OUTPUT.search(request.text).group(1)) % 2] for request in judge.requests}
    assert asked == set(NOT_ANSWERS)  # both kinds of reply were given (and refused) in this run

    judge.policy = half_empty  # the same cache: every question is asked again, and each empty reply once more
    judge.reset()
    env |= {"SCIFIG_JUDGE_MAX_RETRIES": "2"}
    rerun, regroup = grab_eval(run_cli, env, tmp_path / "rerun")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert judge.count == N_GRAB + N_GRAB // 2
    assert regroup["accuracy,none"] == 1.0
    assert regroup["breakdown,none"]["flags"]["judge"] == {"judged": N_GRAB}
    assert len(cache_entries(env)) == N_GRAB


def test_scifig_vlmeval_exits_1_when_replies_are_not_answers(tmp_path: Path, openai_server, lmms_env) -> None:
    env = grab_setup(tmp_path, openai_server, lmms_env)
    judge = openai_server(lambda request: Reply(text="N/A"))
    env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MAX_RETRIES": "1"}
    data = {"SciFig_GRAB_LLMExtract": "SciFigGRAB"}
    completed, _ = run_vlmeval(tmp_path, env["OPENAI_API_BASE"], env, data)

    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output[-4000:]  # before: 0, every sample scored wrong and nothing said
    assert f"scifig vlmeval: {N_GRAB} samples could not be judged (judge_failed: grab_llm_extract {N_GRAB})" in output
    assert cache_entries(env) == []


def test_scifibench_judge_saying_n_a_is_flagged_and_asked_again_and_identical_requests_in_flight_are_sent_once(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    questions = [Question("f2c", answer) for answer in "ABCDEABCDEABCDEABCDE"]
    data = write_splits({"CS_Figure2Caption": build(questions)}, tmp_path / "scifibench")
    # the rules refuse: every output goes to the judge, one judge prompt for all 20 questions
    model = openai_server(lambda request: "It could be A or B.")
    judge = openai_server(lambda request: Reply(text="N/A"))
    env = served_env(
        lmms_env, model.base_url, judge.base_url, SCIFIG_SCIFIBENCH_DATA=str(data), SCIFIG_JUDGE_MAX_RETRIES="1"
    )
    args = ["eval", *GRAB_ARGS, "--tasks", "scifibench_cs_figure2caption", "--log_samples"]
    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]
    assert "samples could not be judged (judge_failed: scifibench_cs_figure2caption 20)" in run.output
    assert cache_entries(env) == []

    judge.policy = fixed_latency(lambda request: Reply(text="A"), 0.5)  # a reply takes 0.5 s: the 20 ask at once
    judge.reset()
    rerun = run_cli("scifig", args, env, tmp_path / "rerun")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert judge.count == 1  # before: one request per scoring thread that asked before the first reply came
    assert rerun.results()["results"]["scifibench_cs_figure2caption"]["accuracy,none"] == 0.2


def test_cache_entries_hold_no_secret_and_a_slow_judge_that_answers_is_left_alone(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """One run: the model echoes its key, the judge URL carries a password, and the judge takes 2 s a reply with a 3 s
    timeout (slow, but answering)."""
    env = grab_setup(tmp_path, openai_server, lmms_env, model_policy=echoing_key)  # the model echoes its key
    judge = openai_server(fixed_latency(extracting, 2.0))  # a reply is the answer alone (anything else is asked again)
    scheme, rest = judge.base_url.split("://")
    env |= {"SCIFIG_JUDGE_BASE_URL": f"{scheme}://scifig:{URL_PASSWORD}@{rest}", "SCIFIG_JUDGE_TIMEOUT_S": "3"}
    run, group = grab_eval(run_cli, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    assert group["accuracy,none"] == 1.0
    # the slow judge is left alone: nothing timed out, nothing was retried, one line says it is slow, no breaker
    assert judge.count == N_GRAB
    assert sum("has not answered a request in" in line for line in run.output.splitlines()) == 1
    assert "Circuit breaker open" not in run.output
    # the judge prompt quoted the echoed output with its key masked: no secret is sent to the judge either
    assert judge.requests and not any(MODEL_KEY in request.text for request in judge.requests)
    entries = cache_entries(env)
    assert len(entries) == N_GRAB
    for entry in entries:
        stored = entry.read_bytes()
        for secret in (MODEL_KEY, JUDGE_KEY, URL_PASSWORD):
            assert secret.encode() not in stored, f"{secret} stored in {entry}"
    judge.reset()
    rerun, _ = grab_eval(run_cli, env, tmp_path / "rerun")  # masked entries still answer the same requests
    assert rerun.returncode == 0 and judge.count == 0, rerun.output[-3000:]


def test_hung_judge_ends_the_run_in_about_one_timeout(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    env = grab_setup(tmp_path, openai_server, lmms_env)
    judge = openai_server(lambda request: Reply(text="1", delay_s=600), max_delay_s=600)  # accepts, never answers
    env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_TIMEOUT_S": "3"}
    run, group = grab_eval(run_cli, env, tmp_path / "out")
    waited = time.monotonic() - judge.requests[0].received_at  # from the first judge request to the end of the run
    print(f"hung judge, 3 s timeout: {waited:.1f} s after the first judge request")

    assert run.returncode == 1, run.output[-4000:]
    assert waited < 30, f"took {waited:.1f} s"  # before: 70 s and 30-45 retry lines
    lines = run.output.splitlines()
    assert sum("has not answered a request in 2s" in line for line in lines) == 1
    assert sum("Circuit breaker open" in line for line in lines) == 1
    assert any("2 requests in a row timed out after 3s with no reply" in line for line in lines)
    assert sum("retrying in" in line for line in lines) <= 8
    assert group["breakdown,none"]["flags"]["judge"] == {"judge_failed": N_GRAB}


def test_the_default_settings_name_a_hung_judge_after_20_s_and_stop_it_after_two_timeouts(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What docs/judge.md says of the defaults, read from the settings and the client's own breaker, in process: a
    60 s timeout, one WARNING line after 20 s, and the breaker open once 2 requests in a row time out, which the first
    requests, sent together (8 in flight), do one timeout after the first request. A run waiting out the 60 s
    timeout is not needed for that: the run above is the same code through the real command line with a 3 s
    timeout (the 2 s line, one breaker line, the run ended with every sample judge_failed)."""
    import logging
    import threading

    from scifig_tasks.core.judge.breaker import SILENT_TIMEOUTS, Breaker
    from scifig_tasks.core.judge.config import JudgeConfig
    from tests.harness.paths import REPO

    docs = " ".join((REPO / "docs" / "judge.md").read_text(encoding="utf-8").split())
    assert "| `SCIFIG_JUDGE_TIMEOUT_S` | 60 |" in docs and "| `SCIFIG_JUDGE_MAX_CONCURRENCY` | 8 |" in docs
    assert "2 requests in a row timing out with no reply between them" in docs
    assert "With the default 60 s timeout (`SCIFIG_JUDGE_TIMEOUT_S`) a hung judge ends the run about a minute" in docs
    assert "a WARNING line after 20 s (or half the timeout)" in docs
    config = JudgeConfig.from_env({"SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "SCIFIG_JUDGE_MODEL": "judge"})
    assert config is not None and (config.timeout_s, config.max_concurrency) == (60, 8)
    assert SILENT_TIMEOUTS == 2 <= config.max_concurrency  # the first two requests in flight time out together

    scheduled: list[float] = []

    class AtOnce:  # threading.Timer that records its delay and fires at once
        def __init__(self, interval: float, function) -> None:
            scheduled.append(interval)
            self.function, self.daemon = function, False

        def start(self) -> None:
            self.function()

        def cancel(self) -> None:
            pass

    monkeypatch.setattr(threading, "Timer", AtOnce)
    caplog.set_level(logging.WARNING, logger="scifig.judge")
    breaker = Breaker(config)
    for _ in range(3):  # three requests wait: one line, for the first
        with breaker.watching():
            pass
    for _ in range(SILENT_TIMEOUTS):
        breaker.timed_out()

    assert scheduled == [20.0]
    lines = [record.getMessage() for record in caplog.records if record.name == "scifig.judge"]
    assert len(lines) == 2, lines
    assert "has not answered a request in 20s; waiting up to 60s per request (SCIFIG_JUDGE_TIMEOUT_S)" in lines[0]
    assert "2 requests in a row timed out after 60s with no reply" in lines[1] and "Circuit breaker open" in lines[1]
    assert breaker.reason is not None
