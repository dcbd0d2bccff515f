"""A local OpenAI-compatible chat server that stands in for real models and for the LLM judge in tests.

Rule implemented: the server listens only on 127.0.0.1 (random free port) and answers
``POST /v1/chat/completions`` with whatever a *policy* -- ``policy(ChatRequest) -> Reply`` -- decides: a normal
``chat.completion`` reply, an HTTP error (optionally with ``Retry-After``), a late reply (to provoke client
timeouts) or a malformed body. Every request is recorded, and the peak number of concurrently handled requests is
tracked so tests can check client-side concurrency bounds. Each recorded request also carries its arrival time and
the time its reply was written (``received_at`` / ``finished_at``, ``time.monotonic()`` seconds), so benchmarks can
time the API phase. Handling is bounded in time: delays are capped, idle connections time out and ``stop()`` wakes
every sleeping handler.

Policy helpers: ``fixed_latency`` (add a delay), ``faulty`` (deterministically turn a fraction of requests into
429 / 500 / timeout / malformed faults), ``gathering`` (hold each request until a number of them are held together),
``by_question`` (answer by substring of the request text) and ``echoing_key`` (append the request's API key to every
reply).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.harness.local_server import LocalHTTPServer, LocalServer


@dataclass
class ChatRequest:
    """One chat-completion request as the policy sees it (``headers`` keys are lower-case)."""

    body: dict[str, Any]
    text: str  # all text parts of all messages, joined with "\n"
    n_images: int  # number of image parts
    attempt: int  # 1 the first time this exact body is seen, 2 for the next identical request, ...
    headers: dict[str, str]
    received_at: float | None = None  # time.monotonic() when the request reached the handler (set by the server)
    finished_at: float | None = None  # time.monotonic() once the reply was written (None while still being handled)


@dataclass
class Reply:
    """What the server answers; a policy may also return a plain string, meaning ``Reply(text=...)``."""

    text: str | None = ""  # assistant content (None -> JSON null); the error message when status != 200
    status: int = 200
    delay_s: float = 0.0  # sleep before answering (longer than the client timeout simulates a timeout)
    malformed: bool = False  # answer 200 with a body that is not valid JSON
    retry_after: float | None = None  # sent as a Retry-After header when set


Policy = Callable[[ChatRequest], "Reply | str"]

FAULT_KINDS = ("429", "500", "timeout", "malformed")


def _as_reply(value: Reply | str) -> Reply:
    return value if isinstance(value, Reply) else Reply(text=value)


def _text_and_images(messages: object) -> tuple[str, int]:
    texts: list[str] = []
    n_images = 0
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
            elif kind in ("image_url", "input_image", "image"):
                n_images += 1
    return "\n".join(texts), n_images


def fixed_latency(policy: Policy, seconds: float) -> Policy:
    """Wrap ``policy`` so every reply is delayed by ``seconds`` more."""

    def delayed(request: ChatRequest) -> Reply:
        reply = _as_reply(policy(request))
        return replace(reply, delay_s=reply.delay_s + seconds)

    return delayed


def faulty(
    policy: Policy,
    rate: float,
    seed: int = 0,
    kinds: Sequence[str] = FAULT_KINDS,
    timeout_s: float = 1.5,
) -> Policy:
    """Wrap ``policy`` so a fraction ``rate`` of requests fail with one of ``kinds``.

    The choice is a deterministic function of (seed, attempt, request text), so a client retry (attempt + 1) gets a
    fresh draw. Kinds: an HTTP status such as "429" or "500", "timeout" (the real reply, ``timeout_s`` late -- use
    a client timeout below it) or "malformed" (a 200 whose body is not JSON).
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be within [0, 1], got {rate}")
    bad = [kind for kind in kinds if kind not in ("timeout", "malformed") and not kind.isdigit()]
    if not kinds or bad:
        raise ValueError(f"fault kinds must be HTTP statuses, 'timeout' or 'malformed'; got {list(kinds)}")

    def maybe_fault(request: ChatRequest) -> Reply:
        reply = _as_reply(policy(request))
        digest = hashlib.sha256(f"{seed}\0{request.attempt}\0{request.text}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= rate:
            return reply
        kind = kinds[int.from_bytes(digest[8:16], "big") % len(kinds)]
        if kind == "timeout":
            return replace(reply, delay_s=reply.delay_s + timeout_s)
        if kind == "malformed":
            return Reply(malformed=True)
        return Reply(text=f"injected fault: HTTP {kind}", status=int(kind))

    return maybe_fault


def gathering(policy: Policy, size: int, patience_s: float = 3.0) -> Policy:
    """Wrap ``policy`` so each request is held until ``size`` requests are held together (then all are answered), or
    for ``patience_s`` seconds when that many never arrive. A client keeping ``size`` requests in flight reaches that
    peak (``max_in_flight``) whatever the machine's speed; one asking fewer at a time stays below it. Concurrency is
    counted, never inferred from timings."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    condition = threading.Condition()
    state = {"held": 0, "released": 0}  # requests held now; groups released so far

    def gathered(request: ChatRequest) -> Reply:
        reply = _as_reply(policy(request))
        with condition:
            group = state["released"]
            state["held"] += 1
            if state["held"] == size:
                state["held"], state["released"] = 0, group + 1
                condition.notify_all()
            elif not condition.wait_for(lambda: state["released"] != group, timeout=patience_s):
                state["held"] -= 1
        return reply

    return gathered


def by_question(mapping: Mapping[str, str | Reply], default: str | Reply = "") -> Policy:
    """Answer with the value whose key is a substring of the request text (longest key wins), else ``default``."""
    keys = sorted(mapping, key=len, reverse=True)

    def answer(request: ChatRequest) -> Reply:
        for key in keys:
            if key in request.text:
                return _as_reply(mapping[key])
        return _as_reply(default)

    return answer


def echoing_key(policy: Policy) -> Policy:
    """Wrap ``policy`` so every 200 reply ends with the request's bearer token, as a careless or hostile server
    might echo it (a secret that reaches the model's output, the judge's prompt and whatever scifig writes)."""

    def echo(request: ChatRequest) -> Reply:
        reply = _as_reply(policy(request))
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if reply.status != 200 or reply.text is None or not token:
            return reply
        return replace(reply, text=f"{reply.text} (session {token})")

    return echo


class _HTTPServer(LocalHTTPServer):
    request_queue_size = 128  # listen backlog (socketserver: 5); a fuller queue drops connects, which then stall
    owner: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5.0  # socket timeout: idle keep-alive connections and stalled uploads are dropped
    disable_nagle_algorithm = True  # headers and body go out as separate writes; avoid 40 ms delayed-ACK stalls
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # silence per-request logging
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            owner = self.server.owner
            owner.models_headers.append({key.lower(): value for key, value in self.headers.items()})
            if owner.models_status != 200:
                self._send(owner.models_status, _error_body("refused", owner.models_status))
                return
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "scifig-tests"}
            self._send(200, json.dumps({"object": "list", "data": [model]}).encode())
        else:
            self._send(404, _error_body(f"no route GET {self.path}", 404))

    def do_POST(self) -> None:
        received_at = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error_body(f"no route POST {self.path}", 404))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, _error_body("request body must be a JSON object", 400))
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        request, (status, data, reply_headers) = self.server.owner._answer(body, headers, received_at)
        try:
            self._send(status, data, reply_headers)
        finally:
            request.finished_at = time.monotonic()

    def _send(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client went away first (e.g. it timed out)
            self.close_connection = True
        if self.server.owner.stopping:
            self.close_connection = True


def _error_body(message: str, status: int) -> bytes:
    return json.dumps({"error": {"message": message, "type": "fake_server_error", "code": status}}).encode()


class FakeOpenAIServer(LocalServer[ChatRequest]):
    """OpenAI-compatible server on 127.0.0.1 driven by ``policy``; use as a context manager or start()/stop().

    ``policy`` may be reassigned while the server runs.
    """

    server_class = _HTTPServer
    handler = _Handler
    thread_name = "fake-openai"

    def __init__(self, policy: Policy | None = None, *, model: str = "fake-model", max_delay_s: float = 30.0) -> None:
        super().__init__()
        self.policy: Policy = policy or (lambda request: Reply(text="ok"))
        self.model = model
        self.max_delay_s = max_delay_s
        self.errors: list[str] = []  # exceptions raised by the policy (answered as HTTP 500)
        self.models_status = 200  # the status of GET /v1/models (e.g. 401 for a refused key)
        self.models_headers: list[dict[str, str]] = []  # the headers of every GET /v1/models, lower-case keys
        self._seen: dict[str, int] = {}
        self._in_flight = 0
        self._max_in_flight = 0

    @property
    def max_in_flight(self) -> int:
        """Peak number of chat requests being handled at the same time."""
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Forget recorded requests, attempt counters, errors and the in-flight peak."""
        with self._lock:
            self._requests.clear()
            self._seen.clear()
            self.errors.clear()
            self._max_in_flight = self._in_flight

    def _answer(
        self, body: dict[str, Any], headers: dict[str, str], received_at: float | None = None
    ) -> tuple[ChatRequest, tuple[int, bytes, dict[str, str]]]:
        text, n_images = _text_and_images(body.get("messages"))
        identity = json.dumps(body, sort_keys=True)
        with self._lock:
            attempt = self._seen[identity] = self._seen.get(identity, 0) + 1
            request = ChatRequest(
                body=body, text=text, n_images=n_images, attempt=attempt, headers=headers, received_at=received_at
            )
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            try:
                reply = _as_reply(self.policy(request))
            except Exception as exc:  # a broken policy is reported, not hidden behind client retries
                with self._lock:
                    self.errors.append(repr(exc))
                reply = Reply(text=f"policy raised {exc!r}", status=500)
            if reply.delay_s > 0:
                self.wait_for_stop(min(reply.delay_s, self.max_delay_s))
        finally:
            with self._lock:  # counted out before the reply is written, so a client never sees it still in flight
                self._in_flight -= 1
        return request, self._render(reply, body, text)

    def _render(self, reply: Reply, body: dict[str, Any], prompt: str) -> tuple[int, bytes, dict[str, str]]:
        headers = {} if reply.retry_after is None else {"Retry-After": f"{reply.retry_after:g}"}
        if reply.malformed:
            return 200, b'{"choices": [{"message": this is not JSON', headers
        if reply.status != 200:
            return reply.status, _error_body(reply.text or f"HTTP {reply.status}", reply.status), headers
        prompt_tokens, completion_tokens = len(prompt.split()), len((reply.text or "").split())
        completion = {
            "id": f"chatcmpl-fake-{self.count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return 200, json.dumps(completion).encode(), headers
