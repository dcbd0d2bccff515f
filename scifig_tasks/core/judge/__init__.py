"""The LLM judge every benchmark shares: one temperature-0 chat completion from an OpenAI-compatible endpoint, and
asking it never breaks a run. :func:`get_judge` gives the client the settings configure; :class:`JudgeClient` holds
a ledger, a reply cache, a circuit breaker and a sender. How it behaves, module by module: docs/judge.md.
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
