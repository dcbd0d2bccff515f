"""Imports lmms-eval makes and a scifig run never uses: at start-up, deferred to their first use (:func:`defer`); at
every aggregation, skipped where they cannot change the answer (:func:`wrap_stderr_for_metric`).

lmms-eval's ``api/registry.py`` imports Hugging Face ``evaluate`` (``import evaluate as hf_evaluate``) only for
``get_metric``'s fallback, ``hf_evaluate.load(name)``, for a metric lmms-eval does not define itself; no scifig task
names such a metric. The import pulls in ``transformers.pipelines``, ``torchvision`` and ``scipy.stats``: about 4-6 s
of every ``scifig`` command that starts lmms-eval, on a 2-core machine. :func:`defer` puts a stand-in under the
module's name; the first read of one of its attributes imports the real module, so behaviour is unchanged.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

UNUSED_AT_START = ("evaluate",)
"""The modules lmms-eval imports at start-up that a scifig run does not read (see the module docstring)."""


class _Deferred(types.ModuleType):
    """A module's stand-in in ``sys.modules``: reading an attribute it lacks imports the real module and becomes it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_load(self), name)


def _load(stand_in: _Deferred) -> types.ModuleType:
    if sys.modules.get(stand_in.__name__) is stand_in:
        del sys.modules[stand_in.__name__]
    module = importlib.import_module(stand_in.__name__)
    stand_in.__dict__.update(module.__dict__)  # who bound the stand-in reads the real attributes from now on
    stand_in.__class__ = types.ModuleType
    return module


def defer(name: str) -> bool:
    """Put a stand-in for the top-level module ``name`` in ``sys.modules`` unless it is imported already or not
    installed; True when one was put."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None:
        return False
    stand_in = _Deferred(name)
    # inspect.getmodule reads __file__ of every module, find_spec reads __spec__: neither must import it
    stand_in.__file__, stand_in.__spec__, stand_in.__loader__ = spec.origin, spec, spec.loader
    sys.modules[name] = stand_in
    return True


def defer_unused_at_start() -> None:
    """Defer every module of :data:`UNUSED_AT_START` (before lmms-eval is imported)."""
    for name in UNUSED_AT_START:
        defer(name)


OPTIONAL_STDERR_MODULES = ("lmms_eval.tasks.amber_g.utils", "lmms_eval.tasks.coco_cap_chair.utils")
"""Task modules lmms-eval's ``stderr_for_metric`` imports on every call, to add their aggregation functions (all named
``amber_g_*`` or ``coco_cap_chair_*``) to its bootstrapped ones. Both import ``nltk`` (and with it ``scipy.stats``),
which fails when spaCy is missing only after the cost is paid: about 1-2 s of CPU at the first aggregation of a run."""
_IMPORTS_BLOCKED = threading.Lock()
"""Held while the names of :data:`OPTIONAL_STDERR_MODULES` are marked absent."""


def wrap_stderr_for_metric(stderr_for_metric: Any) -> Any:
    """``lmms_eval.api.metrics.stderr_for_metric`` that skips the imports of :data:`OPTIONAL_STDERR_MODULES` for a
    metric that cannot be one of their functions (its name names neither task), so it gives the same answer without
    them: the original runs with those modules marked absent, an import lmms-eval already catches."""

    @functools.wraps(stderr_for_metric)
    def stderr_without_unrelated_tasks(metric: Any, bootstrap_iters: int, *args: Any, **kwargs: Any) -> Any:
        name = getattr(metric, "__name__", "")
        absent = [module for module in OPTIONAL_STDERR_MODULES if module not in sys.modules]
        if not absent or "amber" in name or "coco_cap_chair" in name:
            return stderr_for_metric(metric, bootstrap_iters, *args, **kwargs)
        with _IMPORTS_BLOCKED:
            for module in absent:
                sys.modules[module] = None  # type: ignore[assignment]  # import raises ImportError at once
            try:
                return stderr_for_metric(metric, bootstrap_iters, *args, **kwargs)
            finally:
                for module in absent:
                    if sys.modules.get(module, ...) is None:
                        del sys.modules[module]

    return stderr_without_unrelated_tasks
