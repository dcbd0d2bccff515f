"""Shared LLM judge client used by every benchmark for LLM answer extraction.

Rule implemented: a judgement is one temperature-0 chat completion from a single OpenAI-compatible endpoint
(``POST {base_url}/chat/completions``, sent through the ``openai`` Python SDK), and asking the judge never breaks an
evaluation run. One module per concern, each stating its part of the rule:

* :mod:`~scifig_tasks.core.judge.config` -- :class:`JudgeConfig`, from the settings (``SCIFIG_JUDGE*``), a preset or
  explicit arguments; the endpoint's normal form; :func:`configured_concurrency`.
* :mod:`~scifig_tasks.core.judge.client` -- :class:`JudgeClient` (a judgement from the cache, from an identical
  request in flight, or from the endpoint) and :func:`get_judge`, the process's client; :func:`dry_run`.
* :mod:`~scifig_tasks.core.judge.replies` -- what a call returns (:class:`JudgeResult`) and when a reply is an
  answer (the caller's ``accept`` check, :func:`has_text`).
* :mod:`~scifig_tasks.core.judge.sending` -- HTTP through the SDK: the concurrency bound, retries and back-off.
* :mod:`~scifig_tasks.core.judge.breaker` -- the circuit breaker and the slow-judge notice.
* :mod:`~scifig_tasks.core.judge.cache` -- the on-disk reply cache.
* :mod:`~scifig_tasks.core.judge.accounting` -- the task a call is charged to (:func:`task_scope`) and the counters.
* :mod:`~scifig_tasks.core.judge.usage` -- what the judge did and cost (:func:`usage_report`, :func:`usage_words`)
  and the samples it could not score (:func:`judge_failures`, :func:`failure_summary`).

Across all of them:

* The API key only ever travels in the ``Authorization`` header: it is kept out of reprs, logs and errors, and a
  cache entry holds no secret (:mod:`scifig_tasks.core.secrets`: the environment's keys and the judge's, echoed in
  a model output the prompt quotes or in the judge's reply, are masked; the base URL is stored without user:password).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scifig_tasks.core.judge.accounting import (
        NO_TASK,
        USAGE_COUNTS,
        USAGE_TOKENS,
        UndeclaredJudgeUse,
        current_task,
        task_scope,
    )
    from scifig_tasks.core.judge.breaker import SILENT_TIMEOUTS, SLOW_NOTICE_S
    from scifig_tasks.core.judge.client import JudgeClient, dry_run, get_judge
    from scifig_tasks.core.judge.config import BREAKER_THRESHOLD, JudgeConfig, configured_concurrency, endpoint_host
    from scifig_tasks.core.judge.replies import Accept, JudgeResult, has_text
    from scifig_tasks.core.judge.usage import (
        absent_summary,
        failure_summary,
        judge_absent,
        judge_failures,
        usage_report,
        usage_words,
    )

_WHERE = {
    "accounting": ("NO_TASK", "USAGE_COUNTS", "USAGE_TOKENS", "UndeclaredJudgeUse", "current_task", "task_scope"),
    "breaker": ("SILENT_TIMEOUTS", "SLOW_NOTICE_S"),
    "client": ("JudgeClient", "dry_run", "get_judge"),
    "config": ("BREAKER_THRESHOLD", "JudgeConfig", "configured_concurrency", "endpoint_host"),
    "replies": ("Accept", "JudgeResult", "has_text"),
    "usage": ("absent_summary", "failure_summary", "judge_absent", "judge_failures", "usage_report", "usage_words"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
"""Each name of :data:`__all__` -> the module defining it. The names are looked up when first used (PEP 562), so
that a module needing only the configuration or the reply types (the benchmark descriptions, ``scifig config``)
does not import the HTTP client and the ``openai`` SDK."""


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULE_OF])


__all__ = [
    "BREAKER_THRESHOLD",
    "NO_TASK",
    "SILENT_TIMEOUTS",
    "SLOW_NOTICE_S",
    "USAGE_COUNTS",
    "USAGE_TOKENS",
    "Accept",
    "UndeclaredJudgeUse",
    "JudgeClient",
    "JudgeConfig",
    "JudgeResult",
    "absent_summary",
    "configured_concurrency",
    "current_task",
    "dry_run",
    "endpoint_host",
    "failure_summary",
    "get_judge",
    "has_text",
    "judge_absent",
    "judge_failures",
    "task_scope",
    "usage_report",
    "usage_words",
]
