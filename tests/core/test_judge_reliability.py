"""The judge client's circuit breaker, cache correctness and SDK settings, over real HTTP to a local server.

* breaker: a closed port opens it at once; five consecutive failed calls open it; a success resets the run; a 400
  about one prompt does not count; cached judgements are still served while it is open; one ERROR line, no key;
* cache: an empty reply or one the caller cannot read is not cached; the key holds the endpoint, the model, the
  prompt and the generation settings; the default directory follows ``XDG_CACHE_HOME``;
* ``SCIFIG_JUDGE_MAX_RETRIES`` and ``SCIFIG_JUDGE_TIMEOUT_S`` reach the SDK's retries and timeout;
* ``mcq.judge_use`` tells a failed judge from one that found no answer.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scifig_tasks.core import multiple_choice as mcq
from scifig_tasks.core.judge import (
    BREAKER_THRESHOLD,
    JudgeClient,
    JudgeConfig,
    JudgeResult,
    get_judge,
    has_text,
)
from scifig_tasks.core.judge.breaker import unreachable
from tests.harness.judge_config import judge_config
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, fixed_latency

KEY = "sk-scifig-breaker-FAKE-0e1d-DO-NOT-LEAK"


def config_for(base_url: str, tmp_path: Path, **overrides: object) -> JudgeConfig:
    return judge_config(base_url, tmp_path, KEY, **overrides)


def breaker_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and r.name == "scifig.judge"]


def test_breaker_threshold_is_five() -> None:
    assert BREAKER_THRESHOLD == 5
    assert JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m").breaker_threshold == 5


def test_closed_port_opens_the_breaker_at_once(tmp_path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer() as server:
        base_url = server.base_url  # closed once the server stops
    config = config_for(base_url, tmp_path, max_retries=5, backoff_initial_s=1.0, backoff_max_s=30.0)
    start = time.monotonic()
    with JudgeClient(config) as judge:
        results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(20)]
    elapsed = time.monotonic() - start
    assert elapsed < 2.0  # no retry and no back-off: 5 retries of 1 s, 2 s, ... would take over 30 s
    assert [r.status for r in results] == ["judge_failed"] * 20
    assert "connection refused" in (results[0].error or "")
    assert all("circuit breaker is open" in (r.error or "") for r in results[1:])
    assert judge.stats == {"requests": 1, "cache_hits": 0, "shared": 0, "judged": 0, "failed": 20}
    assert judge.breaker == "connection refused"
    [line] = breaker_lines(caplog)
    port = base_url.split(":")[2].split("/")[0]
    assert line.startswith(f"LLM judge at http://127.0.0.1:{port}/v1: connection refused. Circuit breaker open")
    assert "SCIFIG_JUDGE_BASE_URL" in line
    assert KEY not in caplog.text


def test_five_consecutive_failures_open_the_breaker(openai_server, tmp_path, caplog) -> None:
    caplog.set_level(logging.WARNING)
    server = openai_server(lambda request: Reply(text=f"down, you sent {request.headers['authorization']}", status=500))
    with JudgeClient(config_for(server.base_url, tmp_path, max_retries=1)) as judge:
        results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(8)]
    assert [r.status for r in results] == ["judge_failed"] * 8
    assert server.count == 10  # 5 calls x (1 attempt + 1 retry); calls 6-8 were never sent
    assert judge.stats == {"requests": 10, "cache_hits": 0, "shared": 0, "judged": 0, "failed": 8}
    assert all("circuit breaker is open" in (r.error or "") for r in results[5:])
    [line] = breaker_lines(caplog)
    assert "5 consecutive judge calls failed, the last with HTTP 500" in line
    assert "Bearer ***" in line and KEY not in caplog.text


def test_a_success_resets_the_run_and_prompt_errors_do_not_count(openai_server, tmp_path, caplog) -> None:
    def policy(request: ChatRequest) -> Reply:
        if "good" in request.text:
            return Reply(text="fine")
        if "too long" in request.text:
            return Reply(text="maximum context length exceeded", status=400)
        return Reply(text="overloaded", status=503)

    server = openai_server(policy)
    prompts = ["bad 1", "bad 2", "bad 3", "bad 4", "good 1", "bad 5", "bad 6", "bad 7", "bad 8"]
    prompts += [f"too long {i}" for i in range(6)] + ["good 2"]
    with JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        results = [judge.complete(prompt, accept=has_text) for prompt in prompts]
        assert judge.breaker is None
        assert [r.status for r in results].count("judged") == 2
        assert server.count == len(prompts)  # every call was sent
        for i in range(4):
            assert judge.complete(f"bad again {i}", accept=has_text).status == "judge_failed"
        assert judge.breaker is None
        assert (
            judge.complete("bad 9", accept=has_text).status == "judge_failed"
        )  # the fifth consecutive endpoint failure
        assert judge.breaker is not None and "HTTP 503" in judge.breaker
        assert judge.complete("good 3", accept=has_text).status == "judge_failed"
    assert server.count == len(prompts) + 5
    assert len(breaker_lines(caplog)) == 1


def test_cached_judgements_are_served_while_the_breaker_is_open(openai_server, tmp_path) -> None:
    server = openai_server(lambda request: Reply(text=f"answer to {request.text}"))
    config = config_for(server.base_url, tmp_path)
    with JudgeClient(config) as judge:
        assert judge.complete("known", accept=has_text).text == "answer to known"
    server.policy = lambda request: Reply(status=500)
    with JudgeClient(config) as judge:
        assert all(judge.complete(f"new {i}", accept=has_text).status == "judge_failed" for i in range(5))
        assert judge.breaker is not None
        assert judge.complete("known", accept=has_text) == JudgeResult(
            status="judged", text="answer to known", cached=True
        )


def test_dns_failure_counts_as_unreachable() -> None:
    """An unknown host (socket.gaierror under the HTTP library's ConnectError) opens the breaker like a closed port;
    no test resolves a real name, so the chain is built by hand."""
    try:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except socket.gaierror as exc:
            raise ConnectionError("[Errno -2] Name or service not known") from exc
    except ConnectionError as error:
        assert unreachable(error) == "host name not found (DNS lookup failed)"
    assert unreachable(TimeoutError("read timed out")) is None


# ---- cache ----------------------------------------------------------------------------------------------------------


def test_an_empty_reply_is_retried_then_failed_and_never_cached(openai_server, tmp_path) -> None:
    server = openai_server(lambda request: Reply(text=""))
    config = config_for(server.base_url, tmp_path, max_retries=2)
    with JudgeClient(config) as judge:
        result = judge.complete("extract it", accept=has_text)
    assert result.status == "judge_failed" and "not the answer asked for" in (result.error or "")
    assert server.count == 3  # asked again like a failed request
    assert list((tmp_path / "cache").rglob("*.json")) == []
    server.policy = lambda request: Reply(text="42")
    with JudgeClient(config) as judge:
        assert judge.complete("extract it", accept=has_text) == JudgeResult(status="judged", text="42")  # asked again
        assert judge.complete("extract it", accept=has_text).cached
    assert server.count == 4


def test_a_reply_that_is_not_the_answer_is_asked_again_and_never_cached(openai_server, tmp_path) -> None:
    replies = iter(["Let me think about", "N/A", "None"])
    server = openai_server(lambda request: Reply(text=next(replies)))
    config = config_for(server.base_url, tmp_path, max_retries=2)
    prompt = mcq.judge_prompt("A or maybe B", 5)

    def readable(reply: str) -> bool:
        return mcq.judge_reply_readable(reply, 5)

    with JudgeClient(config) as judge:  # two replies that are not answers, then the prompt's "None": an answer
        assert judge.complete(prompt, max_tokens=3, accept=readable) == JudgeResult(status="judged", text="None")
        assert judge.complete(prompt, max_tokens=3, accept=readable).cached
    assert server.count == 3
    server.policy = lambda request: Reply(text="B")
    with JudgeClient(config) as judge:  # a cached entry the caller now rejects is asked again
        assert not judge.complete(prompt, max_tokens=3, accept=lambda reply: reply == "B").cached
    assert server.count == 4


def test_old_cache_entries_that_are_not_answers_are_asked_again(openai_server, tmp_path) -> None:
    server = openai_server(lambda request: Reply(text="N/A"))
    config = config_for(server.base_url, tmp_path)
    output, options = "It is A or B.", ["A) x", "B) y", "C) z"]
    with JudgeClient(config) as judge:  # an older release cached what it could not read; write such an entry
        entry = {"base_url": config.base_url, "model": config.model, "system": None, "max_tokens": 3}
        entry |= {"temperature": 0.0, "prompt": mcq.judge_prompt(output, len(options))}
        path = judge.cache.path(entry)
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({**entry, "text": "N/A"}), encoding="utf-8")
        assert mcq.resolve_choice(output, options, judge).reason == "alternatives; judge failed"
    assert server.count == 1
    server.policy = lambda request: Reply(text="B")
    with JudgeClient(config) as judge:
        assert mcq.resolve_choice(output, options, judge).letter == "B"
        assert mcq.resolve_choice(output, options, judge).letter == "B"
    assert server.count == 2


def test_concurrent_identical_requests_are_sent_once(openai_server, tmp_path) -> None:
    server = openai_server(fixed_latency(lambda request: Reply(text="7"), 0.3))
    prompts = [f"question {i % 5}" for i in range(40)]
    with JudgeClient(config_for(server.base_url, tmp_path, max_concurrency=8)) as judge:
        with ThreadPoolExecutor(16) as pool:  # lmms-eval's scoring threads each ask for their own sample
            results = list(pool.map(lambda prompt: judge.complete(prompt, accept=has_text), prompts))
        stats = judge.stats
    assert [result.text for result in results] == ["7"] * 40
    assert server.count == 5
    assert stats["judged"] == 5 and stats["shared"] + stats["cache_hits"] == 35


def test_same_model_at_another_endpoint_is_asked_again(openai_server, tmp_path) -> None:
    first = openai_server(lambda request: Reply(text="from the first"))
    second = openai_server(lambda request: Reply(text="from the second"))
    with JudgeClient(config_for(first.base_url, tmp_path)) as judge:
        assert judge.complete("same prompt", accept=has_text).text == "from the first"
    with JudgeClient(config_for(second.base_url, tmp_path)) as judge:
        assert judge.complete("same prompt", accept=has_text) == JudgeResult(status="judged", text="from the second")
    with JudgeClient(config_for(first.base_url, tmp_path)) as judge:
        assert judge.complete("same prompt", accept=has_text) == JudgeResult(
            status="judged", text="from the first", cached=True
        )
    assert (first.count, second.count) == (1, 1)


def test_generation_settings_are_part_of_the_key(openai_server, tmp_path) -> None:
    server = openai_server(lambda request: Reply(text="ok"))
    with JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        assert not judge.complete("p", accept=has_text).cached
        assert judge.complete("p", temperature=0, accept=has_text).cached  # 0 and 0.0 are one setting
        assert not judge.complete("p", temperature=0.7, accept=has_text).cached
        assert not judge.complete("p", system="be brief", accept=has_text).cached
        assert not judge.complete("p", system="", accept=has_text).cached
        assert not judge.complete("p", max_tokens=3, accept=has_text).cached
        assert judge.complete("p", system="be brief", accept=has_text).cached
    assert server.count == 5


def test_default_cache_dir_follows_xdg(tmp_path, monkeypatch) -> None:
    base = {"SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "SCIFIG_JUDGE_MODEL": "m"}
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    xdg = tmp_path / "xdg"
    assert JudgeConfig.from_env({**base, "XDG_CACHE_HOME": str(xdg)}).cache_dir == xdg / "scifig" / "judge"
    explicit = {**base, "XDG_CACHE_HOME": str(xdg), "SCIFIG_JUDGE_CACHE": str(tmp_path / "mine")}
    assert JudgeConfig.from_env(explicit).cache_dir == tmp_path / "mine"
    home_cache = tmp_path / "home" / ".cache" / "scifig" / "judge"
    assert JudgeConfig.from_env(base).cache_dir == home_cache
    assert JudgeConfig.from_env({**base, "XDG_CACHE_HOME": "relative/dir"}).cache_dir == home_cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.delenv("SCIFIG_JUDGE_CACHE", raising=False)
    assert JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m").cache_dir == xdg / "scifig" / "judge"


# ---- the SDK's retries and timeout from the environment -------------------------------------------------------------


def test_env_retries_and_timeout_reach_the_sdk(openai_server, tmp_path) -> None:
    server = openai_server(lambda request: Reply(text="overloaded", status=503))
    env = {
        "SCIFIG_JUDGE_BASE_URL": server.base_url,
        "SCIFIG_JUDGE_MODEL": "env-retries",
        "SCIFIG_JUDGE_CACHE": str(tmp_path),
        "SCIFIG_JUDGE_MAX_RETRIES": "2",
        "SCIFIG_JUDGE_TIMEOUT_S": "0.3",
    }
    judge = get_judge(env)
    assert judge is not None
    failed = judge.complete("retry me", accept=has_text)
    assert failed.status == "judge_failed" and "HTTP 503" in (failed.error or "")
    assert server.count == 3  # first attempt + SCIFIG_JUDGE_MAX_RETRIES
    server.policy = lambda request: Reply(text="late", delay_s=1.0)
    slow = judge.complete("slow", accept=has_text)  # a reply 1 s late, after a 0.3 s timeout: twice, then hung
    assert slow.status == "judge_failed" and "2 requests in a row timed out after 0.3s" in (slow.error or "")
    assert server.count == 5  # the third attempt is not sent: two silent timeouts open the breaker


# ---- judge use in multiple-choice breakdowns ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "reason", "use"),
    [
        ("rule", "opening label", "not_used"),
        ("unresolved", "no answer stated", "not_used"),
        ("unresolved", "empty", "not_used"),
        ("judge", "alternatives", "judged"),
        ("unresolved", "alternatives; judge found none", "judged"),
        ("unresolved", "alternatives; judge failed", "judge_failed"),
        ("unresolved", "judge failed", "judge_failed"),
        ("unresolved", "judge reply is not a letter", "judged"),
        ("unresolved", "judge reply names no label", "judged"),
        ("judge", "paper parse", "judged"),
    ],
)
def test_judge_use(method: str, reason: str, use: str) -> None:
    assert mcq.judge_use(method, reason) == use
