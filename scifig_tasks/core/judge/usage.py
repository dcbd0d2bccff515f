"""What the judge did and cost, per task, and the samples it could not score.

Per-task usage and cost for the results files, and the closing lines of a command that left judge failures or
outputs that needed an absent judge. Manual: docs/judge.md, 'Usage, failures and missing judgements'.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scifig_tasks.core import settings
from scifig_tasks.core.judge.accounting import USAGE_COUNTS, USAGE_NOTES, USAGE_TOKENS
from scifig_tasks.core.judge.client import JudgeClient, _all_clients
from scifig_tasks.core.judge.config import JudgeConfig, endpoint_host
from scifig_tasks.core.judged_hooks import JUDGE_SETTINGS
from scifig_tasks.core.secrets import mask_credentials

logger = logging.getLogger("scifig.judge")


def _totals(rows: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = dict.fromkeys((*USAGE_COUNTS, *USAGE_TOKENS, *USAGE_NOTES, "wall_s"), 0)
    for row in rows:
        for name in total:
            total[name] += row.get(name, 0)
    return total


def _row(usage: Mapping[str, float], cost: float | None) -> dict[str, Any]:
    """One task's figures as results files record them: integers, seconds to 0.001, the cost (None: no price); the
    counters of :data:`USAGE_NOTES` only when not 0."""
    row: dict[str, Any] = {name: int(usage.get(name, 0)) for name in (*USAGE_COUNTS, *USAGE_TOKENS)}
    row |= {name: int(usage[name]) for name in USAGE_NOTES if usage.get(name)}
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

    Shape: ``{"judges": [{"model", "host", "price_per_million": {"input", "output"} | None, "answered_as"}],
    "priced": bool, "tasks": {task: row}, "groups": {group: row}, "total": row}``; a row has the counters of
    :data:`USAGE_COUNTS` (``would_send`` only in a dry run), the tokens, those of :data:`USAGE_NOTES` that are not 0,
    ``wall_s`` and ``cost`` (``None`` when a judge that was asked has no price). ``answered_as`` (only when replies
    named another model than the configured one: model -> replies) is also said in one WARNING line per model
    (:func:`say_other_models`).
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
        judge: dict[str, Any] = {
            "model": config.model,
            "host": endpoint_host(config.base_url),
            "price_per_million": price,
        }
        answered = client.ledger.answered_as(drain=drain)
        if answered:
            judge["answered_as"] = dict(sorted(answered.items()))
            say_other_models(client, answered)
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
    requests, hits = row.get("requests", 0), row.get("cache_hits", 0)
    parts = [f"{requests:,} request{'' if requests == 1 else 's'}", f"{hits:,} cache hit{'' if hits == 1 else 's'}"]
    if row.get("failed"):
        parts.append(f"{row['failed']:,} failed")
    parts.append(f"{row.get('prompt_tokens', 0):,} prompt + {row.get('completion_tokens', 0):,} completion tokens")
    cost = row.get("cost")
    parts.append("no price configured" if cost is None or priced is False else f"cost {cost:.4f}")
    return ", ".join(parts)


def say_other_models(client: JudgeClient, answered: Mapping[str, int]) -> None:
    """One WARNING line per model, the first time ``client``'s replies name it instead of the configured model: the
    configured model, the one that answered and how many replies did."""
    for model in client.ledger.first_said(answered):
        logger.warning(
            "LLM judge at %s: %d replies came from model %r, not the configured %r (SCIFIG_JUDGE_MODEL or the "
            "SCIFIG_JUDGE preset); they are scored, and recorded in the results' judge_usage (answered_as)",
            endpoint_host(client.config.base_url),
            answered[model],
            model,
            client.config.model,
        )


_ENDPOINT_TODO = "check SCIFIG_JUDGE_BASE_URL, SCIFIG_JUDGE_MODEL and the judge's API key"


def _calls(count: int, verb: str) -> str:
    """``1 judge call was`` / ``3 judge calls were``, with ``verb`` ``was`` or ``got`` / ``failed``."""
    plural = {"was": "were"}.get(verb, verb) if count != 1 else verb
    return f"{count:,} judge call{'s' if count != 1 else ''} {plural}"


def _cause_words(kind: str, count: int, example: str) -> str:
    """One cause of failed judge calls in words, with its example and what to do."""
    if kind == "form":
        return (
            f"{_calls(count, 'got')} replies refused for their form (e.g. {example}): the judge answered, but not "
            "with the answer alone in the shape its prompt asks for — check that SCIFIG_JUDGE_MODEL is a model that "
            "follows the prompt"
        )
    if kind == "redirect":
        return (
            f"{_calls(count, 'was')} answered with a redirect ({example}), which is not followed — set "
            "SCIFIG_JUDGE_BASE_URL to the address that answers, if you trust it"
        )
    if kind == "timeout":
        return f"{_calls(count, 'got')} {example}; raise it for a judge that answers slowly"
    if kind == "breaker":
        return f"{_calls(count, 'was')} not sent, the circuit breaker being open ({example})"
    return f"{_calls(count, 'failed')} (e.g. {example}) — {_ENDPOINT_TODO}"


def failure_causes(clients: Iterable[JudgeClient] | None = None) -> dict[str, tuple[int, str]]:
    """Why judge calls failed, over the process's clients (or ``clients``): kind -> (failed calls, the first
    example). A reply that was no chat completion, and a request the endpoint refused, count with its failures."""
    found: dict[str, tuple[int, str]] = {}
    for client in list(clients) if clients is not None else list(_all_clients):
        for kind, (count, example) in client.ledger.causes().items():
            kind = "endpoint" if kind in ("malformed", "request") else kind
            before, first = found.get(kind, (0, example))
            found[kind] = (before + count, first)
    return found


def failure_summary(command: str, failed: Mapping[str, int], *, clients: Iterable[JudgeClient] | None = None) -> str:
    """The last line of a command whose samples could not all be judged: how many, per task, why (each cause the
    judge clients of the process -- or ``clients`` -- recorded, with an example) and what to do."""
    per_task = ", ".join(f"{task} {count}" for task, count in sorted(failed.items()))
    causes = failure_causes(clients)
    order = ("form", "redirect", "timeout", "endpoint", "breaker")
    secrets = settings.process_secrets()
    words = [
        _cause_words(kind, causes[kind][0], mask_credentials(causes[kind][1], secrets))
        for kind in order
        if kind in causes
    ]
    return (
        f"{command}: {sum(failed.values())} samples could not be judged (judge_failed: {per_task}) — the scores that "
        f"need the judge are incomplete; {'; '.join(words) or _ENDPOINT_TODO}; then rerun (judged replies are cached, "
        "so only these are asked again)"
    )


def absent_summary(command: str, absent: Mapping[str, int]) -> str:
    """The last line of a command whose outputs needed a judge that was not configured: how many, per task, and the
    fix."""
    per_task = ", ".join(f"{task} {count}" for task, count in sorted(absent.items()))
    return (
        f"{command}: {sum(absent.values())} outputs needed the LLM judge and none is configured (judge_off: {per_task})"
        f" — those the rules could not read are counted wrong; {JUDGE_SETTINGS} and run again"
    )


def scored_without_judge(breakdown: Mapping[str, Any]) -> int:
    """Outputs one ``breakdown`` metric counts as needing the judge when none was configured
    (``flags.judge.judge_off``)."""
    return _count(breakdown.get("flags"), "judge", "judge_off")


def judge_absent(results: Mapping[str, Any]) -> dict[str, int]:
    """Outputs that needed the LLM judge when none was configured, per task (groups skipped, as in
    :func:`judge_failures`): ``flags.judge.judge_off`` of each task's ``breakdown`` metric, the one place every
    benchmark records it (Plot Twist's outputs without the answer sentence, counted wrong; GRAB's LLM extraction,
    which is refused without a judge). Tasks without any are left out: ``{task: count}``."""
    groups = set(results.get("groups", {}))
    counts: dict[str, int] = {}
    for task, metrics in results.get("results", {}).items():
        if task in groups or not isinstance(metrics, Mapping):
            continue
        found = [
            scored_without_judge(value)
            for key, value in metrics.items()
            if key.split(",")[0] == "breakdown" and isinstance(value, dict)
        ]
        if found and max(found):
            counts[task] = max(found)
    return counts


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
