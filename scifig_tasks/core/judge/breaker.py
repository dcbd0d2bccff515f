"""The judge's circuit breaker and slow-judge notice: a judge that cannot answer stops being asked, a slow one is
named once, and so is one whose replies keep coming out of shape. See docs/judge.md for when the breaker opens.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import socket
import threading
import time
from collections.abc import Iterator

from scifig_tasks.core.judge.config import JudgeConfig, _endpoint
from scifig_tasks.core.judge.replies import Answer, Failure, scrub

logger = logging.getLogger("scifig.judge")

SILENT_TIMEOUTS = 2
"""Requests in a row that time out with no reply of any kind between them: the judge is taken as hung and the circuit
breaker opens (a slow judge that still answers some requests resets the count with every reply)."""

SLOW_NOTICE_S = 20.0
"""Seconds a request may wait for its reply before one WARNING line says the judge is slow (half the timeout if
that is less)."""

ENDPOINT_STATUSES = frozenset({401, 403, 404, 408, 409, 429})
"""Statuses below 500 that say something about the endpoint rather than about one prompt: they count towards the
breaker (a 400, 413 or 422 about one prompt does not)."""


def unreachable(exc: BaseException) -> str | None:
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
    """The circuit breaker of one client (thread-safe): :attr:`reason` is why it opened, ``None`` while closed. It
    opens at once on :meth:`trip` (an unreachable endpoint), after :data:`SILENT_TIMEOUTS` requests in a row time out
    (:meth:`timed_out`, reset by :meth:`answered`), or after ``config.breaker_threshold`` consecutive calls failed by
    the endpoint (:meth:`settle`); once open it stays open for the life of the client.

    Only failures of the endpoint count: no connection, a 5xx or a status about the endpoint, no complete reply by
    the deadline, a reply that is no chat completion. A reply that came but that the caller's check refused for its
    form, a redirect (never followed) and a status about one prompt do not: the endpoint answers, so every later
    call is still asked and flagged on its own. As many calls in a row refused for their form give one WARNING line.
    """

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._consecutive_failures = 0
        self._refused_in_a_row = 0  # calls in a row whose replies were all refused for their form
        self._refusals_noted = False
        self._silent_timeouts = 0  # requests in a row that timed out with no reply of any kind in between
        self._slow_noted = False
        self._slow_after = min(SLOW_NOTICE_S, config.timeout_s / 2)
        self._watch_lock = threading.Lock()
        self._waiting: dict[int, float] = {}  # requests in flight -> when each was sent (time.monotonic())
        self._tokens = itertools.count()
        self._timed: int | None = None  # the request the running timer is for; None: no timer runs

    @property
    def reason(self) -> str | None:
        """Why the circuit breaker opened, or ``None`` while it is closed."""
        return self._reason

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """One request: the first to wait ``min(SLOW_NOTICE_S, timeout / 2)`` seconds for its reply (of the client)
        gives one WARNING line.

        One timer watches every request in flight: it runs out when the oldest of them would have waited that long
        (a timer thread per request cost each request a thread's start, in the middle of the judge's busy phase)."""
        if self._slow_noted:
            yield
            return
        with self._watch_lock:
            token = next(self._tokens)
            self._waiting[token] = time.monotonic()
            first = self._timed is None
            if first:
                self._timed = token
        if first:
            self._time(token, self._slow_after)
        try:
            yield
        finally:
            with self._watch_lock:
                del self._waiting[token]

    def _time(self, token: int, seconds: float) -> None:
        """Start the timer of request ``token``, which runs out in ``seconds``."""
        timer = threading.Timer(seconds, functools.partial(self._ran_out, token))
        timer.daemon = True
        timer.start()

    def _ran_out(self, token: int) -> None:
        """The timer of request ``token`` ran out: the judge is slow if that request still waits; otherwise the timer
        goes on for the oldest request still waiting, if any."""
        with self._watch_lock:
            slow = token in self._waiting
            oldest, since = None, 0.0
            if not slow and self._waiting:
                oldest, since = min(self._waiting.items(), key=lambda item: item[1])
            self._timed = token if slow else oldest
        if slow:
            self._note_slow()
        elif oldest is not None:
            self._time(oldest, max(0.0, since + self._slow_after - time.monotonic()))

    def answered(self) -> None:
        """A request got a reply of some kind (any HTTP status): the run of silent timeouts ends."""
        with self._lock:
            self._silent_timeouts = 0

    def timed_out(self) -> None:
        """A request timed out: enough of them in a row, with no reply between, open the breaker."""
        with self._lock:
            self._silent_timeouts += 1
            run = self._silent_timeouts
        if run >= SILENT_TIMEOUTS:
            self.trip(
                f"{run} requests in a row timed out after {self.config.timeout_s:g}s with no reply "
                "(SCIFIG_JUDGE_TIMEOUT_S sets the timeout)"
            )

    def settle(self, reply: Answer | Failure) -> None:
        """A finished call resets, or adds to, the run of consecutive failures that opens the breaker (only failures
        that count, those of the endpoint), and the run of calls refused for their form (:meth:`_refused`)."""
        if isinstance(reply, Answer):
            with self._lock:
                self._consecutive_failures = self._refused_in_a_row = 0
            return
        if reply.kind == "form":
            self._refused(reply)
        if not reply.counts:
            return
        with self._lock:
            self._consecutive_failures += 1
            run, broken = self._consecutive_failures, self._reason is not None
        if not broken:  # once the breaker is open its one ERROR line speaks for every call (calls in flight too)
            logger.warning("judge call to %s failed: %s", _endpoint(self.config.base_url), reply.error)
        if run >= self.config.breaker_threshold:
            self.trip(f"{run} consecutive judge calls failed, the last with {reply.error}")

    def _refused(self, reply: Failure) -> None:
        """One more call in a row whose replies were refused for their form: at ``breaker_threshold`` in a row, one
        WARNING line (once per client) says the judge answers out of shape; the breaker stays closed."""
        with self._lock:
            self._refused_in_a_row += 1
            run = self._refused_in_a_row
            say = run >= self.config.breaker_threshold and not self._refusals_noted
            self._refusals_noted = self._refusals_noted or say
        if say:
            logger.warning(
                "LLM judge at %s: %d judge calls in a row got replies refused for their form (the last: %s): the judge "
                "answers, but not in the shape its prompt asks for. The circuit breaker stays closed: every question "
                "is still asked (and asked again up to SCIFIG_JUDGE_MAX_RETRIES times), and one never answered in "
                "shape is flagged judge_failed. Check that SCIFIG_JUDGE_MODEL is a model that follows the prompt.",
                _endpoint(self.config.base_url),
                run,
                reply.detail or reply.error,
            )

    def trip(self, reason: str) -> None:
        """Open the breaker (once): one ERROR line naming the endpoint and what to check."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason = scrub(reason, self.config.api_key)
        logger.error(
            "LLM judge at %s: %s. Circuit breaker open: every further judge call of this run is marked judge_failed "
            "without being sent. Check that the judge server is running and reachable at SCIFIG_JUDGE_BASE_URL, and "
            "SCIFIG_JUDGE_MODEL / SCIFIG_JUDGE_API_KEY (or the SCIFIG_JUDGE preset); SCIFIG_JUDGE=off runs without a "
            "judge.",
            _endpoint(self.config.base_url),
            reason,
        )

    def _note_slow(self) -> None:
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
