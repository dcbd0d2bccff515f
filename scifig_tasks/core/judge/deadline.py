"""One deadline for a whole judge request: connecting, sending, the reply's headers and its body.

The HTTP library's timeouts bound each network operation (one read, one write), so a server that sends a byte now and
then is never timed out. :func:`within` sets the moment a request must be done by; every socket operation of the
connections of a client given to :func:`bound` then waits at most until that moment, and one that would start after it
fails at once with the library's own timeout error (which the ``openai`` SDK reports as ``APITimeoutError``).

Connections are built through the HTTP core library's network backend (``httpcore``, ``httpcore2`` for the SDK's
``httpx2``): :func:`bound` puts :class:`DeadlineBackend` in front of the backend of each connection pool of an HTTP
client. A pooled connection reused by a later request reads that request's deadline, not the one it was opened with.
The host name lookup itself (``getaddrinfo``) is not bounded by it. See docs/judge.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("scifig_judge_deadline", default=None)
"""``time.monotonic()`` by which the request being sent in this thread must be done; None outside :func:`within`."""


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every socket operation in this block, in this thread, ends by ``seconds`` from now (see :func:`bound`)."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The timeout of one socket operation under the current deadline: the smaller of ``timeout`` and the time left;
    ``error`` when none is left."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class DeadlineStream:
    """A network stream whose reads, writes and TLS handshake wait no longer than the current deadline."""

    def __init__(self, stream: Any, core: ModuleType) -> None:
        self._stream = stream
        self._core = core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, self._core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        secured = self._stream.start_tls(ssl_context, server_hostname, _left(timeout, self._core.ConnectTimeout))
        return DeadlineStream(secured, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend:
    """A network backend whose connections are :class:`DeadlineStream` s, and whose connecting waits no longer than
    the current deadline."""

    def __init__(self, backend: Any, core: ModuleType) -> None:
        self._backend = backend
        self._core = core

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> DeadlineStream:
        timeout = _left(timeout, self._core.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return DeadlineStream(stream, self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        timeout = _left(timeout, self._core.ConnectTimeout)
        return DeadlineStream(self._backend.connect_unix_socket(path, timeout, socket_options), self._core)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineUnsupported(RuntimeError):
    """The HTTP client is not built the way :func:`bound` knows (another HTTP library, or a release that moved its
    connection pools): the judge cannot hold a deadline for a whole request."""


def bound(http_client: Any) -> None:
    """Put :class:`DeadlineBackend` in front of the network backend of every connection pool of ``http_client`` (an
    ``httpx`` / ``httpx2`` client: its transport and those mounted for proxies), before it has sent anything; raises
    :class:`DeadlineUnsupported` when a transport has no such pool."""
    transport = getattr(http_client, "_transport", None)
    if transport is None:
        raise DeadlineUnsupported(f"{type(http_client).__module__}.{type(http_client).__qualname__} has no transport")
    mounted = getattr(http_client, "_mounts", None)
    transports = [transport, *(mounted.values() if isinstance(mounted, dict) else ())]
    for transport in transports:
        if transport is None:  # a mount without a proxy: the default transport serves it
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            raise DeadlineUnsupported(
                f"{type(transport).__module__}.{type(transport).__qualname__} has no connection pool"
            )
        if isinstance(backend, DeadlineBackend):
            continue
        core = importlib.import_module(type(pool).__module__.split(".")[0])
        if not all(hasattr(core, name) for name in ("ReadTimeout", "WriteTimeout", "ConnectTimeout")):
            raise DeadlineUnsupported(f"{core.__name__} has no ReadTimeout / WriteTimeout / ConnectTimeout")
        pool._network_backend = DeadlineBackend(backend, core)
