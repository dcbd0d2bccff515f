"""A deferred module is imported at the first read of one of its attributes, not before, and then behaves as itself;
lmms-eval's ``stderr_for_metric`` gives its own answers without importing two unrelated tasks' modules."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

from scifig_tasks.lmms_eval.deferred_imports import UNUSED_AT_START, defer


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    root = tmp_path / "deferred_probe"
    root.mkdir()
    (root / "__init__.py").write_text(
        "import os\nos.environ['DEFERRED_PROBE'] = 'ran'\n\ndef load(name):\n    return name\n"
    )
    (root / "sub.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("DEFERRED_PROBE", raising=False)
    yield "deferred_probe"
    for name in [name for name in sys.modules if name.startswith("deferred_probe")]:
        del sys.modules[name]


def test_the_module_runs_at_its_first_attribute_read_and_the_bound_name_then_reads_it(package: str) -> None:
    import os

    assert defer(package)
    import deferred_probe as bound  # what lmms-eval's registry does: `import evaluate as hf_evaluate`

    inspect.getmodule(test_the_module_runs_at_its_first_attribute_read_and_the_bound_name_then_reads_it)
    assert importlib.util.find_spec(package).name == package
    assert "DEFERRED_PROBE" not in os.environ, "scanning sys.modules or finding the spec imported the module"
    assert bound.load("bleu") == "bleu"
    assert os.environ["DEFERRED_PROBE"] == "ran"
    assert sys.modules[package].load is bound.load


def test_a_submodule_import_imports_the_package_first(package: str) -> None:
    import os

    defer(package)
    from deferred_probe.sub import VALUE

    assert VALUE == 7 and os.environ["DEFERRED_PROBE"] == "ran"


def test_an_imported_or_missing_module_is_left_alone() -> None:
    assert not defer("json")
    assert not defer("no_such_module_anywhere")
    assert "no_such_module_anywhere" not in sys.modules


def test_lmms_evals_start_up_import_is_the_one_deferred() -> None:
    registry = importlib.util.find_spec("lmms_eval.api.registry")
    if registry is None:
        pytest.skip("lmms-eval is not installed")
    source = Path(registry.origin).read_text()
    assert "import evaluate as hf_evaluate" in source and UNUSED_AT_START == ("evaluate",)


def test_stderr_for_metric_answers_as_lmms_eval_does_without_importing_two_unrelated_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = pytest.importorskip("lmms_eval.api.metrics")
    from scifig_tasks.lmms_eval.deferred_imports import OPTIONAL_STDERR_MODULES, wrap_stderr_for_metric
    from scifig_tasks.lmms_eval.patches import original

    lmms_eval_rule = original(metrics.stderr_for_metric)
    for module in OPTIONAL_STDERR_MODULES:
        monkeypatch.delitem(sys.modules, module, raising=False)
    importable_during_call = []

    def spy(metric, bootstrap_iters):
        importable_during_call.append([sys.modules.get(module, "absent") for module in OPTIONAL_STDERR_MODULES])
        return lmms_eval_rule(metric, bootstrap_iters)

    def accuracy_breakdown(items):  # an aggregation of a task's own, as scifig's hooks define them
        return {"all": sum(items) / len(items)}

    wrapped = wrap_stderr_for_metric(spy)
    answers = [wrapped(metrics.mean, 1000), wrapped(accuracy_breakdown, 1000), wrapped(metrics.mean, 0)]
    bootstrapped = wrapped(metrics.median, 100)
    assert importable_during_call == [[None, None]] * 4
    assert not any(module in sys.modules for module in OPTIONAL_STDERR_MODULES), "a blocked name was left behind"
    assert answers == [metrics.mean_stderr, None, None]
    assert answers == [lmms_eval_rule(metrics.mean, 1000), lmms_eval_rule(accuracy_breakdown, 1000), None]
    assert callable(bootstrapped) and callable(lmms_eval_rule(metrics.median, 100))  # lmms-eval's bootstrap
