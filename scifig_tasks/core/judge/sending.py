"""Sending judge requests through the ``openai`` SDK: the concurrency bound, the deadline and the one retry loop.

:class:`Sender` masks what it sends, keeps at most ``max_concurrency`` requests in flight, gives each request one
deadline for the whole exchange (:mod:`scifig_tasks.core.judge.deadline`), never follows a redirect, and retries, with
scifig's back-off, both failed requests and replies that are not answers; the SDK sends each attempt once (its own
retries are off). The SDK is imported when a sender is made, not with this module. See docs/judge.md.
"""

from __future__ import annotations

import email.utils
import importlib
import logging
import math
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

from scifig_tasks.core.judge import deadline
from scifig_tasks.core.judge.accounting import Ledger
from scifig_tasks.core.judge.breaker import ENDPOINT_STATUSES, Breaker, unreachable
from scifig_tasks.core.judge.config import JudgeConfig, _endpoint, _is_loopback
from scifig_tasks.core.judge.replies import Accept, Answer, Failure, readable, scrub
from scifig_tasks.core.secrets import mask_credentials

logger = logging.getLogger("scifig.judge")

MAX_RETRY_AFTER_S = 120.0
"""A ``Retry-After`` asking for longer than this ends the retries (the ``openai`` SDK's rule)."""


def retry_after(headers: Any) -> float | None:
    """Seconds a ``retry-after-ms`` or ``Retry-After`` header (seconds or an HTTP date) asks to wait, if any."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    return None


def retryable(status: int, headers: Any) -> bool:
    """Whether a request answered with HTTP ``status`` is sent again: not when ``Retry-After`` asks for more than
    :data:`MAX_RETRY_AFTER_S`; else as an ``x-should-retry`` header says; else for 408, 409, 429 and 5xx."""
    wait = retry_after(headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER_S:
        return False
    said = None if headers is None else headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return status in (408, 409, 429) or status >= 500


def masked_body(body: Mapping[str, Any], secrets: Mapping[str, str]) -> dict[str, Any]:
    """``body`` (a chat-completion request) with the text of every message masked (:func:`mask_credentials`): a
    string content, and the ``text`` of each text part of a list content; images and every other field as given."""

    def masked(content: Any) -> Any:
        if isinstance(content, str):
            return mask_credentials(content, secrets)
        if not isinstance(content, list):
            return content
        return [
            {**part, "text": mask_credentials(part["text"], secrets)}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]

    messages = [
        {**message, "content": masked(message["content"])}
        if isinstance(message, dict) and "content" in message
        else message
        for message in body.get("messages") or []
    ]
    return {**body, "messages": messages}


def _httpx_module() -> Any:
    """The httpx package the SDK's HTTP client is built on (``httpx``; ``httpx2`` in newer SDK releases)."""
    import openai

    for base in openai.DefaultHttpxClient.__mro__:
        package = base.__module__.split(".")[0]
        if base.__name__ == "Client" and package.startswith("httpx"):
            return importlib.import_module(package)
    return importlib.import_module("httpx")


def redirect_target(location: str | None, request_url: str) -> str:
    """Where a redirect's ``Location`` points, fit for a message: resolved against the request's URL, without its
    ``user:password@``, query or fragment."""
    if not location:
        return "no Location header"
    target = urljoin(request_url, location.strip())
    return _endpoint(target) if urlsplit(target).scheme in ("http", "https") else target[:120]


def deadline_text(timeout_s: float) -> str:
    """What a request that outlived its deadline says: the limit and the setting."""
    return (
        f"no complete reply within {timeout_s:g}s (SCIFIG_JUDGE_TIMEOUT_S, the time limit of a whole request: "
        "connecting, the headers and the body)"
    )


@dataclass(frozen=True)
class _Attempt:
    """One HTTP request's outcome: the reply or why there is none, and whether the request is worth sending again."""

    reply: Answer | Failure
    retry: bool = False
    note: str = ""  # what failed, for the retry warning
    wait: float | None = None  # what Retry-After asked for


def _because(cause: BaseException | None) -> str:
    return f" ({type(cause).__name__}: {cause})" if cause is not None else ""


def _after(before: Answer | Failure | None, now: Answer | Failure) -> Answer | Failure:
    """A call's outcome once its attempt ``now`` is done: a retry the open circuit breaker refused leaves the call
    failed for what failed ``before`` it (a timeout stays a timeout), the breaker named after it."""
    if isinstance(before, Failure) and isinstance(now, Failure) and now.kind == "breaker":
        return replace(before, error=f"{before.error}; not retried: the circuit breaker opened ({now.detail})"[:400])
    return now


class Sender:
    """Sends one client's chat-completion requests: the bound (``max_concurrency`` in flight, whatever the number
    of calling threads), the retries and back-off, each request counted in ``ledger`` and watched by ``breaker``."""

    def __init__(self, config: JudgeConfig, breaker: Breaker, ledger: Ledger) -> None:
        import openai

        self.config = config
        self._breaker = breaker
        self._ledger = ledger
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        limits = _httpx_module().Limits(max_connections=None, max_keepalive_connections=config.max_concurrency)
        http_client = openai.DefaultHttpxClient(
            timeout=config.timeout_s,
            # the semaphore is the bound: waiting for a slot must never count against the request timeout
            limits=limits,
            trust_env=not _is_loopback(config.base_url),  # never route a local judge through an env proxy
            follow_redirects=False,  # a prompt goes to the configured endpoint or nowhere (redirected())
        )
        self._deadline_held = self._hold_deadline(http_client)
        self._sdk = openai.OpenAI(
            # the SDK insists on a key (else it reads OPENAI_API_KEY); with none configured no header is sent
            api_key=config.api_key or "unused",
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,  # the retries are ask()'s
            http_client=http_client,
        )
        self._headers: dict[str, Any] = {} if config.api_key else {"Authorization": openai.omit}
        self._said: set[str] = set()  # the one-time notices given (a redirect)
        self._said_lock = threading.Lock()

    @staticmethod
    def _hold_deadline(http_client: Any) -> bool:
        """Give ``http_client`` the whole-request deadline (:func:`deadline.bound`); False, and one WARNING line, where
        its HTTP library is not one the deadline knows: then a reply finished after the deadline is still refused, but
        the wait for it is bounded per read only."""
        try:
            deadline.bound(http_client)
        except deadline.DeadlineUnsupported as exc:
            logger.warning(
                "the judge's deadline (SCIFIG_JUDGE_TIMEOUT_S) cannot bound a whole request with this HTTP library "
                "(%s): it bounds each read, and a reply finished after it is refused",
                exc,
            )
            return False
        return True

    def close(self) -> None:
        self._sdk.close()

    def ask(self, body: Mapping[str, Any], accept: Accept, secrets: Mapping[str, str]) -> Answer | Failure:
        """The reply to ``body`` that ``accept`` reads, or why there is none; the one retry loop.

        The texts of ``body`` are masked (:func:`masked_body`) before the first attempt. A failed request worth
        sending again (:func:`retryable`, a timeout, a connection error) is retried up to ``max_retries`` times; a
        reply that is not an answer (no text, or one ``accept`` rejects) is asked again up to ``max_retries`` times,
        each time with the request retries afresh. The wait before each is :meth:`backoff`'s. A retry the circuit
        breaker refuses (it opened meanwhile) leaves the call failed for what failed before it.
        """
        reason = self._breaker.reason
        if reason is not None:
            error = f"not sent: the judge's circuit breaker is open ({reason})"
            return Failure(error, counts=False, kind="breaker", detail=reason)
        body = masked_body(body, secrets)
        max_retries = self.config.max_retries
        asked, retries = 1, 0  # replies that were not answers, plus one; failed requests since the last reply
        reply: Answer | Failure | None = None
        while True:
            attempt = self._attempt(body, retries)
            reply = _after(reply, attempt.reply)
            if isinstance(reply, Answer) and not readable(reply.text, accept):
                reply = self._refused(reply.text)
            if attempt.retry and retries < max_retries:
                retries += 1
                delay = 0.0  # an open breaker: the next attempt is refused at once
                if self._breaker.reason is None:
                    delay = self.backoff(retries, attempt.wait)
                    logger.warning(
                        "judge request failed (%s); retrying in %.2fs (retry %d of %d)",
                        attempt.note,
                        delay,
                        retries,
                        max_retries,
                    )
            elif isinstance(reply, Failure) and reply.malformed and asked <= max_retries and not self._breaker.reason:
                delay = self.backoff(asked, None)
                logger.warning(
                    "judge reply unusable (%s), attempt %d/%d; retrying in %.2fs",
                    reply.error,
                    asked,
                    max_retries + 1,
                    delay,
                )
                asked, retries = asked + 1, 0
            else:
                break
            time.sleep(delay)
        self._breaker.settle(reply)
        return reply

    def backoff(self, attempt: int, wait: float | None) -> float:
        """Seconds before retry ``attempt``: ``backoff_initial_s`` doubling, plus up to 25% jitter, never less than
        ``wait`` (Retry-After), at most ``backoff_max_s``."""
        delay = self.config.backoff_initial_s * 2 ** (attempt - 1) * random.uniform(1.0, 1.25)
        return min(max(delay, wait or 0.0), self.config.backoff_max_s)

    def _attempt(self, body: Mapping[str, Any], retries: int) -> _Attempt:
        """One HTTP request, within the bound and counted, done by its deadline (``timeout_s`` for the whole
        exchange); ``retries``: failed requests before it since the last reply (sent as the SDK numbers its
        retries)."""
        reason = self._breaker.reason
        if reason is not None:  # opened while this call waited to retry
            failure = Failure(
                self._scrub(f"circuit breaker open ({reason})"), counts=False, kind="breaker", detail=reason
            )
            return _Attempt(failure)
        headers = {**self._headers, "x-stainless-retry-count": str(retries)}
        with self._slots:
            self._ledger.count("requests")
            started = time.monotonic()
            with self._breaker.watching(), deadline.within(self.config.timeout_s):
                try:
                    completion = self._sdk.chat.completions.create(**body, extra_headers=headers)
                except Exception as exc:  # anything the SDK raises is a failed judge call, never a crashed run
                    return self._failed(exc)
        if not self._deadline_held and time.monotonic() - started > self.config.timeout_s:
            return self._timed_out()
        self._breaker.answered()
        return self._read(completion)

    def _read(self, completion: Any) -> _Attempt:
        """The answer a chat completion holds, with the model it names when that is not the configured one (counted,
        never refused: the endpoint chose it); a completion without a string content is malformed."""
        try:
            content = completion.choices[0].message.content
        except (AttributeError, LookupError, TypeError):
            return _Attempt(
                Failure("malformed response: no choices[0].message.content", malformed=True, kind="malformed")
            )
        self._ledger.tokens(getattr(completion, "usage", None))
        if not isinstance(content, str):
            kind = type(content).__name__
            failure = Failure(f"malformed response: content is {kind}, not a string", malformed=True, kind="malformed")
            return _Attempt(failure)
        named = getattr(completion, "model", None)
        other = named if isinstance(named, str) and named.strip() and named != self.config.model else None
        if other is not None:
            other = self._scrub(other)[:100]
            self._ledger.answered_by(other)
        return _Attempt(Answer(content, other))

    def _refused(self, text: str) -> Failure:
        """A reply that came but is not the answer the caller's check asks for: asked again, never counted towards
        the breaker (the endpoint works; its reply is out of shape)."""
        shown = self._scrub(repr(text[:60]))
        return Failure(
            f"reply is not the answer asked for: {shown}", counts=False, malformed=True, kind="form", detail=shown
        )

    def _timed_out(self) -> _Attempt:
        """A request with no complete reply by its deadline: retried; two in a row with no reply between open the
        breaker (:meth:`Breaker.timed_out`)."""
        self._breaker.timed_out()
        text = deadline_text(self.config.timeout_s)
        return _Attempt(Failure(f"timeout: {text}", kind="timeout", detail=text), retry=True, note="timeout")

    def _redirected(self, exc: Any) -> _Attempt:
        """A 3xx reply: never followed, so a prompt reaches the configured endpoint or nowhere. The call fails at
        once, naming where the redirect pointed; not a malformed reply (not asked again), and not the endpoint being
        down (it answered): the breaker is not told. One WARNING line says it, the first time."""
        response = exc.response
        request = getattr(response, "request", None)
        target = redirect_target(response.headers.get("location"), str(getattr(request, "url", "")))
        where = self._scrub(mask_credentials(target))
        status = exc.status_code
        if self._first("redirect"):
            logger.warning(
                "LLM judge at %s answered HTTP %d, a redirect to %s; a judge's redirects are not followed (the "
                "request was not sent there) and the call fails: set SCIFIG_JUDGE_BASE_URL to the address that "
                "answers, if you trust it",
                _endpoint(self.config.base_url),
                status,
                where,
            )
        detail = f"HTTP {status} to {where}"
        error = f"redirect not followed ({detail}): the request was not sent there"
        return _Attempt(Failure(error, counts=False, kind="redirect", detail=detail))

    def _first(self, notice: str) -> bool:
        """True the first time ``notice`` is asked about (one line per client)."""
        with self._said_lock:
            first = notice not in self._said
            self._said.add(notice)
        return first

    def _failed(self, exc: Exception) -> _Attempt:
        """What the SDK's exception says: the failure (key scrubbed), whether to retry, the breaker told."""
        import openai

        if isinstance(exc, openai.APIConnectionError):  # no reply: a timeout, a refused or broken connection
            reason = unreachable(exc)
            if reason is not None:  # nothing listens there: never retried
                self._breaker.trip(reason)
                return _Attempt(Failure(self._scrub(f"{reason}{_because(exc.__cause__)}")))
            if isinstance(exc, openai.APITimeoutError):
                return self._timed_out()
            cause = exc.__cause__
            note = self._scrub(f"{type(cause).__name__}: {cause}" if cause is not None else "no usable reply")
            return _Attempt(Failure(self._scrub(f"{exc.message}{_because(cause)}")), retry=True, note=note)
        self._breaker.answered()
        if isinstance(exc, openai.APIStatusError):
            status, headers = exc.status_code, exc.response.headers
            if 300 <= status < 400:
                return self._redirected(exc)
            counts = status in ENDPOINT_STATUSES or status >= 500
            error = self._scrub(f"HTTP {status}: {exc.response.text[:200]}")
            failure = Failure(error, counts=counts, kind="endpoint" if counts else "request")
            return _Attempt(failure, retry=retryable(status, headers), note=f"HTTP {status}", wait=retry_after(headers))
        if isinstance(exc, (openai.APIResponseValidationError, ValueError)):
            return _Attempt(Failure(f"malformed response: {type(exc).__name__}", malformed=True, kind="malformed"))
        return _Attempt(Failure(self._scrub(f"{type(exc).__name__}: {exc}")))

    def _scrub(self, error: str) -> str:
        return scrub(error, self.config.api_key)
