"""Task configurations: every task stops generating only at the end of the turn, every task and group carries its
benchmark's version (lmms-eval YAML ``metadata: version`` and the VLMEvalKit datasets' scores files), and each task
folder's changelog says why the current version changed a number."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import Benchmark
from scifig_tasks.core.raw_outputs import END_OF_TURN_MARKERS
from tests.harness.benchmarks import outside_without

BENCHMARKS = list(registry.benchmarks().values())


class _TaggedLoader(yaml.SafeLoader):
    """Reads task YAMLs without resolving ``!function`` hooks."""


_TaggedLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _load(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_TaggedLoader) or {}


def _metadata_version(path: Path) -> Any:
    config = _load(path)
    if "metadata" in config:
        return config["metadata"].get("version")
    if "include" in config:
        return _metadata_version(path.parent / config["include"])
    return None


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda benchmark: benchmark.name)
def test_every_yaml_of_a_benchmark_has_its_version(benchmark: Benchmark) -> None:
    folder = benchmark.task_folder
    paths = [*sorted(folder.glob("*.yaml")), *sorted(folder.glob("_*template_yaml"))]
    assert any(path.suffix == ".yaml" for path in paths)
    versions = {path.name: str(_metadata_version(path)) for path in paths}
    assert versions == dict.fromkeys(versions, benchmark.version)


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda benchmark: benchmark.name)
def test_every_task_stops_only_at_the_end_of_the_turn(benchmark: Benchmark) -> None:
    """No blank-line stop (lmms-eval's default): reasoning and captions are read whole, as the papers read them."""
    folder = benchmark.task_folder
    configs = [_load(path) for path in [*sorted(folder.glob("*.yaml")), *sorted(folder.glob("_*template_yaml"))]]
    stops = [config["generation_kwargs"].get("until") for config in configs if "generation_kwargs" in config]
    assert stops and all(stop == list(END_OF_TURN_MARKERS) for stop in stops), stops


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda benchmark: benchmark.name)
def test_the_changelog_explains_the_current_version(benchmark: Benchmark) -> None:
    path = Path(benchmark.task_folder) / "README.md"
    if reason := outside_without(benchmark.name, "task README (README.md in its task folder)", path.is_file()):
        pytest.skip(reason)
    readme = path.read_text(encoding="utf-8")
    changelog = readme.split("## Changelog", 1)[1]
    current = changelog.split(f"### {benchmark.version}", 1)[1].split("\n### ", 1)[0]
    entries = [line for line in current.splitlines() if line.startswith(("- ", "* "))]
    assert entries, f"{benchmark.name}: no entry under ### {benchmark.version}"


def test_every_vlmeval_dataset_names_its_benchmark() -> None:
    """Each dataset class a description names serves its own benchmark and lives in that benchmark's package."""
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    from scifig_tasks.vlmeval import dataset_classes

    classes = [cls for cls in dataset_classes() if cls.BENCHMARK]  # the generic class serves every other task
    described = {name for name, owner in registry.benchmarks().items() if owner.vlmeval is not None}
    assert {cls.BENCHMARK for cls in classes} == described
    for cls in classes:
        owner = registry.benchmarks().get(cls.BENCHMARK)
        assert owner is not None, cls.__name__
        assert Path(inspect.getfile(cls)).resolve().parent == Path(owner.task_folder).resolve().parent, cls
