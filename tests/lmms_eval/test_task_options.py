"""Task options reach the scorer by one declared path: every registered task's scoring hook is bound to exactly the
options its YAML declares, and lmms-eval reads the same options from the YAML as scifig does (which VLMEvalKit's
dataset of the task's name then uses: ``tests/vlmeval``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lmms_eval.utils import load_yaml_config

from scifig_tasks.core import registry, task_files, task_options
from scifig_tasks.core.benchmark import Benchmark

BENCHMARKS = list(registry.benchmarks().values())


def _utils(folder: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_options_{folder.name}_utils", folder / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lmms_eval_config(path: Path) -> dict[str, Any]:
    """The task's configuration as lmms-eval assembles it (its own ``include`` resolution; hooks left as names)."""
    return load_yaml_config(yaml_path=str(path), mode="simple")


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda benchmark: benchmark.name)
def test_every_scoring_hook_is_bound_to_its_tasks_declared_options(benchmark: Benchmark) -> None:
    tasks = task_files.scifig_tasks({benchmark.name: benchmark.task_folder})
    utils = _utils(Path(benchmark.task_folder))
    checked, problems = 0, []
    for name, info in tasks.items():
        if info.is_group:
            continue
        config = _lmms_eval_config(info.path)
        kwargs = config.get("lmms_eval_specific_kwargs") or {}
        assert kwargs.get("default", {}) == info.options, f"{info.path}: lmms-eval reads other options than scifig"
        hook_name = re.search(r"utils\.(\w+)", str(config["process_results"])).group(1)
        hook = task_options.for_task(getattr(utils, hook_name), info.options)  # as scifig loads the task
        problems += [f"{name} ({hook_name}): {problem}" for problem in task_options.disagreements(hook, info.options)]
        checked += bool(task_options.bound(hook))
    assert problems == []
    assert checked or not any(info.options for info in tasks.values())


def _scorer(*, protocol: str, margin_rule: str = "synthetic") -> None:
    return None


def test_a_hook_bound_otherwise_than_its_task_declares_is_found() -> None:
    hook = task_options.bind(_scorer, protocol="paper")
    assert task_options.bound(hook) == {"protocol": "paper"}
    assert task_options.disagreements(hook, {"protocol": "paper"}) == []
    assert task_options.disagreements(hook, {"protocol": "default"}) == [
        "the hook is bound to protocol='paper', the task declares protocol='default'"
    ]
    assert task_options.disagreements(hook, {}) == [
        "the hook is bound to protocol='paper', the task declares no protocol"
    ]
    assert task_options.disagreements(hook, {"protocol": "paper", "margin_rule": "chartqa"}) == [
        "the task declares margin_rule='chartqa', the hook is not bound to it"
    ]


def test_a_group_whose_tasks_differ_in_an_option_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("task: a\nlmms_eval_specific_kwargs:\n  default:\n    protocol: default\n")
    (tmp_path / "b.yaml").write_text("task: b\nlmms_eval_specific_kwargs:\n  default:\n    protocol: paper\n")
    (tmp_path / "g.yaml").write_text("group: g\ntask: [a, b]\n")
    tasks = task_files.scifig_tasks({"toy": tmp_path})
    assert task_files.options("a", tasks) == {"protocol": "default"}
    with pytest.raises(
        ValueError, match=r"g.yaml: the tasks of group g differ in option protocol \(a: 'default', b: 'paper'\)"
    ):
        task_files.options("g", tasks)


def test_included_files_apply_in_lmms_evals_order(tmp_path: Path) -> None:
    """The including file's keys win; of a list of included files, the first listed wins — as lmms-eval merges."""
    (tmp_path / "_one").write_text("lmms_eval_specific_kwargs:\n  default:\n    prompt_variant: one\n")
    (tmp_path / "_two").write_text("lmms_eval_specific_kwargs:\n  default:\n    prompt_variant: two\n")
    (tmp_path / "t.yaml").write_text("task: t\ninclude: [_one, _two]\n")
    (tmp_path / "u.yaml").write_text("task: u\ninclude: t.yaml\nlmms_eval_specific_kwargs:\n  default: {x: 1}\n")
    tasks = task_files.scifig_tasks({"toy": tmp_path})
    for name in ("t", "u"):
        expected = _lmms_eval_config(tmp_path / f"{name}.yaml")["lmms_eval_specific_kwargs"]["default"]
        assert task_files.options(name, tasks) == expected
    assert task_files.options("t", tasks) == {"prompt_variant": "one"}


@pytest.mark.parametrize("benchmark", BENCHMARKS, ids=lambda benchmark: benchmark.name)
def test_the_listed_protocol_is_the_declared_one(benchmark: Benchmark) -> None:
    """``scifig tasks`` lists ``metadata.scifig_protocol`` (scifig's setting or the paper's); where a task's
    ``protocol`` option is one of those two, the listing says the same."""
    tasks = task_files.scifig_tasks({benchmark.name: benchmark.task_folder})

    def declared(name: str) -> set[Any]:
        info = tasks[name]
        return set().union(*map(declared, info.members)) if info.is_group else {info.options.get("protocol")}

    for name, info in tasks.items():
        listed, found = info.metadata.get("scifig_protocol"), declared(name)
        if listed is not None and found <= {"default", "paper"}:
            assert found == {listed}, f"{info.path}: lists protocol {listed}, its tasks declare {sorted(found)}"


@task_options.reads_task_options
def _reads(doc: Any, results: Any, *, protocol: str, margin_rule: str = "synthetic") -> dict[str, Any]:
    return {"protocol": protocol, "margin_rule": margin_rule}


def test_a_hook_reading_its_options_gets_what_its_task_declares() -> None:
    hook = task_options.for_task(_reads, {"protocol": "paper", "prompt_variant": "standard"})
    assert task_options.bound(hook) == {"protocol": "paper"}  # only what the scorer takes
    assert hook({}, []) == {"protocol": "paper", "margin_rule": "synthetic"}
    assert task_options.disagreements(hook, {"protocol": "paper", "prompt_variant": "standard"}) == []
    missing = task_options.for_task(_reads, {})
    assert task_options.disagreements(missing, {}) == ["the hook takes protocol and the task declares none"]
    with pytest.raises(task_options.OptionsDisagree, match="declare each option the scorer takes in its YAML"):
        task_options.refuse_disagreement("t", _reads, {})
    assert task_options.for_task(_scorer, {"protocol": "paper"}) is _scorer  # a hook not reading options: as it is


def test_lmms_eval_binds_a_tasks_options_registered_or_not() -> None:
    """A registered task gets its YAML's options; a task of another name whose YAML includes ours gets the options
    lmms-eval read for it (no KeyError for a name scifig does not register)."""
    from types import SimpleNamespace

    from scifig_tasks.lmms_eval.environment import scoring_hook

    ours = SimpleNamespace(task="grab_properties_llm_extract", process_results=_reads)
    assert task_options.bound(scoring_hook(ours)) == {}  # _reads takes protocol, which the ablation does not declare
    mine = SimpleNamespace(
        task="my_variant", process_results=_reads, lmms_eval_specific_kwargs={"default": {"protocol": "x"}}
    )
    assert task_options.bound(scoring_hook(mine)) == {"protocol": "x"}
    assert scoring_hook(mine) is mine.process_results  # bound once
