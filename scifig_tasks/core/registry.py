"""The registered benchmarks: every :class:`~scifig_tasks.core.benchmark.Benchmark` of the ``scifig.benchmarks``
entry-point group, scifig's own four and any an installed package adds.

A broken plugin is named in one line and left out; every other benchmark runs. Manual: docs/protocols.md,
'Registered benchmarks'.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scifig_tasks.core.benchmark import Benchmark, BenchmarkError
from scifig_tasks.core.deprecation import renamed
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.core.settings import BENCHMARKS_GROUP, Setting, declared_by, revision_setting

GROUP = BENCHMARKS_GROUP
OWN_DISTRIBUTION = "scifig"
"""The distribution registering scifig's own benchmarks; any other registering one is a plugin."""


@dataclass(frozen=True)
class Refusal:
    """A benchmark left out: its entry point, the package registering it, why, and the task names its folder
    defines (when they could be read), so a run asking for one is stopped with :attr:`line`."""

    name: str
    package: str
    target: str
    reason: str
    tasks: frozenset[str] = frozenset()

    @property
    def line(self) -> str:
        """``benchmark toybars (toy-bench 0.1, toybars = toy_bench.description:BENCHMARK) is left out: WHY — FIX``."""
        return f"benchmark {self.name} ({self.package}, {self.name} = {self.target}) is left out: {self.reason}"


@dataclass
class _Registry:
    benchmarks: dict[str, Benchmark]
    refused: dict[str, Refusal]
    points: dict[str, importlib.metadata.EntryPoint]
    """Each registered benchmark's entry point (its distribution named when asked: reading it costs a parse)."""


_lock = threading.Lock()
_loaded: _Registry | None = None


def _package(point: importlib.metadata.EntryPoint) -> str:
    """``name version`` of the distribution declaring ``point`` (``unknown package`` when not known)."""
    dist = getattr(point, "dist", None)
    if dist is None:
        return "unknown package"
    return f"{dist.metadata['Name'] or dist.name} {dist.version}"


def _entry_points() -> tuple[list[importlib.metadata.EntryPoint], dict[str, str]]:
    """The group's entry points by name (one per name), and the names registered twice with different targets ->
    the reason they are refused."""
    unique: dict[str, importlib.metadata.EntryPoint] = {}
    twice: dict[str, str] = {}
    for point in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda point: point.name):
        if point.name in unique and unique[point.name].value != point.value:
            twice[point.name] = (
                f"registered twice ({unique[point.name].value} by {_package(unique[point.name])} and {point.value} "
                f"by {_package(point)}) — uninstall one of the packages"
            )
        unique.setdefault(point.name, point)
    return list(unique.values()), twice


_LOAD_FIX = "fix the entry point's target (module:ATTRIBUTE naming the Benchmark) in the package's pyproject.toml"


def _described(point: importlib.metadata.EntryPoint) -> Benchmark | str:
    """The description an entry point names, or why it cannot be had (one line)."""
    try:
        described = point.load()
    except BenchmarkError as exc:
        return str(exc).replace(f"benchmark {point.name!r} cannot be registered: ", "")
    except TypeError as exc:  # a part misspelt: Benchmark() got an unexpected keyword argument
        return f"{exc} — the parts of a description: docs/adding-a-benchmark.md"
    except (ImportError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc} — {_LOAD_FIX}"
    except Exception as exc:  # the description's own module raised: said in one line, the plugin left out
        return f"loading it raised {type(exc).__name__}: {' '.join(str(exc).split())}"
    if not isinstance(described, Benchmark):
        return f"it is a {type(described).__name__}, not a Benchmark (scifig_tasks.core.benchmark) — {_LOAD_FIX}"
    if described.name != point.name:
        return f"it describes {described.name!r} — name the entry point as the benchmark ({described.name} = ...)"
    return described


def _load() -> _Registry:
    from scifig_tasks.core.task_folder_checks import examined

    points, twice = _entry_points()
    found = _Registry({}, {}, {})
    owners: dict[str, str] = {}
    names: dict[str, tuple[str, Path]] = {}
    for point in points:
        described = twice.get(point.name) or _described(point)
        defined: dict[str, Path] = {}
        if isinstance(described, str):
            reason: str | None = described
        else:
            folder = Path(described.task_folder)
            listed, problem = examined(folder, described.version, described.sources, described.name)
            defined = {name: Path(path) for name, path in listed.items()}
            reason = f"task folder {folder}: {problem}" if problem else _problem(described, defined, owners, names)
        if reason is not None:
            found.refused[point.name] = Refusal(point.name, _package(point), point.value, reason, frozenset(defined))
            continue
        assert isinstance(described, Benchmark)
        owners |= dict.fromkeys(described.sources, described.name)
        names |= {name: (described.name, path) for name, path in defined.items()}
        found.benchmarks[described.name] = described
        found.points[described.name] = point
    return found


def _problem(
    described: Benchmark,
    defined: dict[str, Path],
    owners: dict[str, str],
    names: dict[str, tuple[str, Path]],
) -> str | None:
    """Why a loaded description cannot be registered beside those already accepted (their source keys ``owners``,
    their task names ``names``), or None."""
    taken = [key for key in described.sources if key in owners]
    if taken:
        return f"source {taken[0]!r} is already {owners[taken[0]]}'s — name its sources after the benchmark"
    clash = next((name for name in defined if name in names), None)
    if clash is not None:
        other, where = names[clash]
        return f"task {clash!r} ({defined[clash].name}) is already {other}'s ({where}) — rename it"
    inside = next((name for name in names if described.owns(name)), None)
    if inside is not None:
        other, where = names[inside]
        return (
            f"its name prefixes {other}'s task {inside!r} ({where}), which would be taken for one of its own — "
            "choose a name no registered task starts with"
        )
    lmms_eval = lmms_eval_names()
    clash = next((name for name in defined if name in lmms_eval), None)
    if clash is not None:
        return (
            f"task {clash!r} ({defined[clash].name}) is already lmms-eval's own (lmms_eval/tasks/{lmms_eval[clash]}), "
            "which lmms-eval would run instead — rename it (a name lmms-eval does not use)"
        )
    return None


def _registry() -> _Registry:
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _load()
                for refusal in _loaded.refused.values():
                    print(f"scifig: {refusal.line}", file=sys.stderr)
    return _loaded


class BenchmarkRefused(SystemExit):
    """A run asked for a task of a benchmark left out at registration: its refusal line, the process's last words
    (a :class:`SystemExit`, status 1, which lmms-eval's catch-all and retries leave alone, as
    :class:`~scifig_tasks.core.judged_hooks.JudgeRequired`)."""

    def __init__(self, line: str) -> None:
        self.line = line
        super().__init__(f"scifig: {line}")


def left_out(tasks: Iterable[str]) -> str | None:
    """``TASK: <refusal line>`` for the first of ``tasks`` (requested names) that is a left-out benchmark's; None
    when none is."""
    for task in tasks:
        line = refusal_for(task)
        if line is not None:
            return f"{task}: {line}"
    return None


def refuse_left_out(tasks: Iterable[str]) -> None:
    """Raise :class:`BenchmarkRefused` when one of ``tasks`` (requested names) is a left-out benchmark's."""
    line = left_out(tasks)
    if line is not None:
        raise BenchmarkRefused(line)


def benchmarks() -> dict[str, Benchmark]:
    """Every registered benchmark by name, in name order (read once per process); refused ones left out."""
    return _registry().benchmarks


def refused() -> dict[str, str]:
    """Entry-point name -> the one line saying why that benchmark is left out (docs/protocols.md)."""
    return {name: refusal.line for name, refusal in _registry().refused.items()}


def refusal_for(task: str) -> str | None:
    """The refusal line of the left-out benchmark ``task`` (a task, group or dataset name) belongs to: one its task
    folder defines, or one its name prefixes; None when it is none of theirs."""
    for refusal in _registry().refused.values():
        if task in refusal.tasks or task == refusal.name or task.startswith(f"{refusal.name}_"):
            return refusal.line
    return None


def package_of(name: str) -> str:
    """``name version`` of the distribution registering benchmark ``name`` (``scifig 0.2.1`` for scifig's own)."""
    return _package(_registry().points[name])


def is_plugin(name: str) -> bool:
    """Whether benchmark ``name`` is registered by another distribution than scifig."""
    return package_of(name).split(" ", 1)[0] != OWN_DISTRIBUTION


def declared_settings() -> dict[str, Setting[Any]]:
    """The settings the registered benchmarks declare, by name: each source's Hub revision setting
    (``revision_var``), then the description's own (:attr:`Benchmark.settings`)."""
    found: dict[str, Setting[Any]] = {}
    for described in benchmarks().values():
        for source in described.sources.values():
            if source.revision_var:
                found[source.revision_var] = revision_setting(source.revision_var, source.name)
        found |= {setting.name: setting for setting in described.settings}
    return found


declared_by(declared_settings)


def lmms_eval_names() -> dict[str, str]:
    """Task, group and tag names lmms-eval itself defines -> the file defining each (read as text from its installed
    ``tasks`` folder, :mod:`scifig_tasks.core.lmms_eval_names`); empty when lmms-eval is not installed."""
    from scifig_tasks.core.lmms_eval_names import own_names

    return own_names()


def benchmark(name: str) -> Benchmark:
    """The benchmark called ``name``; ``KeyError`` with one line naming the registered ones."""
    found = benchmarks().get(name)
    if found is None:
        raise KeyError(f"no benchmark {name!r} is registered (registered: {', '.join(benchmarks())})")
    return found


def benchmark_of(task: str) -> Benchmark | None:
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


def load_reference(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference of a description names (imported now)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


__getattr__ = renamed(__name__, {"of_task": "benchmark_of", "resolve": "load_reference"})
