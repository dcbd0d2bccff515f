"""Tests for the local OpenAI-compatible test server (tests/harness/openai_server.py), over real loopback HTTP."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.openai_server import (
    ChatRequest,
    FakeOpenAIServer,
    Reply,
    by_question,
    faulty,
    fixed_latency,
)

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def chat_body(*parts: dict, system: str | None = None) -> dict:
    messages = [{"role": "system", "content": system}] if system else []
    return {"model": "vlm", "messages": [*messages, {"role": "user", "content": list(parts)}], "max_tokens": 16}


def synthetic(text: str, attempt: int = 1) -> ChatRequest:
    return ChatRequest(body={}, text=text, n_images=0, attempt=attempt, headers={})


def test_chat_completion_reply_and_request_record(openai_server):  # noqa: F811
    server = openai_server(by_question({"capital of France": "Paris", "France": "a country"}, default="?"))
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    body = chat_body({"type": "text", "text": "What is the capital of France?"}, IMAGE, IMAGE, system="Be brief.")
    with httpx.Client(base_url=server.base_url, timeout=5) as http:
        first = http.post("/chat/completions", json=body, headers={"Authorization": "Bearer test"})
        second = http.post("/chat/completions", json=body)
        other = http.post("/chat/completions", json=chat_body({"type": "text", "text": "Where is Lyon?"}))
    assert first.status_code == 200
    reply = first.json()
    assert reply["object"] == "chat.completion" and reply["model"] == "vlm" and reply["id"]
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "Paris"}  # longest matching key
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert set(reply["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert other.json()["choices"][0]["message"]["content"] == "?"

    requests = server.requests
    assert server.count == len(requests) == 3
    assert requests[0].text == "Be brief.\nWhat is the capital of France?"
    assert requests[0].n_images == 2
    assert requests[0].headers["authorization"] == "Bearer test"
    assert requests[0].body == body
    assert [r.attempt for r in requests] == [1, 2, 1]  # identical body -> next attempt
    assert second.json()["choices"][0]["message"]["content"] == "Paris"


def test_null_content_models_and_bad_routes(openai_server):  # noqa: F811
    server = openai_server(lambda request: Reply(text=None), model="served-model")
    with httpx.Client(base_url=server.base_url, timeout=5) as http:
        reply = http.post("/chat/completions", json=chat_body({"type": "text", "text": "hi"}))
        assert reply.json()["choices"][0]["message"]["content"] is None
        models = http.get("/models").json()
        assert models["object"] == "list" and models["data"][0]["id"] == "served-model"
        assert http.get("/nothing").status_code == 404
        assert http.post("/completions", json={}).status_code == 404
        assert http.post("/chat/completions", content=b"not json").status_code == 400
    assert server.count == 1  # only valid chat requests are recorded


def test_error_status_retry_after_and_malformed(openai_server):  # noqa: F811
    server = openai_server(by_question({"slow down": Reply(status=429, retry_after=2), "junk": Reply(malformed=True)}))
    with httpx.Client(base_url=server.base_url, timeout=5) as http:
        limited = http.post("/chat/completions", json=chat_body({"type": "text", "text": "slow down"}))
        junk = http.post("/chat/completions", json=chat_body({"type": "text", "text": "junk"}))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["code"] == 429
    assert junk.status_code == 200
    with pytest.raises(ValueError):
        junk.json()


def test_policy_exception_is_reported():
    def broken(request: ChatRequest) -> Reply:
        raise RuntimeError("bug in policy")

    with FakeOpenAIServer(broken) as server, httpx.Client(base_url=server.base_url, timeout=5) as http:
        response = http.post("/chat/completions", json=chat_body({"type": "text", "text": "x"}))
    assert response.status_code == 500
    assert server.errors == ["RuntimeError('bug in policy')"]


def test_faulty_is_deterministic_and_hits_the_rate():
    policy = faulty(lambda request: "fine", rate=0.3, seed=7, timeout_s=0.5)
    replies = [policy(synthetic(f"question {i}")) for i in range(2000)]
    faults = [r for r in replies if r.status != 200 or r.malformed or r.delay_s > 0]
    assert 0.25 < len(faults) / len(replies) < 0.35
    kinds = Counter("timeout" if r.delay_s else "malformed" if r.malformed else str(r.status) for r in faults)
    assert set(kinds) == {"429", "500", "timeout", "malformed"}
    assert all(r.text == "fine" for r in faults if r.delay_s == 0.5)  # a timeout is the real answer, late
    assert replies == [policy(synthetic(f"question {i}")) for i in range(2000)]  # deterministic
    retried = [policy(synthetic(f"question {i}", attempt=2)) for i in range(2000)]
    assert retried != replies  # a retry gets a fresh draw
    assert all(faulty(lambda r: "x", 0.0)(synthetic(str(i))) == Reply(text="x") for i in range(200))
    assert all(faulty(lambda r: "x", 1.0, kinds=("503",))(synthetic(str(i))).status == 503 for i in range(200))
    with pytest.raises(ValueError):
        faulty(lambda r: "x", 0.5, kinds=("teapot",))


def test_fixed_latency_and_max_in_flight(openai_server):  # noqa: F811
    server = openai_server(fixed_latency(lambda request: "late", 0.3))

    def ask(i: int) -> str:
        with httpx.Client(timeout=5) as http:
            body = chat_body({"type": "text", "text": f"q{i}"})
            reply = http.post(f"{server.base_url}/chat/completions", json=body).json()
        return reply["choices"][0]["message"]["content"]

    start = time.monotonic()
    with ThreadPoolExecutor(5) as pool:
        assert list(pool.map(ask, range(5))) == ["late"] * 5
    assert 0.3 <= time.monotonic() - start < 1.5  # served concurrently, each delayed
    assert 2 <= server.max_in_flight <= 5
    server.reset()
    assert server.count == 0 and server.max_in_flight == 0 and server.requests == []


def test_stop_wakes_delayed_handlers():
    server = FakeOpenAIServer(lambda request: Reply(text="never mind", delay_s=20)).start()
    worker = threading.Thread(
        target=lambda: httpx.post(f"{server.base_url}/chat/completions", json=chat_body(), timeout=10), daemon=True
    )
    worker.start()
    deadline = time.monotonic() + 5
    while server.count == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    start = time.monotonic()
    server.stop()
    worker.join(timeout=5)
    assert time.monotonic() - start < 3
    assert not worker.is_alive()
    with pytest.raises(RuntimeError):
        _ = server.base_url


def test_openai_sdk_client_talks_to_the_server(openai_server):  # noqa: F811
    openai = pytest.importorskip("openai")
    server = openai_server(lambda request: f"{request.n_images} image(s): {request.text}")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=5)
    content = [{"type": "text", "text": "Describe the plot."}, IMAGE]
    response = client.chat.completions.create(model="vlm", messages=[{"role": "user", "content": content}])
    assert response.choices[0].message.content == "1 image(s): Describe the plot."
    assert response.usage is not None and response.usage.prompt_tokens == 3
