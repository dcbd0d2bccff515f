"""The judge client's parts and its one retry loop, over real HTTP to a local server.

* the client holds its parts (ledger, cache, breaker, sender), each a plain class; the SDK sends each attempt once;
* one loop retries both failed requests and replies that are not answers: a failed request is retried up to
  ``max_retries`` times, a reply that is not an answer is asked again up to ``max_retries`` times (the request
  retries afresh after each), with the same warnings and the SDK's retry numbering in the request headers;
* a ``Retry-After`` beyond two minutes, or ``x-should-retry``, decide as the SDK did;
* the judge modules and VLMEvalKit's judge read no environment variable: settings come through the settings module.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from scifig_tasks.core import settings
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, get_judge, has_text
from scifig_tasks.core.judge.accounting import Ledger
from scifig_tasks.core.judge.breaker import Breaker
from scifig_tasks.core.judge.cache import ReplyCache
from scifig_tasks.core.judge.sending import Sender, retryable
from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.judge_config import judge_config
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.paths import REPO

KEY = "sk-scifig-parts-FAKE-5a1c-DO-NOT-LEAK"


def config_for(base_url: str, tmp_path: Path, **overrides: object) -> JudgeConfig:
    return judge_config(base_url, tmp_path, KEY, **({"max_retries": 2} | overrides))


def in_turn(*replies: Reply) -> Callable[[ChatRequest], Reply]:
    """Each request gets the next reply; the last one is repeated."""
    given = iter(replies)
    last = replies[-1]

    def policy(request: ChatRequest) -> Reply:
        nonlocal last
        last = next(given, last)
        return last

    return policy


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "scifig.judge" and r.levelno == logging.WARNING]
    return [line.split("; retrying")[0] if "retrying" in line else line for line in lines]


def test_the_client_holds_plain_parts(tmp_path: Path) -> None:
    with JudgeClient(config_for("http://127.0.0.1:9/v1", tmp_path)) as judge:
        assert JudgeClient.__mro__ == (JudgeClient, object)  # no mixins
        assert isinstance(judge.ledger, Ledger) and isinstance(judge.cache, ReplyCache)
        assert isinstance(judge.circuit, Breaker) and isinstance(judge.sender, Sender)
        assert judge.sender._sdk.max_retries == 0  # the SDK sends each attempt once: the retries are the sender's
        assert judge.cache.directory == tmp_path / "cache"
        assert judge.breaker is None and judge.circuit.reason is None


def test_failed_requests_and_unusable_replies_share_one_loop(openai_server, tmp_path, caplog) -> None:  # noqa: F811
    caplog.set_level(logging.WARNING)
    server = openai_server(
        in_turn(Reply(status=503, text="x"), Reply(text=""), Reply(status=500), Reply(status=502), Reply(text="ok"))
    )
    with JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        assert judge.complete("q", accept=has_text).text == "ok"
        assert judge.stats == {"requests": 5, "cache_hits": 0, "shared": 0, "judged": 1, "failed": 0}
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "0", "1", "2"]
    assert warnings(caplog) == [
        "judge request failed (HTTP 503)",
        "judge reply unusable (reply is not the answer asked for: ''), attempt 1/3",
        "judge request failed (HTTP 500)",
        "judge request failed (HTTP 502)",
    ]


def test_after_an_unusable_reply_failed_requests_get_their_retries_again(openai_server, tmp_path, caplog) -> None:  # noqa: F811
    caplog.set_level(logging.WARNING)
    server = openai_server(in_turn(Reply(malformed=True), Reply(status=503, text="down")))
    with JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        result = judge.complete("q", accept=has_text)
    assert result.status == "judge_failed" and "HTTP 503" in (result.error or "")
    assert server.count == 4  # one malformed reply, then a request and its two retries
    assert warnings(caplog)[:3] == [
        "judge reply unusable (malformed response: JSONDecodeError), attempt 1/3",
        "judge request failed (HTTP 503)",
        "judge request failed (HTTP 503)",
    ]


def test_a_long_retry_after_ends_the_retries(openai_server, tmp_path) -> None:  # noqa: F811
    server = openai_server(in_turn(Reply(status=429, retry_after=200, text="later"), Reply(text="ok")))
    with JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        result = judge.complete("q", accept=has_text)
    assert result.status == "judge_failed" and "HTTP 429" in (result.error or "")
    assert server.count == 1


def test_which_statuses_are_retried() -> None:
    assert [status for status in (400, 401, 404, 408, 409, 413, 422, 429, 500, 503) if retryable(status, {})] == [
        408,
        409,
        429,
        500,
        503,
    ]
    assert retryable(400, {"x-should-retry": "true"}) and not retryable(503, {"x-should-retry": "false"})
    assert not retryable(503, {"retry-after": "121"}) and retryable(503, {"retry-after": "120"})


def test_the_judge_reads_its_settings_only_through_the_settings_module() -> None:
    judge_modules = sorted((REPO / "scifig_tasks" / "core" / "judge").glob("*.py"))
    reading = []
    for path in [*judge_modules, REPO / "scifig_tasks" / "vlmeval" / "judging.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                reading.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert reading == []


def test_vlmeval_judge_takes_a_settings_value(tmp_path: Path) -> None:
    from scifig_tasks.vlmeval import judging

    given = settings.Settings.from_environment(
        {
            "SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
            "SCIFIG_JUDGE_API_KEY": KEY,
            "SCIFIG_JUDGE_CACHE": str(tmp_path),
        },
        warn=False,
    )
    with judging.command_line("m", True):  # --judge m: the model from the command line, the rest from the settings
        chosen = judging.chosen_judge({"model": "m", "nproc": 2}, "VQA", given)
    assert chosen.client is not None and chosen.source == judging.FROM_VLMEVAL
    config = chosen.client.config
    assert (config.model, config.base_url, config.api_key) == ("m", "http://127.0.0.1:9/v1", KEY)
    assert (config.max_concurrency, config.cache_dir) == (2, tmp_path)


def test_get_judge_works_out_the_configuration_once_per_settings_value(monkeypatch, tmp_path: Path) -> None:
    built: list[object] = []
    original = JudgeConfig.from_settings.__func__

    def counting(cls: type[JudgeConfig], given: settings.Settings) -> JudgeConfig | None:
        built.append(given)
        return original(cls, given)

    monkeypatch.setattr(JudgeConfig, "from_settings", classmethod(counting))
    environ = {"SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "SCIFIG_JUDGE_MODEL": "m"}
    given = settings.Settings.from_environment({**environ, "SCIFIG_JUDGE_CACHE": str(tmp_path)}, warn=False)
    judges = {id(get_judge(given)) for _ in range(50)}  # the hooks ask once per sample
    assert len(judges) == 1 and len(built) == 1
    other = settings.Settings.from_environment({**environ, "SCIFIG_JUDGE_MODEL": "n"}, warn=False)
    assert get_judge(other).config.model == "n" and len(built) == 2  # another value: worked out afresh
    assert get_judge({"SCIFIG_JUDGE": "off"}) is None
    bad = settings.Settings.from_environment({"SCIFIG_JUDGE": str(tmp_path / "missing.yaml")}, warn=False)
    for _ in range(2):  # a bad preset is refused every time it is asked, never remembered as "no judge"
        with pytest.raises(ValueError, match="not found"):
            get_judge(bad)
