"""The registered benchmarks: every :class:`~scifig_tasks.core.benchmark.Benchmark` of the ``scifig.benchmarks``
entry-point group, scifig's own four and any an installed package adds.

An outside package registers a benchmark exactly as scifig does, in its ``pyproject.toml``::

    [project.entry-points."scifig.benchmarks"]
    toy = "toy_bench.description:BENCHMARK"

The entry point's name is the benchmark's name. Descriptions are read once per process and listed in name order;
a description that is not a ``Benchmark``, whose name differs from its entry point's, or that repeats a name or a
source key is refused with one line naming the entry point.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from typing import Any

from scifig_tasks.core.benchmark import Benchmark, BenchmarkError
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.core.settings import BENCHMARKS_GROUP

GROUP = BENCHMARKS_GROUP

_lock = threading.Lock()
_loaded: dict[str, Benchmark] | None = None


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    unique: dict[str, importlib.metadata.EntryPoint] = {}
    for point in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda point: point.name):
        if point.name in unique and unique[point.name].value != point.value:
            raise BenchmarkError(
                f"{GROUP} entry point {point.name!r} is registered twice ({unique[point.name].value} and "
                f"{point.value}); uninstall one of the packages"
            )
        unique.setdefault(point.name, point)
    return list(unique.values())


def _load() -> dict[str, Benchmark]:
    benchmarks: dict[str, Benchmark] = {}
    owners: dict[str, str] = {}
    for point in _entry_points():
        where = f"{GROUP} entry point {point.name} = {point.value}"
        try:
            described = point.load()
        except BenchmarkError as exc:
            raise BenchmarkError(f"{exc} ({where})") from None
        if not isinstance(described, Benchmark):
            kind = type(described).__name__
            raise BenchmarkError(f"{where} is a {kind}, not a Benchmark (scifig_tasks.core.benchmark)")
        if described.name != point.name:
            raise BenchmarkError(f"{where} describes {described.name!r}: name the entry point as the benchmark")
        for key in described.sources:
            if key in owners:
                raise BenchmarkError(f"{where}: source {key!r} is already {owners[key]}'s")
            owners[key] = described.name
        benchmarks[described.name] = described
    return benchmarks


def benchmarks() -> dict[str, Benchmark]:
    """Every registered benchmark by name, in name order (read once per process)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
    return _loaded


def benchmark(name: str) -> Benchmark:
    """The benchmark called ``name``; ``KeyError`` with one line naming the registered ones."""
    found = benchmarks().get(name)
    if found is None:
        raise KeyError(f"no benchmark {name!r} is registered (registered: {', '.join(benchmarks())})")
    return found


def of_task(task: str) -> Benchmark | None:
    """The benchmark a task, group or VLMEvalKit dataset name belongs to (its name is the longest prefix)."""
    owners = [described for described in benchmarks().values() if described.owns(task)]
    return max(owners, key=lambda described: len(described.name), default=None)


def sources() -> dict[str, BenchmarkSource]:
    """Every registered data source by key (a task YAML's ``metadata.scifig_source``)."""
    return {key: source for described in benchmarks().values() for key, source in described.sources.items()}


def of_source(key: str) -> Benchmark:
    """The benchmark owning data source ``key``; ``KeyError`` naming the known sources."""
    for described in benchmarks().values():
        if key in described.sources:
            return described
    raise KeyError(f"no registered benchmark has data source {key!r} (known: {', '.join(sources())})")


def resolve(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference of a description names (imported now)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
