"""Import paths of modules that moved keep working for one release, with one deprecation line per moved package:
the built-in benchmarks, now one package each (``scifig_tasks.benchmarks.<name>``, whose ``benchmark`` module is now
``description``), and modules renamed to say what they are. An old path gives the same module object as the new."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

from scifig_tasks.core.deprecation import warn_once

_BENCHMARKS = ("grab", "mmsci", "plot_twist", "scifibench")
_NEW = "scifig_tasks.benchmarks"
PREFIXES: dict[str, str] = {
    **{f"scifig_tasks.core.{name}.benchmark": f"scifig_tasks.benchmarks.{name}.description" for name in _BENCHMARKS},
    # `from scifig_tasks.core.<name> import benchmark` looks for the module under the package's new name
    **{
        f"scifig_tasks.benchmarks.{name}.benchmark": f"scifig_tasks.benchmarks.{name}.description"
        for name in _BENCHMARKS
    },
    **{f"scifig_tasks.core.{name}": f"scifig_tasks.benchmarks.{name}" for name in _BENCHMARKS},
    **{f"scifig_tasks.lmms_eval.{name}": f"scifig_tasks.benchmarks.{name}.tasks" for name in _BENCHMARKS},
    **{f"scifig_tasks.report.{name}": f"scifig_tasks.benchmarks.{name}.report" for name in _BENCHMARKS},
    "scifig_tasks.vlmeval.mmsci": "scifig_tasks.benchmarks.mmsci.vlmeval",
    # modules renamed to say what they are
    "scifig_tasks.core.validated": "scifig_tasks.core.validation_records",
    "scifig_tasks.core.presets": "scifig_tasks.core.model_presets",
    "scifig_tasks.lmms_eval.presets": "scifig_tasks.lmms_eval.preset_arguments",
    "scifig_tasks.rescoring": "scifig_tasks.rescore_report",
}
"""Old module path (and everything below it) -> new path; the longest matching prefix applies."""


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


_LONGEST_FIRST = sorted(PREFIXES, key=len, reverse=True)


def new_path(old: str) -> str | None:
    """Where the module once imported as ``old`` lives now, or None when it did not move (asked of every import in
    the process: a name outside this package is answered at once)."""
    if not old.startswith("scifig_tasks."):
        return None
    for prefix in _LONGEST_FIRST:
        if _under(old, prefix):
            return PREFIXES[prefix] + old[len(prefix) :]
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a moved module under its old name and hands out the module of the new one."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec:
        new = new_path(fullname)
        if new is None:
            return None  # type: ignore[return-value]
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_path(spec.name)
        assert new is not None
        moved = min((prefix for prefix in PREFIXES if _under(spec.name, prefix)), key=len)
        warn_once(moved, f"import {PREFIXES[moved]}")
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module was run under its new name."""


def install() -> None:
    """Put the alias finder on the import path (once)."""
    if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
