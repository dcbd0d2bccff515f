"""A local judge server that misbehaves on the wire: slow or endless replies, redirects, another model's name.

Rule implemented: the server listens only on 127.0.0.1 (random free port) and answers every request with what a
*policy* -- ``policy(WireRequest) -> Wire`` -- decides: a ``chat.completion`` (its ``model`` field the requested
model, or another name), an HTTP redirect with a ``Location`` header, the whole response (status line, headers and
body) sent a few bytes at a time, or headers followed by a body that never ends. A ``GET`` is answered with an HTML
page (what a web server behind a redirect would send). Every request is recorded; ``stop()`` wakes every handler that
is still sending, so a test never waits on a dripping reply.

:class:`tests.harness.openai_server.FakeOpenAIServer` writes each reply at once; this server exists for what happens
between the bytes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.harness.local_server import LocalHTTPServer, LocalServer

MAX_SEND_S = 120.0
"""A dripping or endless reply stops after this long (the server closes the connection), so no handler outlives a
test that forgot to stop the server."""


@dataclass
class WireRequest:
    """One request as the policy sees it."""

    method: str
    path: str
    body: dict[str, Any]
    text: str  # the text of every message, joined with "\n"
    received_at: float  # time.monotonic()


@dataclass
class Wire:
    """What the server sends for one request."""

    text: str = ""  # the assistant's content of a 200 reply
    status: int = 200
    model: str | None = None  # the reply's ``model`` field; None: the model the request named
    location: str | None = None  # sent as a Location header (a redirect)
    bytes_per_s: float | None = None  # send the whole response at this rate (None: at once)
    endless: bool = False  # after the headers, send the body's bytes at ``bytes_per_s`` (default 4) without end


WirePolicy = Callable[[WireRequest], Wire]


def _text(body: dict[str, Any]) -> str:
    texts = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [str(part.get("text", "")) for part in content if isinstance(part, dict)]
    return "\n".join(texts)


def completion(text: str, model: str) -> bytes:
    """A ``chat.completion`` body with ``text`` as the assistant's content."""
    return json.dumps(
        {
            "id": "chatcmpl-wire",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


class _Server(LocalHTTPServer):
    owner: WireJudge


_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 307: "Temporary Redirect", 308: "Permanent Redirect"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5.0
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        page = b"<html><body><h1>Welcome</h1></body></html>"
        self.server.owner._record(WireRequest("GET", self.path, {}, "", time.monotonic()))
        self._write(200, {"Content-Type": "text/html", "Content-Length": str(len(page))}, page, None)

    def do_POST(self) -> None:
        received = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        request = WireRequest("POST", self.path, body, _text(body), received)
        owner = self.server.owner
        owner._record(request)
        wire = owner.policy(request)
        headers = {"Content-Type": "application/json"}
        if wire.location is not None:
            headers["Location"] = wire.location
        data = b"" if wire.location is not None else completion(wire.text, wire.model or str(body.get("model")))
        if wire.endless:
            headers["Content-Length"] = str(10**9)
            self._write(wire.status, headers, b"", None)
            self._drip(b" " * 10**6, wire.bytes_per_s or 4.0)
            self.close_connection = True
            return
        headers["Content-Length"] = str(len(data))
        self._write(wire.status, headers, data, wire.bytes_per_s)

    def _write(self, status: int, headers: dict[str, str], data: bytes, rate: float | None) -> None:
        head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
        head += "".join(f"{key}: {value}\r\n" for key, value in headers.items()) + "\r\n"
        whole = head.encode() + data
        if rate is None:
            try:
                self.wfile.write(whole)
                self.wfile.flush()
            except OSError:
                self.close_connection = True
            return
        self._drip(whole, rate)

    def _drip(self, data: bytes, rate: float) -> None:
        """Send ``data`` one byte every ``1 / rate`` seconds, until it is sent, the client goes away, the server
        stops or :data:`MAX_SEND_S` has passed."""
        owner, start = self.server.owner, time.monotonic()
        for index in range(len(data)):
            if owner.wait_for_stop(1.0 / rate) or time.monotonic() - start > MAX_SEND_S:
                break
            try:
                self.wfile.write(data[index : index + 1])
                self.wfile.flush()
            except OSError:
                break
        self.close_connection = True


class WireJudge(LocalServer[WireRequest]):
    """The server, driven by ``policy`` (reassignable while it runs); a context manager or start()/stop()."""

    server_class = _Server
    handler = _Handler
    thread_name = "wire-judge"

    def __init__(self, policy: WirePolicy | None = None) -> None:
        super().__init__()
        self.policy: WirePolicy = policy or (lambda request: Wire(text="1"))

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"
