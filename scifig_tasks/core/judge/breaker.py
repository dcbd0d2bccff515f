"""The judge's circuit breaker and slow-judge notice: a judge that cannot answer stops being asked, and a slow one
is named.

* Circuit breaker: a refused connection or a host name that does not resolve (nothing listens there; never retried)
  opens it at once; so do :data:`BREAKER_THRESHOLD` consecutive failed calls (each after its retries; a 400, 413 or
  422 about one prompt does not count), and :data:`SILENT_TIMEOUTS` requests in a row that time out with no reply
  of any kind in between (a judge that accepts connections and never answers: the run ends one or two timeouts after
  it started asking, about two minutes at most with the default 60 s). While open, every call that the cache cannot
  answer returns ``judge_failed`` at once without being sent, and one ERROR line names the endpoint and what to
  check. It stays open for the life of the client (the process); failures are never cached, so a rerun asks them
  again.
* A judge that has not answered a request after :data:`SLOW_NOTICE_S` seconds (or half the timeout, if shorter) is
  named once in a WARNING line with the timeout setting, so a slow or hung judge is visible within the first minute;
  a slow judge that does answer within the timeout is otherwise left alone.
"""

from __future__ import annotations

import logging
import socket
import threading

from scifig_tasks.core.judge.config import JudgeConfig, _endpoint
from scifig_tasks.core.judge.replies import _Failure

logger = logging.getLogger("scifig.judge")

SILENT_TIMEOUTS = 2
"""Requests in a row that time out with no reply of any kind between them: the judge is taken as hung and the circuit
breaker opens (a slow judge that still answers some requests resets the count with every reply)."""

SLOW_NOTICE_S = 20.0
"""Seconds a request may wait for its reply before one WARNING line says the judge is slow (half the timeout if
that is less)."""

# Statuses that say something about the endpoint rather than about one prompt: they count towards the breaker.
_ENDPOINT_STATUSES = frozenset({401, 403, 404, 408, 409, 429})


def _unreachable(exc: BaseException) -> str | None:
    """Why nothing can answer at the endpoint (refused connection, unknown host) when that caused ``exc``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return "host name not found (DNS lookup failed)"
        current = current.__cause__ or current.__context__
    return None


class Breaker:
    """The circuit breaker of a :class:`~scifig_tasks.core.judge.client.JudgeClient` (a mixin: the client's
    ``__init__`` sets the state below; ``_scrub`` is :class:`~scifig_tasks.core.judge.sending.Sending`'s)."""

    config: JudgeConfig
    _lock: threading.Lock
    _breaker: str | None
    _consecutive_failures: int
    _silent_timeouts: int  # requests in a row that timed out with no reply of any kind in between
    _slow_noted: bool
    _slow_after: float

    @property
    def breaker(self) -> str | None:
        """Why the circuit breaker opened, or ``None`` while it is closed."""
        return self._breaker

    def _note_slow(self) -> None:
        """One WARNING line, the first time a request waits :attr:`_slow_after` seconds for its reply."""
        with self._lock:
            if self._slow_noted:
                return
            self._slow_noted = True
        logger.warning(
            "LLM judge at %s has not answered a request in %.0fs; waiting up to %gs per request "
            "(SCIFIG_JUDGE_TIMEOUT_S) before retrying; a judge that never answers stops the run after %d timeouts",
            _endpoint(self.config.base_url),
            self._slow_after,
            self.config.timeout_s,
            SILENT_TIMEOUTS,
        )

    def _note_silent_timeout(self) -> None:
        """A request timed out: enough of them in a row, with no reply between, open the breaker."""
        with self._lock:
            self._silent_timeouts += 1
            run = self._silent_timeouts
        if run >= SILENT_TIMEOUTS:
            self._trip(
                f"{run} requests in a row timed out after {self.config.timeout_s:g}s with no reply "
                "(SCIFIG_JUDGE_TIMEOUT_S sets the timeout)"
            )

    def _settle(self, reply: str | _Failure) -> None:
        """A finished call resets, or adds to, the run of consecutive failures that opens the breaker."""
        if isinstance(reply, str):
            with self._lock:
                self._consecutive_failures = 0
            return
        if not reply.counts:
            return
        with self._lock:
            self._consecutive_failures += 1
            run, broken = self._consecutive_failures, self._breaker is not None
        if not broken:  # once the breaker is open its one ERROR line speaks for every call (calls in flight too)
            logger.warning("judge call to %s failed: %s", _endpoint(self.config.base_url), reply.error)
        if run >= self.config.breaker_threshold:
            self._trip(f"{run} consecutive judge calls failed, the last with {reply.error}")

    def _trip(self, reason: str) -> None:
        """Open the breaker (once): one ERROR line naming the endpoint and what to check."""
        with self._lock:
            if self._breaker is not None:
                return
            self._breaker = reason = self._scrub(reason)
        logger.error(
            "LLM judge at %s: %s. Circuit breaker open: every further judge call of this run is marked judge_failed "
            "without being sent. Check that the judge server is running and reachable at SCIFIG_JUDGE_BASE_URL, and "
            "SCIFIG_JUDGE_MODEL / SCIFIG_JUDGE_API_KEY (or the SCIFIG_JUDGE preset); SCIFIG_JUDGE=off runs without a "
            "judge.",
            _endpoint(self.config.base_url),
            reason,
        )
