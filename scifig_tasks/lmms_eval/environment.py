"""lmms-eval's ``*_results.json`` of a run with scifig tasks carries the environment block
(:mod:`scifig_tasks.core.provenance`) under ``scifig_environment``.

:func:`install` wraps ``EvaluationTracker.save_results_aggregated``, the one place lmms-eval writes that file (CLI and
Python API alike), and adds the block when the results hold a task whose config names a ``scifig_source``; other
runs are written unchanged. lmms-eval's own ``lmms_eval_version`` and ``git_hash`` describe the git checkout of the
working directory when there is one (not lmms-eval's release), so the block records the installed ``lmms-eval``.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from scifig_tasks.core.provenance import KEY, environment


def has_scifig_task(results: dict[str, Any]) -> bool:
    configs = results.get("configs")
    if not isinstance(configs, dict):
        return False
    return any(
        isinstance(config, dict) and isinstance(config.get("metadata"), dict) and "scifig_source" in config["metadata"]
        for config in configs.values()
    )


def install() -> None:
    """Wrap ``EvaluationTracker.save_results_aggregated``; idempotent."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    save = EvaluationTracker.save_results_aggregated
    if getattr(save, "_scifig_environment", False):
        return

    @wraps(save)
    def save_with_environment(self: Any, results: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if isinstance(results, dict) and has_scifig_task(results):
            results[KEY] = environment("lmms-eval")
        return save(self, results, *args, **kwargs)

    save_with_environment._scifig_environment = True  # type: ignore[attr-defined]
    EvaluationTracker.save_results_aggregated = save_with_environment
