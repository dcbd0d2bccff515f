"""Judged lmms-eval runs keep the LLM judge's configured number of requests in flight: ``scifig eval`` passes
``--process_docs_parallel`` (:func:`with_judge_concurrency`).

Manual: docs/lmms-eval-integration.md, "Judge concurrency: pass `--process_docs_parallel`".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from scifig_tasks.core.judge import configured_concurrency

OPTION = "--process_docs_parallel"
LMMS_EVAL_DEFAULT = 4
"""lmms-eval's default ``--process_docs_parallel`` (0.7)."""


def docs_parallel(requested: int, judge_concurrency: int | None) -> int:
    """The ``process_results`` threads to use: ``requested``, raised to ``judge_concurrency`` when a judge is set."""
    return requested if judge_concurrency is None else max(requested, judge_concurrency)


def _given(argv: Sequence[str]) -> bool:
    """Whether ``argv`` sets ``process_docs_parallel``: the option itself, or a ``--config`` YAML holding the key."""
    configs = []
    for index, arg in enumerate(argv):
        if arg == OPTION or arg.startswith(f"{OPTION}="):
            return True
        if arg == "--config" and index + 1 < len(argv):
            configs.append(argv[index + 1])
        elif arg.startswith("--config="):
            configs.append(arg.split("=", 1)[1])
    return any(_config_sets(path) for path in configs)


def _config_sets(path: str) -> bool:
    import yaml

    try:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False  # lmms-eval reports the file itself
    entries = loaded if isinstance(loaded, list) else [loaded]
    return any(isinstance(entry, dict) and "process_docs_parallel" in entry for entry in entries)


def with_judge_concurrency(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """``argv`` with ``--process_docs_parallel N`` added when a judge allows more requests in flight than lmms-eval's
    default and the user did not choose a number, and the line that says so (``None`` when nothing was added)."""
    argv = list(argv)
    judge = configured_concurrency()
    used = docs_parallel(LMMS_EVAL_DEFAULT, judge)
    if judge is None or used == LMMS_EVAL_DEFAULT or _given(argv):
        return argv, None
    argv += [OPTION, str(used)]
    return argv, (
        f"scifig eval: process_results runs in {used} threads ({OPTION} {used}; lmms-eval's default is "
        f"{LMMS_EVAL_DEFAULT}) so that the LLM judge's {judge} concurrent requests (SCIFIG_JUDGE_MAX_CONCURRENCY) "
        f"can all be in flight; give {OPTION} to choose another number"
    )
