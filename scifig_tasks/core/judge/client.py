"""The judge client: one judgement from the cache, from an identical request in flight, or from the endpoint.

:class:`JudgeClient` puts the concerns of the other modules together (:mod:`~scifig_tasks.core.judge.accounting`,
:mod:`~scifig_tasks.core.judge.cache`, :mod:`~scifig_tasks.core.judge.breaker`,
:mod:`~scifig_tasks.core.judge.sending`); :func:`get_judge` hands out one client per configuration.

* Identical requests in flight at the same time are sent once and the reply is shared (a paid judge pays once).
* Under :func:`dry_run` no request is sent: a call the cache cannot answer is counted as ``would_send`` and fails.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from scifig_tasks.core import settings
from scifig_tasks.core.judge.accounting import Accounting, check_declared
from scifig_tasks.core.judge.breaker import SLOW_NOTICE_S, Breaker
from scifig_tasks.core.judge.cache import ReplyCache
from scifig_tasks.core.judge.config import JudgeConfig, _endpoint
from scifig_tasks.core.judge.replies import Accept, JudgeResult, _Failure, _readable, has_text
from scifig_tasks.core.judge.sending import Sending, _httpx_flavour, _sdk_client
from scifig_tasks.core.secrets import mask, url_credentials
from scifig_tasks.core.settings import Settings

logger = logging.getLogger("scifig.judge")

_dry = False


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


class JudgeClient(Accounting, ReplyCache, Breaker, Sending):
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
        self._own_secrets = [*extra, *url_credentials(config.base_url)]
        self._flavour = _httpx_flavour()
        self._sdk = _sdk_client(self)
        _all_clients.add(self)

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.config.model!r}, base_url={self.config.base_url!r})"

    def _secrets(self) -> dict[str, str]:
        """What to mask in the cache and in what is sent: this judge's key and URL credentials and the process's
        secrets as they are now (:func:`settings.process_secrets`: those the running command declared included,
        although the client is shared by every command of the process)."""
        return settings.process_secrets(self._own_secrets)

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._sdk.close()

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
        again and, when retries run out, is ``judge_failed``; a cached one it rejects is asked again. Asked from a task
        whose scoring hook declares no judge use, it refuses (:func:`~scifig_tasks.core.judge.accounting
        .check_declared`).
        """
        check_declared()
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
        secrets = self._secrets()
        stored = {key: mask(value, secrets) if isinstance(value, str) else value for key, value in entry.items()}
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
        self._cache_put(path, {**stored, "text": mask(reply, self._secrets())})
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


_clients: dict[tuple[JudgeConfig, bool], JudgeClient] = {}
_clients_lock = threading.Lock()
_all_clients: weakref.WeakSet[JudgeClient] = weakref.WeakSet()
"""Every client of the process (those :func:`get_judge` shares and any other), for :func:`usage_report`."""


def get_judge(given: Settings | Mapping[str, str] | None = None) -> JudgeClient | None:
    """The process-wide client for the judge the settings configure (the process's :func:`settings.current` when
    ``given`` is None; a :class:`Settings` value or an environment mapping otherwise), or None when judging is off
    or not configured. One client per configuration: callers asking for the same judge share its bound and cache."""
    check_declared()
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
                _endpoint(config.base_url),
                config.max_concurrency,
                config.cache_dir,
            )
    return client
