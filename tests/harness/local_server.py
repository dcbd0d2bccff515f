"""A local HTTP server on 127.0.0.1 (port 0: a port of its own) served from a daemon thread: the start, stop and
address the test servers share (:class:`tests.harness.openai_server.FakeOpenAIServer`,
:class:`tests.harness.judge_wire.WireJudge`)."""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

Request = TypeVar("Request")


class LocalHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that never waits for its handlers and skips the reverse-DNS lookup of its address."""

    daemon_threads = True
    block_on_close = False  # stop() must not wait for idle keep-alive connections
    owner: Any

    def server_bind(self) -> None:  # skip HTTPServer's reverse-DNS lookup of the bind address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


class LocalServer(Generic[Request]):
    """Serves ``handler`` with ``server_class`` (its ``owner`` is this object) while started; a context manager or
    start()/stop(). ``thread_name`` names the serving thread; the handler records what it received with
    :meth:`_record`."""

    server_class: type[LocalHTTPServer] = LocalHTTPServer
    handler: type[BaseHTTPRequestHandler]
    thread_name = "local-server"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._stopping = threading.Event()
        self._httpd: LocalHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> Self:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = self.server_class(("127.0.0.1", 0), self.handler)
            self._httpd.owner = self
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; handlers waiting on :attr:`stopping` wake up at once."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
        self._httpd = self._thread = None

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def wait_for_stop(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (a handler's delay); ``True`` at once when the server stops meanwhile."""
        return self._stopping.wait(seconds)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[Request]:
        """The requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """Number of requests received (including ones answered with faults)."""
        with self._lock:
            return len(self._requests)

    def _record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)
