"""The four built-ins' old import paths (``scifig_tasks.core.<name>``, ``scifig_tasks.lmms_eval.<name>``,
``scifig_tasks.report.<name>``, ``scifig_tasks.vlmeval.mmsci``) give the modules at their new place, the same objects,
with one deprecation line per moved package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scifig_tasks import moved

pytestmark = [pytest.mark.slow, pytest.mark.cli]

CODE = """
import importlib
import scifig_tasks.core.grab.rules as old_rules
import scifig_tasks.benchmarks.grab.rules as new_rules
from scifig_tasks.core.grab import benchmark
from scifig_tasks.benchmarks.grab import description
from scifig_tasks.core.grab.benchmark import BENCHMARK
from scifig_tasks.vlmeval import mmsci
assert old_rules is new_rules and benchmark is description and BENCHMARK is description.BENCHMARK
assert mmsci is importlib.import_module("scifig_tasks.benchmarks.mmsci.vlmeval")
old, new = "scifig_tasks.report.grab", "scifig_tasks.benchmarks.grab.report"
assert importlib.import_module(old) is importlib.import_module(new)
print("same modules")
"""


def test_old_import_paths_give_the_moved_modules_with_one_line_per_package() -> None:
    completed = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "same modules"
    lines = [line for line in completed.stderr.splitlines() if "is deprecated" in line]
    assert lines == [
        "scifig: scifig_tasks.core.grab is deprecated and goes in 0.3.0 — import scifig_tasks.benchmarks.grab",
        "scifig: scifig_tasks.benchmarks.grab.benchmark is deprecated and goes in 0.3.0 — import "
        "scifig_tasks.benchmarks.grab.description",
        "scifig: scifig_tasks.vlmeval.mmsci is deprecated and goes in 0.3.0 — import "
        "scifig_tasks.benchmarks.mmsci.vlmeval",
        "scifig: scifig_tasks.report.grab is deprecated and goes in 0.3.0 — import scifig_tasks.benchmarks.grab.report",
    ]


def test_a_path_that_did_not_move_is_not_taken() -> None:
    assert moved.new_path("scifig_tasks.core.judge") is None
    assert moved.new_path("scifig_tasks.core.grabber") is None
    assert moved.new_path("scifig_tasks.core.grab.benchmark") == "scifig_tasks.benchmarks.grab.description"
    assert moved.new_path("scifig_tasks.lmms_eval.mmsci.utils") == "scifig_tasks.benchmarks.mmsci.tasks.utils"


def test_no_module_imports_an_old_path() -> None:
    """scifig's own code and tests import every moved module by its new path (a run prints no deprecation line)."""
    import ast

    from tests.harness.paths import REPO

    found = []
    for root in ("scifig_tasks", "curation", "finetune", "tests"):
        for path in sorted((REPO / root).rglob("*.py")):
            if path.name in ("moved.py", "test_moved_imports.py"):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
                else:
                    continue
                found += [f"{path.relative_to(REPO)}:{node.lineno} {name}" for name in names if moved.new_path(name)]
    assert found == []
