"""Tests for the shared LLM judge client (scifig_tasks/core/judge/), over real HTTP to a local fake server."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scifig_tasks.core import settings
from scifig_tasks.core.judge import (
    JudgeClient,
    JudgeConfig,
    JudgeResult,
    get_judge,
    has_text,
)
from scifig_tasks.core.judge_presets import load_preset
from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.judge_config import judge_config
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, by_question, faulty, fixed_latency
from tests.harness.paths import REPO

FAKE_KEY = "sk-scifig-FAKE-7f3a9c1e5b2d-DO-NOT-LEAK"
PRESETS = sorted(p.stem for p in (REPO / "model_configs" / "judges").glob("*.yaml"))


def config_for(server: FakeOpenAIServer, tmp_path: Path, **overrides: object) -> JudgeConfig:
    defaults = {"timeout_s": 1.0, "max_retries": settings.JUDGE_MAX_RETRIES.default}
    return judge_config(server.base_url, tmp_path, FAKE_KEY, **(defaults | overrides))


def answer(request: ChatRequest) -> str:
    return f"answer to {request.text}"


def cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").rglob("*.json"))


def test_judged_reply_and_request_format(openai_server, tmp_path):  # noqa: F811
    server = openai_server(by_question({"Which option": "B"}, default="none"))
    with JudgeClient(config_for(server, tmp_path)) as judge:
        result = judge.complete("Which option does the model pick?", accept=has_text)
        limited = judge.complete("Which option does the model pick?", max_tokens=5, accept=has_text)
    assert result == JudgeResult(status="judged", text="B", cached=False, error=None)
    assert limited.status == "judged" and not limited.cached  # max_tokens is part of the cache key
    first, second = server.requests
    assert first.body == {
        "model": "judge-model",
        "messages": [{"role": "user", "content": "Which option does the model pick?"}],
        "temperature": 0,
    }
    assert second.body["max_tokens"] == 5
    assert first.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert judge.stats == {"requests": 2, "cache_hits": 0, "shared": 0, "judged": 2, "failed": 0}
    assert len(cache_files(tmp_path)) == 2
    assert cache_files(tmp_path)[0].parent.parent.parent == tmp_path / "cache"  # two-level fan-out


def test_request_fields_of_a_protocol_are_sent_and_part_of_the_cache_key(openai_server, tmp_path):  # noqa: F811
    server = openai_server(lambda request: '{"score": 1}')
    fields = {"response_format": {"type": "json_object"}, "seed": 42, "top_p": 1}
    with JudgeClient(config_for(server, tmp_path)) as judge:
        plain = judge.complete("Grade this.", accept=has_text)
        shaped = judge.complete("Grade this.", request=fields, accept=has_text)
        again = judge.complete("Grade this.", request=fields, accept=has_text)
    assert not plain.cached and not shaped.cached and again.cached
    first, second = server.requests
    assert "seed" not in first.body and {key: second.body[key] for key in fields} == fields
    assert second.body["temperature"] == 0


def test_faulty_endpoint_loses_nothing_and_rerun_is_cached(openai_server, tmp_path):  # noqa: F811
    server = openai_server(faulty(answer, rate=0.3, seed=3, timeout_s=0.6))
    prompts = [f"prompt {i}" for i in range(40)]
    config = config_for(server, tmp_path, timeout_s=0.3, max_concurrency=8)
    with JudgeClient(config) as judge:
        results = judge.complete_many(prompts, accept=has_text)
    assert len(results) == len(prompts)
    assert {r.status for r in results} <= {"judged", "judge_failed"}
    judged = [(p, r) for p, r in zip(prompts, results, strict=True) if r.status == "judged"]
    assert len(judged) >= 38
    assert all(r.text == f"answer to {p}" and not r.cached for p, r in judged)
    assert all(r.error for r in results if r.status == "judge_failed")
    assert server.count > len(prompts)  # faults happened and were retried
    assert judge.stats["requests"] == server.count
    assert judge.stats["judged"] + judge.stats["failed"] == len(prompts)

    server.reset()
    with JudgeClient(config) as rerun:
        again = rerun.complete_many([p for p, _ in judged], accept=has_text)
    assert server.count == 0 and rerun.stats["requests"] == 0
    assert all(r.cached and r.text == first.text for r, (_, first) in zip(again, judged, strict=True))
    assert rerun.stats["cache_hits"] == len(judged)


@pytest.mark.slow
def test_cache_is_shared_with_another_process(openai_server, tmp_path):  # noqa: F811
    server = openai_server(answer)
    config = config_for(server, tmp_path)
    with JudgeClient(config) as judge:
        assert judge.complete("shared prompt", accept=has_text).text == "answer to shared prompt"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from scifig_tasks.core.judge import JudgeClient, JudgeConfig, has_text
        cache_dir = Path({str(tmp_path / "cache")!r})
        config = JudgeConfig(base_url={server.base_url!r}, model="judge-model", cache_dir=cache_dir)
        result = JudgeClient(config).complete("shared prompt", accept=has_text)
        assert result.cached and result.text == "answer to shared prompt", result
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, timeout=60)
    assert server.count == 1


def test_failures_are_not_cached(openai_server, tmp_path):  # noqa: F811
    server = openai_server(lambda request: Reply(text="overloaded", status=503))
    config = config_for(server, tmp_path, max_retries=2)
    with JudgeClient(config) as judge:
        failed = judge.complete("flaky prompt", accept=has_text)
    assert failed.status == "judge_failed" and failed.text is None and "503" in (failed.error or "")
    assert server.count == 3  # first attempt + 2 retries
    assert judge.stats == {"requests": 3, "cache_hits": 0, "shared": 0, "judged": 0, "failed": 1}
    assert cache_files(tmp_path) == []

    server.policy = answer
    with JudgeClient(config) as judge:
        assert judge.complete("flaky prompt", accept=has_text) == JudgeResult(
            status="judged", text="answer to flaky prompt"
        )
    assert server.count == 4
    with JudgeClient(config) as judge:
        assert judge.complete("flaky prompt", accept=has_text).cached


def test_client_errors_are_not_retried(openai_server, tmp_path):  # noqa: F811
    server = openai_server(lambda request: Reply(text="invalid api key", status=401))
    with JudgeClient(config_for(server, tmp_path)) as judge:
        result = judge.complete("anything", accept=has_text)
    assert result.status == "judge_failed" and "401" in (result.error or "")
    assert server.count == 1


def test_malformed_and_null_content_are_retried(openai_server, tmp_path):  # noqa: F811
    def policy(request: ChatRequest) -> Reply:
        if request.attempt == 1:
            return Reply(malformed=True)
        return Reply(text=None) if request.attempt == 2 else Reply(text="fixed")

    server = openai_server(policy)
    with JudgeClient(config_for(server, tmp_path)) as judge:
        assert judge.complete("q", accept=has_text).text == "fixed"
    assert server.count == 3


def test_retry_after_is_honoured_and_capped(openai_server, tmp_path):  # noqa: F811
    server = openai_server(lambda r: Reply(status=429, retry_after=0.4) if r.attempt == 1 else Reply(text="ok"))
    with JudgeClient(config_for(server, tmp_path, backoff_max_s=0.6)) as judge:
        start = time.monotonic()
        assert judge.complete("wait", accept=has_text).text == "ok"
        assert time.monotonic() - start >= 0.4
        server.policy = lambda r: Reply(status=429, retry_after=100) if r.attempt == 1 else Reply(text="ok")
        start = time.monotonic()
        assert judge.complete("wait less", accept=has_text).text == "ok"
        assert 0.6 <= time.monotonic() - start < 1.5  # capped at backoff_max_s


def test_timeouts_are_retried_then_fail(openai_server, tmp_path):  # noqa: F811
    server = openai_server(lambda request: Reply(text="too late", delay_s=0.5))
    with JudgeClient(config_for(server, tmp_path, timeout_s=0.2, max_retries=1)) as judge:
        result = judge.complete("slow", accept=has_text)
    assert result.status == "judge_failed" and "timeout" in (result.error or "")
    assert server.count == 2


def test_unreachable_endpoint_fails_without_raising(tmp_path):
    with FakeOpenAIServer() as server:
        base_url = server.base_url  # a loopback port that is closed once the server stops
    config = JudgeConfig(base_url=base_url, model="m", max_retries=1, backoff_initial_s=0.01, cache_dir=tmp_path)
    with JudgeClient(config) as judge:
        result = judge.complete("hello", accept=has_text)
        again = judge.complete("hello again", accept=has_text)
    assert result.status == "judge_failed" and "connection refused" in (result.error or "")
    assert again.status == "judge_failed" and "circuit breaker is open" in (again.error or "")
    assert judge.stats["requests"] == 1  # a closed port is not retried, and the open breaker sends nothing


def test_concurrency_bound_is_respected(openai_server, tmp_path):  # noqa: F811
    server = openai_server(fixed_latency(answer, 0.05))
    with JudgeClient(config_for(server, tmp_path, max_concurrency=3)) as judge:
        results = judge.complete_many([f"p{i}" for i in range(15)], accept=has_text)
        assert all(r.status == "judged" for r in results)
        assert 2 <= server.max_in_flight <= 3
        server.reset()
        with ThreadPoolExecutor(10) as pool:  # many caller threads share one client's bound
            threaded = list(
                pool.map(lambda prompt: judge.complete(prompt, accept=has_text), [f"t{i}" for i in range(20)])
            )
    assert [r.text for r in threaded] == [f"answer to t{i}" for i in range(20)]
    assert 2 <= server.max_in_flight <= 3
    assert judge.stats["requests"] == 35  # queueing for a slot never turned into a timeout or retry


def test_complete_many_keeps_order_and_dedupes(openai_server, tmp_path, capsys):  # noqa: F811
    server = openai_server(fixed_latency(answer, 0.01))
    prompts = ["c", "a", "b", "a", "c"]
    with JudgeClient(config_for(server, tmp_path)) as judge:
        results = judge.complete_many(prompts, accept=has_text)
        assert judge.complete_many([], accept=has_text) == []
    assert [r.text for r in results] == [f"answer to {p}" for p in prompts]
    assert server.count == 3
    assert "LLM judge" in capsys.readouterr().err  # progress bar


def test_corrupt_cache_entry_is_rejudged(openai_server, tmp_path):  # noqa: F811
    server = openai_server(answer)
    config = config_for(server, tmp_path)
    with JudgeClient(config) as judge:
        judge.complete("q", accept=has_text)
    [entry] = cache_files(tmp_path)
    entry.write_text("{not json", encoding="utf-8")
    with JudgeClient(config) as judge:
        assert judge.complete("q", accept=has_text) == JudgeResult(status="judged", text="answer to q")
    assert server.count == 2
    assert '"answer to q"' in entry.read_text(encoding="utf-8")


def test_api_key_never_leaks(openai_server, tmp_path, caplog):  # noqa: F811
    def echo_key(request: ChatRequest) -> Reply:
        echoed = f"you sent {request.headers.get('authorization')}"
        if "reject" in request.text:
            return Reply(text=echoed, status=400)
        return Reply(text=echoed, status=500) if "crash" in request.text else Reply(text="fine")

    caplog.set_level(logging.DEBUG)
    server = openai_server(echo_key)
    config = config_for(server, tmp_path, max_retries=1)
    with JudgeClient(config) as judge:
        results = [
            judge.complete("judge this", accept=has_text),
            judge.complete("reject this", accept=has_text),
            judge.complete("crash this", accept=has_text),
        ]
        texts = [repr(config), str(config), repr(judge), *map(repr, results), *(r.error or "" for r in results)]
    assert [r.status for r in results] == ["judged", "judge_failed", "judge_failed"]
    assert "you sent Bearer ***" in (results[1].error or "")  # the echoed key was scrubbed
    assert all(r.headers["authorization"] == f"Bearer {FAKE_KEY}" for r in server.requests)
    texts += [record.getMessage() for record in caplog.records] + [caplog.text]
    texts += [path.read_text(encoding="utf-8") for path in cache_files(tmp_path)]
    assert any("retrying" in text for text in texts)  # the retry warnings were captured
    assert not [text for text in texts if FAKE_KEY in text]


def test_judge_off_and_not_configured(tmp_path):
    configured = {"SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "SCIFIG_JUDGE_MODEL": "m"}
    for off in ("off", "OFF", " off "):
        assert get_judge({**configured, "SCIFIG_JUDGE": off}) is None
    assert get_judge({}) is None
    assert get_judge({"SCIFIG_JUDGE_MODEL": "m"}) is None  # no endpoint
    assert get_judge({"OPENAI_API_BASE": "http://127.0.0.1:9/v1"}) is None  # no model


def test_env_configuration_and_fallbacks(tmp_path):
    env = {
        "OPENAI_API_BASE": "http://127.0.0.1:9/v1/",
        "OPENAI_API_KEY": "openai-key",
        "SCIFIG_JUDGE_MODEL": "m",
        "SCIFIG_JUDGE_CACHE": str(tmp_path / "c"),
    }
    config = JudgeConfig.from_env(env)
    assert config is not None
    assert (config.base_url, config.api_key) == ("http://127.0.0.1:9/v1", "openai-key")
    assert config.cache_dir == tmp_path / "c"
    assert config.max_concurrency == 8 and config.max_tokens is None
    override = {
        **env,
        "SCIFIG_JUDGE_BASE_URL": "http://localhost:8001/v1",
        "SCIFIG_JUDGE_API_KEY": "judge-key",
        "SCIFIG_JUDGE_MAX_CONCURRENCY": "3",
        "SCIFIG_JUDGE_TIMEOUT_S": "2.5",
        "SCIFIG_JUDGE_MAX_TOKENS": "64",
    }
    config = JudgeConfig.from_env(override)
    assert config is not None
    assert (config.base_url, config.api_key) == ("http://localhost:8001/v1", "judge-key")
    assert (config.max_concurrency, config.timeout_s, config.max_tokens) == (3, 2.5, 64)
    with pytest.raises(ValueError, match="SCIFIG_JUDGE_MAX_CONCURRENCY"):
        JudgeConfig.from_env({**env, "SCIFIG_JUDGE_MAX_CONCURRENCY": "many"})


def test_get_judge_from_env_is_memoised_and_works(openai_server, tmp_path):  # noqa: F811
    server = openai_server(answer)
    env = {"OPENAI_API_BASE": server.base_url, "SCIFIG_JUDGE_MODEL": "m", "SCIFIG_JUDGE_CACHE": str(tmp_path)}
    clients: list[JudgeClient | None] = []
    threads = [threading.Thread(target=lambda: clients.append(get_judge(env))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    judge = clients[0]
    assert judge is not None and all(client is judge for client in clients)
    assert get_judge({**env, "SCIFIG_JUDGE_MODEL": "other"}) is not judge
    assert judge.complete("via env", accept=has_text).text == "answer to via env"
    assert "authorization" not in server.requests[0].headers  # no key configured -> no header


def test_base_url_validation():
    assert JudgeConfig(base_url="http://127.0.0.1:8000/v1/", model="m").base_url == "http://127.0.0.1:8000/v1"
    for bad in ("ftp://127.0.0.1/v1", "127.0.0.1:8000/v1", "http://", ""):
        with pytest.raises(ValueError, match="base_url"):
            JudgeConfig(base_url=bad, model="m")
    with pytest.raises(ValueError, match="max_concurrency"):
        JudgeConfig(base_url="http://127.0.0.1/v1", model="m", max_concurrency=0)


def test_shipped_presets():
    assert PRESETS == ["gemini-1.0-pro", "gpt-4o-2024-05-13", "gpt-4o-mini", "llama-3.1-8b-instruct-vllm"]
    for name in PRESETS:
        preset = load_preset(name)
        assert {"base_url", "model", "api_key_env"} <= set(preset)
        assert JudgeConfig.from_env({"SCIFIG_JUDGE": name}) is not None

    vllm = JudgeConfig.from_env({"SCIFIG_JUDGE": "llama-3.1-8b-instruct-vllm"})
    assert vllm is not None and vllm.api_key is None
    assert (vllm.base_url, vllm.model) == ("http://127.0.0.1:8000/v1", "meta-llama/Llama-3.1-8B-Instruct")
    # A hosted preset is not redirected by the generic OPENAI_API_BASE meant for the evaluated model.
    gpt = JudgeConfig.from_env({"SCIFIG_JUDGE": "gpt-4o-mini", "OPENAI_API_BASE": "http://127.0.0.1:9/v1"})
    assert gpt is not None and gpt.base_url == "https://api.openai.com/v1" and gpt.model == "gpt-4o-mini"


def test_preset_env_override():
    env = {
        "SCIFIG_JUDGE": "llama-3.1-8b-instruct-vllm",
        "SCIFIG_JUDGE_MODEL": "my-served-name",
        "SCIFIG_JUDGE_MAX_RETRIES": "1",
        "VLLM_API_KEY": "vllm-key",
    }
    config = JudgeConfig.from_env(env)
    assert config is not None
    assert (config.model, config.max_retries, config.api_key) == ("my-served-name", 1, "vllm-key")
    assert config.max_concurrency == 32  # from the preset
    config = JudgeConfig.from_env({**env, "SCIFIG_JUDGE_API_KEY": "explicit", "SCIFIG_JUDGE_BASE_URL": "http://h:1/v1"})
    assert config is not None and (config.api_key, config.base_url) == ("explicit", "http://h:1/v1")


def test_preset_from_path_end_to_end(openai_server, tmp_path):  # noqa: F811
    server = openai_server(answer)
    preset = tmp_path / "local-judge.yaml"
    preset.write_text(f"base_url: {server.base_url}\nmodel: local\napi_key_env: MY_JUDGE_KEY\nmax_tokens: 32\n")
    env = {"SCIFIG_JUDGE": str(preset), "MY_JUDGE_KEY": FAKE_KEY, "SCIFIG_JUDGE_CACHE": str(tmp_path / "cache")}
    judge = get_judge(env)
    assert judge is not None and judge.config.max_tokens == 32
    assert judge.complete("from a preset", accept=has_text).text == "answer to from a preset"
    request = server.requests[0]
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}" and request.body["max_tokens"] == 32


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ("base_url: http://127.0.0.1/v1\nmodel: m\napi_key_env: K\ntemperature: 0.5\n", "'temperature'"),
        ("base_url: http://127.0.0.1/v1\napi_key_env: K\n", "'model'"),
        ("base_url: http://127.0.0.1/v1\nmodel: m\n", "'api_key_env'"),
        ("base_url: http://127.0.0.1/v1\nmodel: m\napi_key_env: K\nmax_concurrency: 0\n", "'max_concurrency'"),
        ("base_url: http://127.0.0.1/v1\nmodel: m\napi_key_env: K\ntimeout_s: fast\n", "'timeout_s'"),
        ("base_url: http://127.0.0.1/v1\nmodel: m\napi_key_env: sk-live-abc123\n", "'api_key_env'"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_bad_preset_names_file_and_key(tmp_path, content, key):
    preset = tmp_path / "bad.yaml"
    preset.write_text(content)
    with pytest.raises(ValueError) as excinfo:
        JudgeConfig.from_env({"SCIFIG_JUDGE": str(preset)})
    message = str(excinfo.value)
    assert str(preset) in message and key in message
    assert "sk-live-abc123" not in message  # a key pasted into api_key_env is not echoed


def test_unknown_preset_lists_available(tmp_path):
    with pytest.raises(ValueError, match="gpt-4o-mini"):
        get_judge({"SCIFIG_JUDGE": "no-such-judge"})
    with pytest.raises(ValueError, match="not found"):
        get_judge({"SCIFIG_JUDGE": str(tmp_path / "missing.yaml")})
