"""The names of the scifig datasets in VLMEvalKit: the lmms-eval task names, one switch for both frameworks, read from
the registered benchmarks (no VLMEvalKit or datasets import).

Manual: docs/vlmeval.md, "The naming rule".
"""

from __future__ import annotations

from collections.abc import Iterable

from scifig_tasks.core import registry, task_files
from scifig_tasks.core.benchmark import Benchmark, Vlmeval, VlmevalDataset
from scifig_tasks.core.deprecation import warn_once


def _blocks() -> list[tuple[Benchmark, Vlmeval]]:
    """Every registered benchmark with VLMEvalKit datasets, with its VLMEvalKit block, in the registry's order."""
    return [(described, described.vlmeval) for described in registry.benchmarks().values() if described.vlmeval]


def described() -> dict[str, VlmevalDataset]:
    """Every scifig VLMEvalKit dataset by name: its description (source, split, rows kept, old names)."""
    return {dataset.name: dataset for _, block in _blocks() for dataset in block.datasets}


DESCRIBED: tuple[str, ...] = tuple(described())
"""The datasets the descriptions' ``vlmeval`` blocks name (served by their own classes), in the registry's order."""

GROUPS: dict[str, tuple[str, ...]] = {
    group: members for _, block in _blocks() for group, members in block.groups.items()
}
"""lmms-eval groups whose questions VLMEvalKit serves as several datasets: group → its datasets, in the group's
order. (A group VLMEvalKit serves as one dataset — ``grab``, ``plot_twist``, ``mmsci`` — is that dataset.)"""

GENERIC: tuple[str, ...] = tuple(
    name for name in task_files.scifig_tasks() if name not in DESCRIBED and name not in GROUPS
)
"""Every other task and group of the registered benchmarks' task folders: a dataset of its name served from its
YAML's hooks (:mod:`scifig_tasks.vlmeval.task_hooks`), in listing order."""

DATASETS: tuple[str, ...] = DESCRIBED + GENERIC
"""Every scifig VLMEvalKit dataset, by its (lmms-eval) name: the described ones, then the others."""

DEPRECATED: dict[str, str] = {old: dataset.name for dataset in described().values() for old in dataset.old_names}
"""The dataset names of earlier releases → today's name; accepted for one more version
(:data:`scifig_tasks.core.deprecation.REMOVED_IN`)."""


def vlmeval_names() -> dict[str, str]:
    """lmms-eval task or group name → the VLMEvalKit dataset name that runs it, for every scifig task VLMEvalKit
    offers (the same name: the two frameworks share them)."""
    return {name: name for name in DATASETS}


def current(name: str) -> str:
    """Today's name of ``name``: an old ``SciFig_*`` name is mapped (warning on stderr, once per name and process),
    any other name is returned as it is."""
    new = DEPRECATED.get(name)
    if new is None:
        return name
    warn_once(f"VLMEvalKit dataset {name}", f"use {new}")
    return new


def expand(names: Iterable[str]) -> list[str]:
    """The datasets ``names`` run, in order, without repeats: old names mapped (:func:`current`), lmms-eval groups
    served as several datasets expanded (:data:`GROUPS`); any other name is kept for VLMEvalKit to judge."""
    found: list[str] = []
    for name in names:
        name = current(name)
        for member in GROUPS.get(name, (name,)):
            if member not in found:
                found.append(member)
    return found


def known(name: str) -> bool:
    """Whether ``name`` names a scifig dataset, today's or a deprecated one (files written under either are read)."""
    return name in DATASETS or name in DEPRECATED
