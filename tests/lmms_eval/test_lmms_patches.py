"""The runtime patches of lmms-eval (:mod:`scifig_tasks.lmms_eval.patches`): every listed patch is applied, the list is
exactly what changes in lmms-eval, and a target whose signature changed ends the command in one line naming the
versions (checked before anything is patched)."""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from typing import Any

import pytest

from scifig_tasks.commands import eval as cli
from scifig_tasks.commands.format import error_line
from scifig_tasks.commands.main import main
from scifig_tasks.core.provenance import scifig_version
from scifig_tasks.lmms_eval import patches
from scifig_tasks.lmms_eval.output_folder import EVALUATION_TRACKER, complete_files
from scifig_tasks.lmms_eval.plugin import install
from scifig_tasks.lmms_eval.response_cache import RESPONSE_CACHE, ScifigResponseCache, installed
from tests.harness import warm_start
from tests.harness.paths import REPO

INSTALL = [patch.target for patch in patches.PATCHES if patch.scope == "install"]
RUN = [patch.target for patch in patches.PATCHES if patch.scope == "run"]


@pytest.fixture(scope="module")
def lmms() -> Any:
    install()
    import lmms_eval.__main__ as lmms_main

    return lmms_main


def test_every_install_patch_is_applied_after_install(lmms: Any) -> None:
    applied = patches.applied()
    assert {target: applied[target] for target in INSTALL} == dict.fromkeys(INSTALL, True)
    assert RUN == [cli.CLI_EVALUATE_SINGLE, EVALUATION_TRACKER, RESPONSE_CACHE]
    assert not any(applied[target] for target in RUN)  # only during a scifig eval run
    install()  # a second install wraps nothing twice
    for target in INSTALL:
        replacement = patches.object_at(target)
        assert not hasattr(patches.original(replacement), patches.MARK), target


def test_the_run_patches_are_applied_during_a_run_and_restored(lmms: Any) -> None:
    import lmms_eval.evaluator as evaluator

    before = (lmms.cli_evaluate_single, lmms.EvaluationTracker, evaluator.ResponseCache)
    outcomes: list[dict[str, Any]] = []
    with (
        patches.during_run(
            {
                cli.CLI_EVALUATE_SINGLE: functools.partial(cli.tracking, outcomes, []),
                EVALUATION_TRACKER: complete_files,
            }
        ),
        installed(),
    ):
        assert patches.applied() == dict.fromkeys(INSTALL + RUN, True)
        assert evaluator.ResponseCache is ScifigResponseCache
        assert patches.original(lmms.cli_evaluate_single) is before[0]
        assert issubclass(lmms.EvaluationTracker, before[1])
    assert (lmms.cli_evaluate_single, lmms.EvaluationTracker, evaluator.ResponseCache) == before


LIST_CHANGES = """
import functools, inspect, json, sys
import scifig_tasks.lmms_eval.plugin as plugin

install = plugin.install
plugin.install = lambda: None  # lmms-eval loads the plugin's entry point: nothing patched yet
import lmms_eval.__main__, lmms_eval.evaluator, lmms_eval.tasks, lmms_eval.utils
import lmms_eval.api.task, lmms_eval.evaluator_utils, lmms_eval.loggers.evaluation_tracker


def snapshot():
    seen = {}
    for name, module in list(sys.modules.items()):
        if not (name == "lmms_eval" or name.startswith("lmms_eval.")) or module is None:
            continue
        for key, value in list(vars(module).items()):
            seen[f"{name}.{key}"] = id(value)
            if inspect.isclass(value) and value.__module__ == name:
                for attribute, member in list(vars(value).items()):
                    seen[f"{name}.{key}.{attribute}"] = id(member)
    return seen


before = snapshot()
plugin.install = install
install()
from scifig_tasks.commands import eval as cli
from scifig_tasks.lmms_eval import patches
from scifig_tasks.lmms_eval.output_folder import EVALUATION_TRACKER, complete_files
from scifig_tasks.lmms_eval.response_cache import installed

run_patches = {cli.CLI_EVALUATE_SINGLE: functools.partial(cli.tracking, [], []), EVALUATION_TRACKER: complete_files}
with patches.during_run(run_patches), installed():
    after = snapshot()
changed = sorted(path for path, ident in after.items() if before.get(path, ident) != ident or (
    path not in before and path.rsplit(".", 2)[0] in {p.rsplit(".", 1)[0] for p in before}))
print("CHANGED " + json.dumps(changed))
"""


@pytest.mark.slow
def test_the_list_is_exactly_what_install_and_a_run_change_in_lmms_eval() -> None:
    """Every attribute of lmms-eval's modules and classes, before the plugin installs and during a run: the ones
    that differ are the listed targets (and the modules that import one by value)."""
    completed = warm_start.run([sys.executable, "-c", LIST_CHANGES], os.environ, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("CHANGED ")]
    changed = set(json.loads(line.removeprefix("CHANGED ")))
    listed = {patch.target for patch in patches.PATCHES}
    aliases = {f"{alias}.{patch.name}" for patch in patches.PATCHES for alias in patch.aliases}
    assert listed <= changed, sorted(listed - changed)
    assert changed <= listed | aliases, sorted(changed - listed - aliases)


def expected_line(target: str, found: str) -> str:
    patch = patches.BY_TARGET[target]
    (parameters,) = patch.signatures.values()
    return (
        f"scifig {scifig_version()} patches {target}({', '.join(parameters)}), verified on lmms-eval "
        f"{patch.versions}; the installed lmms-eval {patches.installed_lmms_eval()} {found}: install the "
        "pinned one with `pip install 'lmms-eval==0.7.3'` or see docs/lmms-eval-integration.md"
    )


def test_a_changed_signature_stops_install_in_one_line_before_anything_is_patched(
    lmms: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval.api.task import ConfigurableTask

    def download(self: Any, x: Any) -> None:  # what a later lmms-eval might have
        raise AssertionError("never called")

    monkeypatch.setattr(ConfigurableTask, "download", download)
    with pytest.raises(patches.LmmsEvalVersionError) as raised:
        install()
    message = expected_line("lmms_eval.api.task.ConfigurableTask.download", "has download(self, x)")
    assert str(raised.value) == message
    assert ConfigurableTask.download is download  # checked before anything is patched
    assert error_line("eval", raised.value) == (f"scifig eval: {message}", 1)


def test_a_missing_target_is_named(lmms: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmms_eval.utils

    monkeypatch.delattr(lmms_eval.utils, "make_table")
    with pytest.raises(patches.LmmsEvalVersionError) as raised:
        patches.check()
    assert str(raised.value) == expected_line("lmms_eval.utils.make_table", "has no lmms_eval.utils.make_table")


@pytest.mark.cli
def test_scifig_eval_says_the_version_problem_in_one_line(
    lmms: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmms_eval.loggers.evaluation_tracker import EvaluationTracker

    def save_results_aggregated(self: Any, payload: Any) -> None:
        raise AssertionError("never called")

    monkeypatch.setattr(EvaluationTracker, "save_results_aggregated", save_results_aggregated)
    monkeypatch.setattr(cli, "tasks_path", lambda: pytest.fail("lmms-eval must not be started"))

    assert main(["eval", "--model", "scifig_chance"]) == 1

    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    target = "lmms_eval.loggers.evaluation_tracker.EvaluationTracker.save_results_aggregated"
    assert lines[-1] == "scifig eval: " + expected_line(target, "has save_results_aggregated(self, payload)")


def test_a_run_patch_is_checked_when_the_run_starts(lmms: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lmms, "cli_evaluate_single", lambda arguments, extra: None)
    with (
        pytest.raises(patches.LmmsEvalVersionError, match=r"has cli_evaluate_single\(arguments, extra\)"),
        patches.during_run({cli.CLI_EVALUATE_SINGLE: lambda original: pytest.fail("must not be applied")}),
    ):
        pass


def test_parameters_beyond_the_expected_ones_need_defaults() -> None:
    def params(function: Any) -> list[inspect.Parameter]:
        return list(inspect.signature(function).parameters.values())

    def with_default(self: Any, dataset_kwargs: Any = None, retries: int = 3, *args: Any, **kwargs: Any) -> None: ...
    def required(self: Any, dataset_kwargs: Any, split: str) -> None: ...
    def renamed(self: Any, kwargs: Any = None) -> None: ...

    assert patches.compatible(params(with_default), ("self", "dataset_kwargs"))
    assert not patches.compatible(params(required), ("self", "dataset_kwargs"))
    assert not patches.compatible(params(renamed), ("self", "dataset_kwargs"))
