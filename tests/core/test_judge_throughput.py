"""What a judge request costs the judge's busy phase: the slow-judge notice watches every request in flight with one
timer (a timer thread per request cost each request a thread's start), and ``complete_many`` asks prompts of different
shapes, each with its own check, in one pool (no group waits for another's last replies). Concurrency is counted by
the judge server (:func:`tests.harness.openai_server.gathering`), never inferred from timings."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from scifig_tasks.core.judge import JudgeClient, JudgeConfig
from scifig_tasks.core.judge.breaker import Breaker
from tests.harness.fixtures import openai_server  # noqa: F401 -- pytest fixture
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, gathering


class HeldTimer:
    """A ``threading.Timer`` that records its delay and runs out only when the test says so."""

    made: list[HeldTimer] = []

    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        self.interval, self.function, self.daemon = interval, function, False
        HeldTimer.made.append(self)

    def start(self) -> None:
        pass

    def cancel(self) -> None:
        pass


def test_one_timer_watches_every_request_and_the_slow_one_is_named_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    HeldTimer.made = []
    monkeypatch.setattr(threading, "Timer", HeldTimer)
    caplog.set_level(logging.WARNING, logger="scifig.judge")
    breaker = Breaker(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="judge", timeout_s=60.0))
    for _ in range(50):  # quick requests, one after another
        with breaker.watching():
            pass
    assert [timer.interval for timer in HeldTimer.made] == [20.0]  # before: one timer (a thread) per request
    with breaker.watching():  # a request still waiting when the first timer runs out
        HeldTimer.made[0].function()  # its request is done: the timer goes on for this one, for the time it has left
        assert len(HeldTimer.made) == 2 and 0.0 < HeldTimer.made[1].interval <= 20.0
        assert not caplog.records
        HeldTimer.made[1].function()  # still waiting: the judge is slow
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 and "has not answered a request in 20s" in lines[0]
    for _ in range(5):
        with breaker.watching():
            pass
    assert len(HeldTimer.made) == 2  # said once: no timer any more


def _judge(server: FakeOpenAIServer, tmp_path: Path) -> JudgeClient:
    config = JudgeConfig(
        base_url=server.base_url,
        model="judge",
        api_key="sk-throughput-test-0000",
        max_retries=1,
        backoff_initial_s=0.001,
        backoff_max_s=0.002,
        cache_dir=tmp_path / "cache",
    )
    return JudgeClient(config)


def _number(reply: str) -> bool:
    return reply.isdigit()


def _letter(reply: str) -> bool:
    return reply in ("A", "B", "C", "D")


def test_prompts_with_their_own_checks_are_asked_in_one_pool(openai_server, tmp_path: Path) -> None:  # noqa: F811
    def reply(request: ChatRequest) -> Reply:
        return Reply(text="7" if "number" in request.text else "B")

    server = openai_server(gathering(reply, size=4))
    prompts = ["a number, 1", "a letter, 1", "a number, 2", "a letter, 2", "a number, 1"]
    checks = [_number, _letter, _number, _letter, _number]
    with _judge(server, tmp_path) as judge:
        results = judge.complete_many(prompts, accept=checks)
        with pytest.raises(ValueError, match="2 checks for 1 prompts"):
            judge.complete_many(["a number, 3"], accept=[_number, _letter])
    assert [result.text for result in results] == ["7", "B", "7", "B", "7"]
    assert server.max_in_flight == 4  # the four distinct requests in flight together
    assert server.count == 4  # a prompt repeated with the same check is asked once
