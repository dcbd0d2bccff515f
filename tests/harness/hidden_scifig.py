"""A process where the scifig distribution does not exist: a ``sitecustomize`` on ``PYTHONPATH`` installs a meta-path
finder that refuses every module of it (``scifig_tasks``, ``curation``, ``scifig_model_configs``,
``scifig_finetune``) ahead of the editable-install finder, and an ``importlib.metadata`` that no longer lists the
``scifig`` distribution (so no entry point of it is found). Exported code is run so, to show it needs nothing of
scifig (``scifig export-upstream``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

BLOCKER = '''\
"""Test-only: make the scifig distribution invisible (modules and metadata) in this interpreter."""
import importlib.abc
import importlib.metadata as _metadata
import sys

_BLOCKED = __BLOCKED__


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (scifig is not installed here)", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
_all_distributions, _one_distribution = _metadata.distributions, _metadata.distribution


def _distributions(**kwargs):
    return (d for d in _all_distributions(**kwargs) if (d.metadata["Name"] or "").lower() != "scifig")


def _distribution(name):
    if name.lower() == "scifig":
        raise _metadata.PackageNotFoundError(name)
    return _one_distribution(name)


_metadata.distributions, _metadata.distribution = _distributions, _distribution
'''

SCIFIG_MODULES = ("scifig_tasks", "curation", "scifig_model_configs", "scifig_finetune")
"""The top-level modules of the scifig distribution."""


def hidden_env(
    base_env: Mapping[str, str], tmp_path: Path, also: Iterable[str] = (), path: Iterable[Path] = ()
) -> dict[str, str]:
    """``base_env`` with ``PYTHONPATH`` set to the blocker, then the folders ``path``: scifig's modules and the
    top-level modules ``also`` cannot be imported. The blocker is written into ``tmp_path/no-scifig`` (once)."""
    blocker = tmp_path / "no-scifig"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER.replace("__BLOCKED__", repr(SCIFIG_MODULES + tuple(also))))
    return {**base_env, "PYTHONPATH": os.pathsep.join([str(blocker), *(str(folder) for folder in path)])}
