"""lmms-eval's ``*_results.json`` of a run with scifig tasks carries the environment block
(:mod:`scifig_tasks.core.provenance`) under ``scifig_environment``.

:func:`install` wraps ``EvaluationTracker.save_results_aggregated``, the one place lmms-eval writes that file (CLI and
Python API alike), and adds the block when the results hold a task whose config names a ``scifig_source``; other
runs are written unchanged. lmms-eval's own ``lmms_eval_version`` and ``git_hash`` describe the git checkout of the
working directory when there is one (not lmms-eval's release), so the block records the installed ``lmms-eval``.
The block's ``data`` says where each scifig source read its data: ``{"local": true}`` (``SCIFIG_<BENCH>_DATA``; the
path itself is not written) or ``{"hub": "<dataset id>"}``, so a report can say a run did not score the published set.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from scifig_tasks.core import settings
from scifig_tasks.core.provenance import KEY, environment
from scifig_tasks.core.sources import SOURCES


def has_scifig_task(results: dict[str, Any]) -> bool:
    configs = results.get("configs")
    if not isinstance(configs, dict):
        return False
    return any(
        isinstance(config, dict) and isinstance(config.get("metadata"), dict) and "scifig_source" in config["metadata"]
        for config in configs.values()
    )


def data_origins(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Where each scifig source of the run's tasks read its data: local files or the Hub dataset."""
    found: dict[str, dict[str, Any]] = {}
    for config in (results.get("configs") or {}).values():
        name = (config.get("metadata") or {}).get("scifig_source") if isinstance(config, dict) else None
        if name in SOURCES and name not in found:
            local = SOURCES[name].local_path(settings.current())
            found[name] = {"local": True} if local is not None else {"hub": config.get("dataset_path")}
    return found


def install() -> None:
    """Wrap ``EvaluationTracker.save_results_aggregated``; idempotent."""
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    save = EvaluationTracker.save_results_aggregated
    if getattr(save, "_scifig_environment", False):
        return

    @wraps(save)
    def save_with_environment(self: Any, results: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if isinstance(results, dict) and has_scifig_task(results):
            results[KEY] = {**environment("lmms-eval"), "data": data_origins(results)}
        return save(self, results, *args, **kwargs)

    save_with_environment._scifig_environment = True  # type: ignore[attr-defined]
    EvaluationTracker.save_results_aggregated = save_with_environment
