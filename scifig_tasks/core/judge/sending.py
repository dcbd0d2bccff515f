"""Sending judge requests through the ``openai`` SDK: the concurrency bound, retries with back-off, and replies that
are not answers asked again. The SDK is imported when a client is made, not with this module (a run that never asks
the judge does not import it).

* At most ``max_concurrency`` HTTP requests per client are in flight, whatever the number of calling threads.
* Every text sent is masked first (:func:`masked_body`): the client's and the process's secrets, and anything shaped
  like a credential (:func:`scifig_tasks.core.secrets.mask_credentials`), since a model's output quoted in a judge
  prompt may hold one a server echoed. Only the credential is replaced, so a judgement (and a score) is unchanged.
* Retries are the SDK's: HTTP 408, 409, 429, 5xx, timeouts and connection errors, with ``Retry-After`` honoured;
  the wait is scifig's capped exponential back-off (``backoff_initial_s`` doubling, plus jitter, at most
  ``backoff_max_s``, never less than ``Retry-After`` within that cap). Any other 4xx fails at once.
"""

from __future__ import annotations

import email.utils
import importlib
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from scifig_tasks.core.judge.breaker import _ENDPOINT_STATUSES, _unreachable
from scifig_tasks.core.judge.config import JudgeConfig, _is_loopback
from scifig_tasks.core.judge.replies import Accept, _Failure, _readable
from scifig_tasks.core.secrets import mask_credentials

if TYPE_CHECKING:
    import openai

logger = logging.getLogger("scifig.judge")


def _retry_after(headers: Any) -> float | None:
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


def _httpx_flavour() -> Any:
    """The httpx package the SDK's HTTP client is built on (``httpx``; ``httpx2`` in newer SDK releases)."""
    import openai

    for base in openai.DefaultHttpxClient.__mro__:
        package = base.__module__.split(".")[0]
        if base.__name__ == "Client" and package.startswith("httpx"):
            return importlib.import_module(package)
    return importlib.import_module("httpx")


def _sdk_client(owner: Sending) -> openai.OpenAI:
    """The SDK client for ``owner``: its HTTP sends pass through ``owner._send`` (bound, count, breaker) and the SDK's
    retry waits are ``owner``'s back-off."""
    import openai

    config = owner.config

    class GuardedHttpClient(openai.DefaultHttpxClient):  # type: ignore[misc,valid-type]
        def send(self, request: Any, **kwargs: Any) -> Any:
            return owner._send(super().send, request, **kwargs)

    class ScifigOpenAI(openai.OpenAI):
        def _calculate_retry_timeout(self, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
            return owner._retry_delay(self.max_retries - remaining_retries + 1, response_headers)

    http_client = GuardedHttpClient(
        timeout=config.timeout_s,
        # the semaphore is the bound: waiting for a slot must never count against the request timeout
        limits=owner._flavour.Limits(max_connections=None, max_keepalive_connections=config.max_concurrency),
        trust_env=not _is_loopback(config.base_url),  # never route a local judge through an env proxy
    )
    return ScifigOpenAI(
        # the SDK insists on a key (else it reads OPENAI_API_KEY); with none configured, _send drops the header
        api_key=config.api_key or "unused",
        base_url=config.base_url,
        timeout=config.timeout_s,
        max_retries=config.max_retries,
        http_client=http_client,
    )


class Sending:
    """How a :class:`~scifig_tasks.core.judge.client.JudgeClient` sends (a mixin: the client's ``__init__`` sets the
    state below; the breaker's methods are :class:`~scifig_tasks.core.judge.breaker.Breaker`'s, ``_bump`` and
    ``_count_tokens`` :class:`~scifig_tasks.core.judge.accounting.Accounting`'s)."""

    config: JudgeConfig
    _lock: threading.Lock
    _slots: threading.BoundedSemaphore
    _local: threading.local  # the last attempt's failure, for the retry warning
    _breaker: str | None
    _silent_timeouts: int
    _slow_noted: bool
    _slow_after: float
    _flavour: Any
    _sdk: openai.OpenAI

    def _secrets(self) -> Mapping[str, str]:
        """The secrets to mask in what is sent (the client's: its key, its URL's credentials, the process's)."""
        return {}

    # --- one call: the breaker, the SDK (with its retries), replies that are not answers asked again -------------

    def _ask(self, body: dict[str, Any], accept: Accept) -> str | _Failure:
        """Every judge request passes here: its texts are masked (:func:`masked_body`) before the first attempt."""
        if self._breaker is not None:
            return _Failure(f"not sent: the judge's circuit breaker is open ({self._breaker})", counts=False)
        body = masked_body(body, self._secrets())
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            reply = self._call(body)
            if isinstance(reply, str) and not _readable(reply, accept):
                reply = _Failure(self._scrub(f"reply is not the answer asked for: {reply[:60]!r}"), malformed=True)
            if not (isinstance(reply, _Failure) and reply.malformed) or attempt == attempts or self._breaker:
                break
            delay = self._backoff(attempt, None)
            logger.warning(
                "judge reply unusable (%s), attempt %d/%d; retrying in %.2fs", reply.error, attempt, attempts, delay
            )
            time.sleep(delay)
        self._settle(reply)
        return reply

    def _call(self, body: dict[str, Any]) -> str | _Failure:
        """One SDK call; the reply text or the failure (key scrubbed)."""
        import openai

        try:
            completion = self._sdk.chat.completions.create(**body)
        except openai.APITimeoutError:
            return _Failure(f"timeout after {self.config.timeout_s:g}s")
        except openai.APIStatusError as exc:
            status = exc.status_code
            counts = status in _ENDPOINT_STATUSES or status >= 500
            return _Failure(self._scrub(f"HTTP {status}: {exc.response.text[:200]}"), counts=counts)
        except openai.APIConnectionError as exc:
            cause = f" ({type(exc.__cause__).__name__}: {exc.__cause__})" if exc.__cause__ is not None else ""
            return _Failure(self._scrub(f"{exc.message}{cause}"))
        except (openai.APIResponseValidationError, ValueError) as exc:
            return _Failure(f"malformed response: {type(exc).__name__}", malformed=True)
        except Exception as exc:  # anything else the SDK raises is still a failed judge call, never a crashed run
            return _Failure(self._scrub(f"{type(exc).__name__}: {exc}"))
        try:
            content = completion.choices[0].message.content
        except (AttributeError, LookupError, TypeError):
            return _Failure("malformed response: no choices[0].message.content", malformed=True)
        self._count_tokens(getattr(completion, "usage", None))
        if not isinstance(content, str):
            return _Failure(f"malformed response: content is {type(content).__name__}, not a string", malformed=True)
        return content

    def _send(self, send: Callable[..., Any], request: Any, **kwargs: Any) -> Any:
        """One HTTP attempt, as the SDK makes it (retries included): within the concurrency bound, counted, and an
        unreachable endpoint reported to the SDK as a connection error it does not retry."""
        import openai

        if self._breaker is not None:
            raise openai.APIConnectionError(message=f"circuit breaker open ({self._breaker})", request=request)
        self._local.note = None
        if not self.config.api_key and "authorization" in request.headers:
            del request.headers["authorization"]  # no key configured: no Authorization header at all
        with self._slots:
            self._bump("requests")
            notice = None
            if not self._slow_noted:
                notice = threading.Timer(self._slow_after, self._note_slow)
                notice.daemon = True
                notice.start()
            try:
                response = send(request, **kwargs)
            except Exception as exc:
                reason = _unreachable(exc)
                if reason is not None:
                    self._trip(reason)
                    raise openai.APIConnectionError(message=reason, request=request) from exc
                timed_out = isinstance(exc, self._flavour.TimeoutException)
                self._local.note = "timeout" if timed_out else f"{type(exc).__name__}: {exc}"
                if timed_out:
                    self._note_silent_timeout()
                raise
            finally:
                if notice is not None:
                    notice.cancel()
        with self._lock:
            self._silent_timeouts = 0
        if response.status_code >= 400:
            self._local.note = f"HTTP {response.status_code}"
        return response

    def _retry_delay(self, attempt: int, headers: Any) -> float:
        """The SDK's wait before retry ``attempt``: scifig's back-off (none once the breaker is open)."""
        if self._breaker is not None:
            return 0.0
        delay = self._backoff(attempt, _retry_after(headers))
        note = self._scrub(getattr(self._local, "note", None) or "no usable reply")
        logger.warning(
            "judge request failed (%s); retrying in %.2fs (retry %d of %d)",
            note,
            delay,
            attempt,
            self.config.max_retries,
        )
        return delay

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = self.config.backoff_initial_s * 2 ** (attempt - 1) * random.uniform(1.0, 1.25)
        return min(max(delay, retry_after or 0.0), self.config.backoff_max_s)

    def _scrub(self, error: str) -> str:
        if self.config.api_key:
            error = error.replace(self.config.api_key, "***")
        return " ".join(error.split())[:300]
