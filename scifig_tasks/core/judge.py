"""Shared LLM judge client used by every benchmark for LLM answer extraction.

Rule implemented: a judgement is one temperature-0 chat completion from a single OpenAI-compatible endpoint
(``POST {base_url}/chat/completions``, sent through the ``openai`` Python SDK), and asking the judge never breaks an
evaluation run:

* Configuration comes from the settings (:mod:`scifig_tasks.core.settings`, read from the environment once):
  ``SCIFIG_JUDGE_BASE_URL``, ``SCIFIG_JUDGE_MODEL`` and ``SCIFIG_JUDGE_API_KEY`` (falling back to
  ``OPENAI_API_BASE`` / ``OPENAI_API_KEY``), plus the optional knobs ``SCIFIG_JUDGE_MAX_CONCURRENCY``,
  ``SCIFIG_JUDGE_TIMEOUT_S`` (the SDK's request timeout), ``SCIFIG_JUDGE_MAX_RETRIES`` (the SDK's ``max_retries``),
  ``SCIFIG_JUDGE_MAX_TOKENS`` and ``SCIFIG_JUDGE_CACHE``. ``SCIFIG_JUDGE=off`` switches judging off;
  ``SCIFIG_JUDGE=<preset>`` starts from ``model_configs/judges/<preset>.yaml`` (or a YAML path), and the settings
  above, when given, override the preset's fields. :meth:`JudgeConfig.from_settings` builds the configuration from a
  :class:`~scifig_tasks.core.settings.Settings` value and :class:`JudgeConfig` from explicit arguments (a test, a
  notebook, a second judge in one process); :func:`get_judge` uses the process's settings.
* At most ``max_concurrency`` HTTP requests per client are in flight, whatever the number of calling threads.
* Retries are the SDK's: HTTP 408, 409, 429, 5xx, timeouts and connection errors, with ``Retry-After`` honoured;
  the wait is scifig's capped exponential back-off (``backoff_initial_s`` doubling, plus jitter, at most
  ``backoff_max_s``, never less than ``Retry-After`` within that cap). Any other 4xx fails at once.
* A reply is an answer only when the caller can read it as the answer it asked for: every call names its ``accept``
  check (a letter where a letter is asked, a number where a number is asked; the protocol's "None" is an answer).
  A reply without text (malformed JSON, no ``choices[0].message.content``, empty content) or one ``accept`` rejects
  is asked again like a failed request; when retries run out the result is ``judge_failed`` (flagged: the run exits
  non-zero) -- ``complete`` never raises for network, HTTP, JSON or reply problems.
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
* Identical requests in flight at the same time are sent once and the reply is shared (a paid judge pays once).
* Judgements are cached on disk, keyed by sha256 of (base URL, model, prompt, system message, max_tokens,
  temperature), so a rerun makes no repeated calls. Only replies the caller's ``accept`` check reads are cached, and
  a cached entry it rejects (one written by an older release) is asked again. The cache directory is
  ``SCIFIG_JUDGE_CACHE``, else ``$XDG_CACHE_HOME/scifig/judge``, else ``~/.cache/scifig/judge``.
* Accounting: every call is charged to the task it is made for (:func:`task_scope`; the calling thread's task, which
  :meth:`JudgeClient.complete_many` hands to its own threads): requests sent, cache hits, shared replies, failures,
  prompt and completion tokens (the reply's ``usage``), and the wall time during which at least one of the task's
  calls was waiting on the judge. :func:`usage_report` gives the per-task figures of every client of the process,
  with the cost when the judge has a price per million tokens (``price_per_million_input`` /
  ``price_per_million_output``, or ``SCIFIG_JUDGE_PRICE_PER_MILLION_INPUT`` / ``_OUTPUT``); results files record it
  as the environment block's ``judge_usage``. Under :func:`dry_run` no request is sent: a call the cache cannot
  answer is counted as ``would_send`` and fails.
* The API key only ever travels in the ``Authorization`` header: it is kept out of reprs, logs and errors, and a
  cache entry holds no secret (:mod:`scifig_tasks.core.secrets`: the environment's keys and the judge's, echoed in
  a model output the prompt quotes or in the judge's reply, are masked; the base URL is stored without user:password).
"""

from __future__ import annotations

import contextlib
import contextvars
import email.utils
import hashlib
import importlib
import json
import logging
import os
import random
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import openai
from tqdm.auto import tqdm

from scifig_tasks.core import settings
from scifig_tasks.core.judge_presets import load_preset
from scifig_tasks.core.secrets import mask, url_credentials
from scifig_tasks.core.settings import Settings

logger = logging.getLogger("scifig.judge")

_OFF = settings.OFF_WORDS
_NO_PRESET = settings.NO_PRESET_WORDS
# The preset fields SCIFIG_JUDGE_<FIELD> settings can override (:data:`judge_presets.OPTIONAL`).
_KNOBS: dict[str, settings.Setting[Any]] = {
    "max_concurrency": settings.JUDGE_MAX_CONCURRENCY,
    "timeout_s": settings.JUDGE_TIMEOUT_S,
    "max_retries": settings.JUDGE_MAX_RETRIES,
    "max_tokens": settings.JUDGE_MAX_TOKENS,
    "price_per_million_input": settings.JUDGE_PRICE_PER_MILLION_INPUT,
    "price_per_million_output": settings.JUDGE_PRICE_PER_MILLION_OUTPUT,
}
"""The setting that overrides each optional preset field."""


BREAKER_THRESHOLD = 5
"""Consecutive failed judge calls (each after its retries) that open the circuit breaker."""

SILENT_TIMEOUTS = 2
"""Requests in a row that time out with no reply of any kind between them: the judge is taken as hung and the circuit
breaker opens (a slow judge that still answers some requests resets the count with every reply)."""

SLOW_NOTICE_S = 20.0
"""Seconds a request may wait for its reply before one WARNING line says the judge is slow (half the timeout if
that is less)."""

Accept = Callable[[str], bool]
"""A caller's check that a reply is the answer it asked for (see :func:`has_text`)."""

# Statuses that say something about the endpoint rather than about one prompt: they count towards the breaker.
_ENDPOINT_STATUSES = frozenset({401, 403, 404, 408, 409, 429})

NO_TASK = "(no task)"
"""The accounting label of judge calls made outside any :func:`task_scope`."""

USAGE_COUNTS = ("calls", "requests", "cache_hits", "shared", "judged", "failed", "would_send")
"""Per-task counters: ``calls`` (judgements asked for) = ``judged`` + ``cache_hits`` + ``shared`` + ``failed``
(+ ``would_send`` under :func:`dry_run`); ``requests`` counts HTTP requests sent, retries included."""
USAGE_TOKENS = ("prompt_tokens", "completion_tokens")
"""Token counters, summed from each reply's ``usage`` (a reply without one adds nothing)."""

_task: contextvars.ContextVar[str | None] = contextvars.ContextVar("scifig_judge_task", default=None)
_dry = False


@contextlib.contextmanager
def task_scope(name: str | None) -> Iterator[None]:
    """Charge the judge calls made in this block (in this thread, and in the threads ``complete_many`` starts from
    it) to the task ``name``."""
    token = _task.set(name)
    try:
        yield
    finally:
        _task.reset(token)


def current_task() -> str:
    """The task judge calls made now are charged to (:data:`NO_TASK` outside any :func:`task_scope`)."""
    return _task.get() or NO_TASK


@contextlib.contextmanager
def dry_run() -> Iterator[None]:
    """Within this block :func:`get_judge` hands out clients that send nothing: a call the cache answers is a cache
    hit, any other is counted as ``would_send`` and returns ``judge_failed`` (``scifig rescore --dry-run``)."""
    global _dry
    before, _dry = _dry, True
    try:
        yield
    finally:
        _dry = before


def _default_cache_dir(given: Settings | Mapping[str, str] | None = None) -> Path:
    """``SCIFIG_JUDGE_CACHE``, else ``$XDG_CACHE_HOME/scifig/judge``, else ``~/.cache/scifig/judge`` (of ``given``
    settings, an environment mapping, or the process's settings)."""
    chosen = settings.resolve(given)
    explicit = chosen.get(settings.JUDGE_CACHE)
    if explicit is not None:
        return explicit
    xdg = (chosen.get(settings.XDG_CACHE_HOME) or Path("~/.cache")).expanduser()
    base = xdg if xdg.is_absolute() else Path("~/.cache").expanduser()  # the XDG spec ignores a relative path
    return base / "scifig" / "judge"


def _normalise_base_url(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"judge base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}")
    return url


@dataclass(frozen=True)
class JudgeConfig:
    """Where and how to ask the judge. ``api_key`` is excluded from ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_concurrency: int = settings.JUDGE_MAX_CONCURRENCY.default
    timeout_s: float = settings.JUDGE_TIMEOUT_S.default
    max_retries: int = settings.JUDGE_MAX_RETRIES.default  # retries after the first attempt
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    max_tokens: int | None = settings.JUDGE_MAX_TOKENS.default
    cache_dir: Path = field(default_factory=_default_cache_dir)  # the process's settings
    breaker_threshold: int = BREAKER_THRESHOLD  # consecutive failed calls that open the circuit breaker
    price_per_million_input: float | None = None  # price of a million prompt tokens (any currency); None: unpriced
    price_per_million_output: float | None = None  # price of a million completion tokens

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _normalise_base_url(self.base_url))
        object.__setattr__(self, "cache_dir", Path(self.cache_dir).expanduser())
        if not self.model.strip():
            raise ValueError("judge model must be a non-empty string")
        if self.max_concurrency < 1:
            raise ValueError(f"judge max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"judge max_retries must be >= 0, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"judge timeout_s must be > 0, got {self.timeout_s}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"judge max_tokens must be >= 1, got {self.max_tokens}")
        if self.breaker_threshold < 1:
            raise ValueError(f"judge breaker_threshold must be >= 1, got {self.breaker_threshold}")
        prices = (self.price_per_million_input, self.price_per_million_output)
        if any(price is not None and price < 0 for price in prices):
            raise ValueError(f"judge prices per million tokens must be >= 0, got {prices}")
        if (prices[0] is None) != (prices[1] is None):
            raise ValueError(
                "judge price_per_million_input and price_per_million_output go together: give both or neither"
            )

    @property
    def priced(self) -> bool:
        """Whether a price per million tokens is configured (both input and output)."""
        return self.price_per_million_input is not None and self.price_per_million_output is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The price of the tokens, in the preset's currency; None when no price is configured."""
        if self.price_per_million_input is None or self.price_per_million_output is None:
            return None
        return (
            prompt_tokens * self.price_per_million_input + completion_tokens * self.price_per_million_output
        ) / 1_000_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JudgeConfig | None:
        """The configuration of the environment mapping ``environ`` (the process's settings when ``None``); see
        :meth:`from_settings`."""
        return cls.from_settings(settings.resolve(environ))

    @classmethod
    def from_settings(cls, given: Settings) -> JudgeConfig | None:
        """The judge ``given`` settings configure; None when off or not configured (no endpoint or no model).

        ``SCIFIG_JUDGE`` names a preset, whose fields the ``SCIFIG_JUDGE_*`` settings that were given override;
        without a preset the endpoint and key fall back to ``OPENAI_API_BASE`` / ``OPENAI_API_KEY`` (a preset's
        endpoint never does: its key is the variable its ``api_key_env`` names). Raises ValueError for a bad preset
        or a malformed setting (the variable named).
        """
        choice = given.get(settings.JUDGE).strip()
        if choice.lower() in _OFF:
            return None
        if choice.lower() in _NO_PRESET:
            preset: dict[str, Any] = {}
            base_url = given.get(settings.JUDGE_BASE_URL) or given.get(settings.OPENAI_API_BASE)
            api_key = given.get(settings.JUDGE_API_KEY) or given.get(settings.OPENAI_API_KEY)
        else:
            preset = load_preset(choice)
            base_url = given.get(settings.JUDGE_BASE_URL) or preset["base_url"]
            api_key = given.get(settings.JUDGE_API_KEY) or given.credential(preset["api_key_env"])
        model = given.get(settings.JUDGE_MODEL) or preset.get("model")
        if not base_url or not model:
            return None
        knobs: dict[str, Any] = {}
        for name, setting in _KNOBS.items():
            value = given.get(setting) if given.given(setting) else preset.get(name)
            if value is not None:
                knobs[name] = value
        return cls(
            base_url=base_url, model=model, api_key=api_key or None, cache_dir=_default_cache_dir(given), **knobs
        )


@dataclass(frozen=True)
class JudgeResult:
    """Outcome of one judge call; ``text`` is the judge's reply when ``status == "judged"``."""

    status: Literal["judged", "judge_failed", "judge_off"]
    text: str | None
    cached: bool = False
    error: str | None = None  # short reason, never containing the API key


@dataclass(frozen=True)
class _Failure:
    error: str
    counts: bool = True  # towards the circuit breaker: the endpoint's fault rather than one prompt's
    malformed: bool = False  # a reply came, without text: asked again


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


def _is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def endpoint_host(base_url: str) -> str:
    """The URL's ``host[:port]``, without any user:password part (what messages and results files may name)."""
    return urlsplit(base_url).netloc.rsplit("@", 1)[-1]


def _endpoint(base_url: str) -> str:
    """The base URL without any user:password part, for messages."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{endpoint_host(base_url)}{parts.path}"


def _httpx_flavour() -> Any:
    """The httpx package the SDK's HTTP client is built on (``httpx``; ``httpx2`` in newer SDK releases)."""
    for base in openai.DefaultHttpxClient.__mro__:
        package = base.__module__.split(".")[0]
        if base.__name__ == "Client" and package.startswith("httpx"):
            return importlib.import_module(package)
    return importlib.import_module("httpx")


def has_text(reply: str) -> bool:
    """The weakest ``accept`` check: the reply says something (for protocols whose own reader decides the rest)."""
    return bool(reply.strip())


def _readable(text: str, accept: Accept) -> bool:
    """Whether a reply is an answer: not empty, and accepted by the caller's check."""
    if not text.strip():
        return False
    try:
        return bool(accept(text))
    except Exception:  # a check that cannot read the reply has not accepted it
        logger.debug("judge reply check raised", exc_info=True)
        return False


def _sdk_client(owner: JudgeClient) -> openai.OpenAI:
    """The SDK client for ``owner``: its HTTP sends pass through ``owner._send`` (bound, count, breaker) and the SDK's
    retry waits are ``owner``'s back-off."""
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


class JudgeClient:
    """Thread-safe client for one judge configuration; share it (see ``get_judge``) so the bound holds globally.

    ``stats`` partitions calls: ``judged`` (fresh judgements) + ``cache_hits`` + ``shared`` (the reply of an identical
    request in flight) + ``failed``; ``requests`` counts HTTP attempts sent, retries included. ``breaker`` is why the
    circuit breaker opened (``None`` while closed).
    """

    def __init__(self, config: JudgeConfig, *, dry_run: bool | None = None) -> None:
        self.config = config
        # send nothing: count the calls the cache cannot answer (:func:`dry_run`; a client made within it is dry)
        self.dry_run = _dry if dry_run is None else dry_run
        self._usage: dict[str, dict[str, float]] = {}
        self._active: dict[str, tuple[int, float]] = {}  # task -> (calls waiting on the judge, since when)
        self._would_send: set[Path] = set()
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._lock = threading.Lock()
        self._stats = dict.fromkeys(("requests", "cache_hits", "shared", "judged", "failed"), 0)
        self._local = threading.local()  # the last attempt's failure, for the retry warning
        self._breaker: str | None = None
        self._consecutive_failures = 0
        self._silent_timeouts = 0  # requests in a row that timed out with no reply of any kind in between
        self._slow_noted = False
        self._slow_after = min(SLOW_NOTICE_S, config.timeout_s / 2)
        self._in_flight: dict[Path, Future[JudgeResult]] = {}
        extra = [config.api_key] if config.api_key else []
        self._secrets = settings.process_secrets([*extra, *url_credentials(config.base_url)])
        self._flavour = _httpx_flavour()
        self._sdk = _sdk_client(self)
        _all_clients.add(self)

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.config.model!r}, base_url={self.config.base_url!r})"

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sdk.close()

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._stats)

    @property
    def breaker(self) -> str | None:
        """Why the circuit breaker opened, or ``None`` while it is closed."""
        return self._breaker

    def _bump(self, name: str) -> None:
        with self._lock:
            if name in self._stats:
                self._stats[name] += 1
            self._charge(current_task(), name, 1)

    def _charge(self, task: str, name: str, amount: float) -> None:
        """Add ``amount`` to the task's counter ``name`` (the caller holds the lock)."""
        usage = self._usage.get(task)
        if usage is None:
            usage = self._usage[task] = dict.fromkeys((*USAGE_COUNTS, *USAGE_TOKENS, "wall_s"), 0)
        usage[name] += amount

    @contextlib.contextmanager
    def _timed(self) -> Iterator[None]:
        """One call of the current task: counted, and its time waiting on the judge added to the task's ``wall_s``
        (the union of its calls' intervals: calls in flight together count once)."""
        task = current_task()
        with self._lock:
            self._charge(task, "calls", 1)
            waiting, since = self._active.get(task, (0, time.monotonic()))
            self._active[task] = (waiting + 1, since)
        try:
            yield
        finally:
            with self._lock:
                waiting, since = self._active[task]
                if waiting == 1:
                    del self._active[task]
                    self._charge(task, "wall_s", time.monotonic() - since)
                else:
                    self._active[task] = (waiting - 1, since)

    def usage(self, *, drain: bool = False) -> dict[str, dict[str, float]]:
        """Per task: the counters of :data:`USAGE_COUNTS`, the tokens and ``wall_s``; ``drain`` starts them afresh
        (each results file reports what was spent since the last one)."""
        with self._lock:
            found = {task: dict(usage) for task, usage in self._usage.items()}
            if drain:
                self._usage.clear()
        return found

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        system: str | None = None,
        temperature: float = 0.0,
        accept: Accept,
    ) -> JudgeResult:
        """Ask the judge (or the cache); returns ``judged`` or ``judge_failed`` and never raises for I/O problems.

        ``system`` adds a system message before the prompt and ``temperature`` samples (a paper's own setting).
        ``accept(reply)`` says whether a reply is the answer asked for: one it rejects (or an empty one) is asked
        again and, when retries run out, is ``judge_failed``; a cached one it rejects is asked again.
        """
        with self._timed():
            return self._complete_or_share(prompt, max_tokens, system, temperature, accept)

    def _complete_or_share(
        self, prompt: str, max_tokens: int | None, system: str | None, temperature: float, accept: Accept
    ) -> JudgeResult:
        """:meth:`complete` within its accounting."""
        max_tokens = self.config.max_tokens if max_tokens is None else max_tokens
        entry: dict[str, Any] = {
            "base_url": _endpoint(self.config.base_url),
            "model": self.config.model,
            "system": system,
            "max_tokens": max_tokens,
            "temperature": float(temperature),
            "prompt": prompt,
        }
        path = self._cache_path(entry)
        stored = {key: mask(value, self._secrets) if isinstance(value, str) else value for key, value in entry.items()}
        text = self._cache_get(path, stored)
        if text is not None and _readable(text, accept):
            self._bump("cache_hits")
            return JudgeResult(status="judged", text=text, cached=True)
        mine: Future[JudgeResult] = Future()
        with self._lock:
            asking = self._in_flight.setdefault(path, mine)
            asking = None if asking is mine else asking
        if asking is not None:  # the same request is in flight: share its outcome
            shared = asking.result()
            if shared.status == "judged" and shared.text is not None and _readable(shared.text, accept):
                self._bump("shared")
                return shared
            if shared.status != "judged":
                self._bump("shared" if self.dry_run else "failed")
                return shared
            return self._complete(entry, stored, path, accept)  # read by another check: ask for this one
        try:
            text = self._cache_get(path, stored)  # an identical request may have finished since the first look
            if text is not None and _readable(text, accept):
                self._bump("cache_hits")
                result = JudgeResult(status="judged", text=text, cached=True)
            else:
                result = self._complete(entry, stored, path, accept)
            mine.set_result(result)
            return result
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._in_flight.pop(path, None)

    def _complete(self, entry: dict[str, Any], stored: dict[str, Any], path: Path, accept: Accept) -> JudgeResult:
        """Send one request for a cache miss; cache the reply when it is an answer."""
        system, prompt, max_tokens = entry["system"], entry["prompt"], entry["max_tokens"]
        temperature = entry["temperature"]
        messages = [{"role": "system", "content": system}] if system is not None else []
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [*messages, {"role": "user", "content": prompt}],
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.dry_run:
            return self._not_sent(path)
        reply = self._ask(body, accept)
        if isinstance(reply, _Failure):
            self._bump("failed")
            return JudgeResult(status="judge_failed", text=None, error=reply.error)
        self._cache_put(path, {**stored, "text": mask(reply, self._secrets)})
        self._bump("judged")
        return JudgeResult(status="judged", text=reply)

    def complete_many(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        accept: Accept,
    ) -> list[JudgeResult]:
        """``complete`` for every prompt concurrently (duplicates asked once); results in input order."""
        unique = list(dict.fromkeys(prompts))
        if not unique:
            return []
        workers = min(self.config.max_concurrency, len(unique))
        with (
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scifig-judge") as pool,
            tqdm(total=len(unique), desc="LLM judge", unit="prompt", disable=len(prompts) <= 1) as bar,
        ):
            futures = {
                prompt: pool.submit(
                    contextvars.copy_context().run, self.complete, prompt, max_tokens=max_tokens, accept=accept
                )
                for prompt in unique
            }
            for _ in as_completed(futures.values()):
                bar.update()
        return [futures[prompt].result() for prompt in prompts]

    def sample(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float,
        max_tokens: int | None = None,
        accept: Accept = has_text,
    ) -> JudgeResult:
        """One sampled chat completion of ``messages`` as given (``top_p`` 1 when sampling), with the concurrency
        bound, retries, back-off, reply check and breaker of :meth:`complete` but without its cache or sharing: a
        cached sample would repeat itself (a paper's protocol that averages several samples, MMSci's G-Eval)."""
        body: dict[str, Any] = {"model": self.config.model, "messages": list(messages), "temperature": temperature}
        if temperature > 0:
            body["top_p"] = 1
        max_tokens = self.config.max_tokens if max_tokens is None else max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        with self._timed():
            if self.dry_run:
                return self._not_sent(None)
            reply = self._ask(body, accept)
            if isinstance(reply, _Failure):
                self._bump("failed")
                return JudgeResult(status="judge_failed", text=None, error=reply.error)
            self._bump("judged")
            return JudgeResult(status="judged", text=reply)

    def _not_sent(self, path: Path | None) -> JudgeResult:
        """A dry run's cache miss: counted once per distinct request (a sampled one every time), never sent."""
        with self._lock:
            fresh = path is None or path not in self._would_send
            if path is not None:
                self._would_send.add(path)
        self._bump("would_send" if fresh else "shared")
        return JudgeResult(status="judge_failed", text=None, error="not sent (dry run)")

    # --- one call: the breaker, the SDK (with its retries), replies that are not answers asked again -------------

    def _ask(self, body: dict[str, Any], accept: Accept) -> str | _Failure:
        if self._breaker is not None:
            return _Failure(f"not sent: the judge's circuit breaker is open ({self._breaker})", counts=False)
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

    def _count_tokens(self, usage: Any) -> None:
        """Add a reply's ``usage`` (prompt and completion tokens) to the current task; a reply without one adds
        nothing."""
        found = {name: getattr(usage, name, None) for name in USAGE_TOKENS}
        task = current_task()
        with self._lock:
            for name, value in found.items():
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    self._charge(task, name, value)

    def _send(self, send: Callable[..., Any], request: Any, **kwargs: Any) -> Any:
        """One HTTP attempt, as the SDK makes it (retries included): within the concurrency bound, counted, and an
        unreachable endpoint reported to the SDK as a connection error it does not retry."""
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

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = self.config.backoff_initial_s * 2 ** (attempt - 1) * random.uniform(1.0, 1.25)
        return min(max(delay, retry_after or 0.0), self.config.backoff_max_s)

    def _scrub(self, error: str) -> str:
        if self.config.api_key:
            error = error.replace(self.config.api_key, "***")
        return " ".join(error.split())[:300]

    def _cache_path(self, entry: dict[str, Any]) -> Path:
        key = hashlib.sha256(json.dumps(entry, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        return self.config.cache_dir / key[:2] / key[2:4] / f"{key}.json"

    @staticmethod
    def _cache_get(path: Path, entry: dict[str, Any]) -> str | None:
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(cached, dict) or any(cached.get(k) != v for k, v in entry.items()):
            return None
        text = cached.get("text")
        return text if isinstance(text, str) else None

    @staticmethod
    def _cache_put(path: Path, record: dict[str, Any]) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(record, handle, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning("could not write judge cache entry %s: %s", path, exc)


_clients: dict[tuple[JudgeConfig, bool], JudgeClient] = {}
_clients_lock = threading.Lock()
_all_clients: weakref.WeakSet[JudgeClient] = weakref.WeakSet()
"""Every client of the process (those :func:`get_judge` shares and any other), for :func:`usage_report`."""


def _totals(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = dict.fromkeys((*USAGE_COUNTS, *USAGE_TOKENS, "wall_s"), 0)
    for row in rows:
        for name in total:
            total[name] += row.get(name, 0)
    return total


def _row(usage: Mapping[str, float], cost: float | None) -> dict[str, Any]:
    """One task's figures as results files record them: integers, seconds to 0.001, the cost (None: no price)."""
    row: dict[str, Any] = {name: int(usage.get(name, 0)) for name in (*USAGE_COUNTS, *USAGE_TOKENS)}
    if not row["would_send"]:
        del row["would_send"]
    row["wall_s"] = round(float(usage.get("wall_s", 0.0)), 3)
    row["cost"] = None if cost is None else round(cost, 6)
    return row


def usage_report(
    *, drain: bool = True, groups: Mapping[str, Iterable[str]] | None = None, clients: Iterable[JudgeClient] = ()
) -> dict[str, Any] | None:
    """What the judge did and cost, per task, over the process's clients (or ``clients``): ``None`` when nothing
    asked the judge. ``groups`` (group -> its tasks) adds each group's sums. ``drain`` starts the counts afresh.

    Shape: ``{"judges": [{"model", "host", "price_per_million": {"input", "output"} | None}], "priced": bool,
    "tasks": {task: row}, "groups": {group: row}, "total": row}``; a row has the counters of
    :data:`USAGE_COUNTS` (``would_send`` only in a dry run), the tokens, ``wall_s`` and ``cost`` (``None`` when a
    judge that was asked has no price).
    """
    chosen = list(clients) or list(_all_clients)
    per_task: dict[str, list[tuple[JudgeConfig, Mapping[str, float]]]] = {}
    judges: list[dict[str, Any]] = []
    for client in chosen:
        used = {task: row for task, row in client.usage(drain=drain).items() if row["calls"]}
        if not used:
            continue
        config = client.config
        price = (
            {"input": config.price_per_million_input, "output": config.price_per_million_output}
            if config.priced
            else None
        )
        judge = {"model": config.model, "host": endpoint_host(config.base_url), "price_per_million": price}
        if judge not in judges:
            judges.append(judge)
        for task, row in used.items():
            per_task.setdefault(task, []).append((config, row))
    if not per_task:
        return None

    def cost(parts: Sequence[tuple[JudgeConfig, Mapping[str, float]]]) -> float | None:
        costs = [c.cost(int(row["prompt_tokens"]), int(row["completion_tokens"])) for c, row in parts]
        return None if any(value is None for value in costs) else sum(value or 0.0 for value in costs)

    # the wall time of tasks asked by several clients is their sum: an upper bound of the time the task waited
    tasks = {task: _row(_totals(row for _, row in parts), cost(parts)) for task, parts in sorted(per_task.items())}
    every = [part for parts in per_task.values() for part in parts]
    report: dict[str, Any] = {"judges": judges, "priced": all(judge["price_per_million"] for judge in judges)}
    report["tasks"] = tasks
    if groups:
        found = {}
        for group, members in groups.items():
            parts = [part for member in members for part in per_task.get(member, [])]
            if parts:
                found[group] = _row(_totals(row for _, row in parts), cost(parts))
        if found:
            report["groups"] = dict(sorted(found.items()))
    report["total"] = _row(_totals(row for _, row in every), cost(every))
    return report


def usage_words(row: Mapping[str, Any] | None, *, priced: bool | None = None) -> str:
    """One row of :func:`usage_report` in words: ``12 requests, 3 cache hits, 1,234 + 56 tokens, cost 0.0012`` (or
    ``no price configured``); failures named when there were any."""
    if not row:
        return "no judge usage recorded"
    parts = [f"{row.get('requests', 0):,} requests", f"{row.get('cache_hits', 0):,} cache hits"]
    if row.get("failed"):
        parts.append(f"{row['failed']:,} failed")
    parts.append(f"{row.get('prompt_tokens', 0):,} prompt + {row.get('completion_tokens', 0):,} completion tokens")
    cost = row.get("cost")
    parts.append("no price configured" if cost is None or priced is False else f"cost {cost:.4f}")
    return ", ".join(parts)


def failure_summary(command: str, failed: Mapping[str, int]) -> str:
    """The last line of a command whose samples could not all be judged: how many, per task, and what to do."""
    per_task = ", ".join(f"{task} {count}" for task, count in sorted(failed.items()))
    return (
        f"{command}: {sum(failed.values())} samples could not be judged (judge_failed: {per_task}) — the scores that "
        "need the judge are incomplete; check SCIFIG_JUDGE_BASE_URL, SCIFIG_JUDGE_MODEL and the judge's API key, then "
        "rerun (judged replies are cached, so only these are asked again)"
    )


def judge_failures(results: Mapping[str, Any]) -> dict[str, int]:
    """Samples the LLM judge could not score, per task (groups are skipped: they re-count their tasks' samples).

    A task reports them as ``flags.judge.judge_failed`` in its ``breakdown`` metric (every benchmark) and, for MMSci
    captioning, as ``status.judge_failed`` of each judged metric (FActScore, G-Eval) in ``caption_report``; a task
    counts the largest of these, i.e. the samples left without at least one judged score.
    """
    groups = set(results.get("groups", {}))
    counts: dict[str, int] = {}
    for task, metrics in results.get("results", {}).items():
        if task in groups:
            continue
        found = [0]
        for key, value in metrics.items():
            metric = key.split(",")[0]
            if metric == "breakdown" and isinstance(value, dict):
                found.append(_count(value.get("flags"), "judge", "judge_failed"))
            elif metric == "caption_report" and isinstance(value, dict):
                judged = value.get("judged")
                found += [_count(m, "status", "judge_failed") for m in (judged or {}).values() if isinstance(m, dict)]
        if max(found):
            counts[task] = max(found)
    return counts


def _count(tree: Any, *keys: str) -> int:
    for key in keys:
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree if isinstance(tree, int) else 0


def get_judge(given: Settings | Mapping[str, str] | None = None) -> JudgeClient | None:
    """The process-wide client for the judge the settings configure (the process's :func:`settings.current` when
    ``given`` is None; a :class:`Settings` value or an environment mapping otherwise), or None when judging is off
    or not configured. One client per configuration: callers asking for the same judge share its bound and cache."""
    config = JudgeConfig.from_settings(settings.resolve(given))
    if config is None:
        logger.debug("LLM judge off or not configured")
        return None
    with _clients_lock:
        client = _clients.get((config, _dry))
        if client is None:
            client = _clients[(config, _dry)] = JudgeClient(config, dry_run=_dry)
            logger.info(
                "LLM judge: model %s at %s (max_concurrency=%d, cache %s)",
                config.model,
                config.base_url,
                config.max_concurrency,
                config.cache_dir,
            )
    return client


def configured_concurrency(given: Settings | Mapping[str, str] | None = None) -> int | None:
    """The configured judge's ``max_concurrency``, or None when judging is off, not configured or misconfigured.

    The frameworks' scoring threads are sized from it (``scifig_tasks.lmms_eval.concurrency``, the VLMEvalKit
    datasets) so that every request the judge client allows can be in flight; a misconfiguration is left to the
    scoring that needs the judge, which reports it.
    """
    try:
        config = JudgeConfig.from_settings(settings.resolve(given))
    except ValueError:
        return None
    return None if config is None else config.max_concurrency
