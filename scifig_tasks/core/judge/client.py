"""The judge client: one judgement from the cache, from an identical request in flight, or from the endpoint.

:class:`JudgeClient` holds its parts (a :class:`~scifig_tasks.core.judge.accounting.Ledger`, a
:class:`~scifig_tasks.core.judge.cache.ReplyCache`, a :class:`~scifig_tasks.core.judge.breaker.Breaker` and a
:class:`~scifig_tasks.core.judge.sending.Sender`); :func:`get_judge` hands out one client per configuration of the
settings. See docs/judge.md.
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
from scifig_tasks.core.judge.accounting import Ledger, check_declared
from scifig_tasks.core.judge.breaker import Breaker
from scifig_tasks.core.judge.cache import ReplyCache
from scifig_tasks.core.judge.config import JudgeConfig, _endpoint
from scifig_tasks.core.judge.replies import Accept, Failure, JudgeResult, has_text, readable
from scifig_tasks.core.judge.sending import Sender
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


class JudgeClient:
    """Thread-safe client for one judge configuration; share it (see ``get_judge``) so the bound holds globally.

    ``stats`` partitions calls: ``judged`` (fresh judgements) + ``cache_hits`` + ``shared`` (the reply of an identical
    request in flight) + ``failed``; ``requests`` counts HTTP attempts sent, retries included. ``breaker`` is why the
    circuit breaker opened (``None`` while closed). Under :func:`dry_run` nothing is sent: a call the cache cannot
    answer is counted as ``would_send`` and fails.
    """

    def __init__(self, config: JudgeConfig, *, dry_run: bool | None = None) -> None:
        self.config = config
        # send nothing: count the calls the cache cannot answer (:func:`dry_run`; a client made within it is dry)
        self.dry_run = _dry if dry_run is None else dry_run
        self.ledger = Ledger()
        self.cache = ReplyCache(config.cache_dir)
        self.circuit = Breaker(config)
        self.sender = Sender(config, self.circuit, self.ledger)
        self._lock = threading.Lock()
        self._in_flight: dict[Path, Future[JudgeResult]] = {}
        self._would_send: set[Path] = set()
        self._endpoint = _endpoint(config.base_url)  # the cache key's base URL: no user:password
        extra = [config.api_key] if config.api_key else []
        self._own_secrets = [*extra, *url_credentials(config.base_url)]
        _all_clients.add(self)

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.config.model!r}, base_url={self.config.base_url!r})"

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.sender.close()

    @property
    def stats(self) -> dict[str, int]:
        return self.ledger.stats

    @property
    def breaker(self) -> str | None:
        """Why the circuit breaker opened, or ``None`` while it is closed."""
        return self.circuit.reason

    def usage(self, *, drain: bool = False) -> dict[str, dict[str, float]]:
        """Per task: the counters, the tokens and ``wall_s`` (:meth:`Ledger.usage`)."""
        return self.ledger.usage(drain=drain)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        system: str | None = None,
        temperature: float = 0.0,
        request: Mapping[str, Any] | None = None,
        accept: Accept,
    ) -> JudgeResult:
        """Ask the judge (or the cache); returns ``judged`` or ``judge_failed`` and never raises for I/O problems.

        ``system`` adds a system message before the prompt and ``temperature`` samples (a paper's own setting);
        ``request`` adds fields a paper's protocol sets on the request (CharXiv's ``response_format``, ``seed``,
        ``top_p``), part of what the reply is cached under.
        ``accept(reply)`` says whether a reply is the answer asked for: one it rejects (or an empty one) is asked
        again and, when retries run out, is ``judge_failed``; a cached one it rejects is asked again. Asked from a task
        whose scoring hook declares no judge use, it refuses (:func:`~scifig_tasks.core.judge.accounting
        .check_declared`).
        """
        check_declared()
        with self.ledger.call():
            return self._complete_or_share(prompt, max_tokens, system, temperature, dict(request or {}), accept)

    def _secrets(self) -> dict[str, str]:
        """What to mask in the cache and in what is sent: this judge's key and URL credentials and the process's
        secrets as they are now (:func:`settings.process_secrets`: those the running command declared included,
        although the client is shared by every command of the process)."""
        return settings.process_secrets(self._own_secrets)

    def _cached(self, path: Path, stored: dict[str, Any], accept: Accept) -> JudgeResult | None:
        """The cached answer at ``path``, counted as a cache hit; None when there is none the caller reads."""
        text = self.cache.get(path, stored)
        if text is None or not readable(text, accept):
            return None
        self.ledger.count("cache_hits")
        return JudgeResult(status="judged", text=text, cached=True)

    def _complete_or_share(
        self,
        prompt: str,
        max_tokens: int | None,
        system: str | None,
        temperature: float,
        request: dict[str, Any],
        accept: Accept,
    ) -> JudgeResult:
        """:meth:`complete` within its accounting."""
        max_tokens = self.config.max_tokens if max_tokens is None else max_tokens
        entry: dict[str, Any] = {
            "base_url": self._endpoint,
            "model": self.config.model,
            "system": system,
            "max_tokens": max_tokens,
            "temperature": float(temperature),
            "prompt": prompt,
        }
        if request:  # absent otherwise, so the replies cached before it existed keep their keys
            entry["request"] = request
        path = self.cache.path(entry)
        secrets = self._secrets()
        stored = {key: mask(value, secrets) if isinstance(value, str) else value for key, value in entry.items()}
        cached = self._cached(path, stored, accept)
        if cached is not None:
            return cached
        mine: Future[JudgeResult] = Future()
        with self._lock:
            asking = self._in_flight.setdefault(path, mine)
            asking = None if asking is mine else asking
        if asking is not None:  # the same request is in flight: share its outcome
            shared = asking.result()
            if shared.status == "judged" and shared.text is not None and readable(shared.text, accept):
                self.ledger.count("shared")
                return shared
            if shared.status != "judged":
                self.ledger.count("shared" if self.dry_run else "failed")
                if not self.dry_run and shared.failure is not None:
                    self.ledger.failed_because(shared.failure, shared.error or "")
                return shared
            return self._complete(entry, stored, path, accept, secrets)  # read by another check: ask for this one
        try:
            # an identical request may have finished since the first look
            result = self._cached(path, stored, accept) or self._complete(entry, stored, path, accept, secrets)
            mine.set_result(result)
            return result
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._in_flight.pop(path, None)

    def _complete(
        self, entry: dict[str, Any], stored: dict[str, Any], path: Path, accept: Accept, secrets: dict[str, str]
    ) -> JudgeResult:
        """Send one request for a cache miss; cache the reply when it is an answer (only the sender's
        :class:`~scifig_tasks.core.judge.replies.Answer`, a reply ``accept`` read, ever is), under the request's
        fields, with the model it named when that is not the configured one (``answered_by``). ``secrets``: what
        the call masks (:meth:`_secrets`, read once per call: it reads the whole environment)."""
        messages = [{"role": "system", "content": entry["system"]}] if entry["system"] is not None else []
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [*messages, {"role": "user", "content": entry["prompt"]}],
            "temperature": entry["temperature"],
            **entry.get("request", {}),
        }
        if entry["max_tokens"] is not None:
            body["max_tokens"] = entry["max_tokens"]
        if self.dry_run:
            return self._not_sent(path)
        result = self._send(body, accept, secrets)
        if result.status == "judged" and result.text is not None:
            record = {**stored, "text": mask(result.text, secrets)}
            if result.answered_by is not None:
                record["answered_by"] = result.answered_by
            self.cache.put(path, record)
        return result

    def complete_many(
        self,
        prompts: Sequence[str],
        *,
        max_tokens: int | None = None,
        request: Mapping[str, Any] | None = None,
        accept: Accept | Sequence[Accept],
    ) -> list[JudgeResult]:
        """``complete`` for every prompt concurrently (duplicates asked once); results in input order. ``accept`` is
        one check for every prompt, or one per prompt (prompts of different shapes asked together, so that no group
        waits for another's last replies)."""
        checks = [accept] * len(prompts) if callable(accept) else list(accept)
        if len(checks) != len(prompts):
            raise ValueError(f"complete_many: {len(checks)} checks for {len(prompts)} prompts")
        asked = list(zip(prompts, checks, strict=True))
        unique = list(dict.fromkeys(asked))
        if not unique:
            return []
        workers = min(self.config.max_concurrency, len(unique))
        with (
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scifig-judge") as pool,
            tqdm(total=len(unique), desc="LLM judge", unit="prompt", disable=len(prompts) <= 1) as bar,
        ):
            futures = {
                (prompt, check): pool.submit(
                    contextvars.copy_context().run,
                    self.complete,
                    prompt,
                    max_tokens=max_tokens,
                    request=request,
                    accept=check,
                )
                for prompt, check in unique
            }
            for _ in as_completed(futures.values()):
                bar.update()
        return [futures[key].result() for key in asked]

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
        with self.ledger.call():
            if self.dry_run:
                return self._not_sent(None)
            return self._send(body, accept, self._secrets())

    def _send(self, body: dict[str, Any], accept: Accept, secrets: dict[str, str]) -> JudgeResult:
        """Ask the endpoint (:meth:`Sender.ask`: its bound, retries and breaker, ``body`` masked with ``secrets``);
        counted as judged or failed."""
        reply = self.sender.ask(body, accept, secrets)
        if isinstance(reply, Failure):
            self.ledger.count("failed")
            self.ledger.failed_because(reply.kind, reply.detail or reply.error)
            return JudgeResult(status="judge_failed", text=None, error=reply.error, failure=reply.kind)
        self.ledger.count("judged")
        return JudgeResult(status="judged", text=reply.text, answered_by=reply.model)

    def _not_sent(self, path: Path | None) -> JudgeResult:
        """A dry run's cache miss: counted once per distinct request (a sampled one every time), never sent."""
        with self._lock:
            fresh = path is None or path not in self._would_send
            if path is not None:
                self._would_send.add(path)
        self.ledger.count("would_send" if fresh else "shared")
        return JudgeResult(status="judge_failed", text=None, error="not sent (dry run)")


_clients: dict[tuple[JudgeConfig, bool], JudgeClient] = {}
_clients_lock = threading.Lock()
_configs: weakref.WeakKeyDictionary[Settings, JudgeConfig | None] = weakref.WeakKeyDictionary()
"""The judge each settings value configures, worked out once per value: the hooks ask :func:`get_judge` once per
sample, and the process's value (:func:`settings.current`) is one object until a setting changes."""
_all_clients: weakref.WeakSet[JudgeClient] = weakref.WeakSet()
"""Every client of the process (those :func:`get_judge` shares and any other), for :func:`usage_report`."""


def get_judge(given: Settings | Mapping[str, str] | None = None) -> JudgeClient | None:
    """The process-wide client for the judge the settings configure (the process's :func:`settings.current` when
    ``given`` is None; a :class:`Settings` value or an environment mapping otherwise), or None when judging is off
    or not configured. One client per configuration: callers asking for the same judge share its bound and cache."""
    check_declared()
    chosen = settings.chosen(given)
    with _clients_lock:
        known = chosen in _configs
        config = _configs.get(chosen)
    if not known:
        config = JudgeConfig.from_settings(chosen)  # a bad preset or setting raises, every time it is asked
        with _clients_lock:
            _configs[chosen] = config
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
