"""lmms-eval's Python API finds the scifig tasks: after ``import scifig_tasks``, a plain ``TaskManager()`` (the
documented way to pass tasks to ``simple_evaluate``) lists every scifig task and group. Each case runs in a fresh
interpreter, since the discovery patch is process-wide."""

from __future__ import annotations

import subprocess
import sys

import pytest

EXPECTED = ("grab", "grab_series", "scifibench", "scifibench_alignment", "plot_twist", "mmsci", "mmsci_captioning")

PROBE = """
import sys
{imports}
imported_lmms_eval = "lmms_eval" in sys.modules
from lmms_eval.tasks import TaskManager
names = set(TaskManager("WARNING").all_tasks)
print(",".join(sorted(name for name in {expected!r} if name in names)))
print(imported_lmms_eval)
"""


def _probe(imports: str) -> tuple[list[str], bool]:
    """The expected names a fresh ``TaskManager()`` lists after ``imports``; whether ``imports`` loaded lmms-eval."""
    code = PROBE.format(imports=imports, expected=EXPECTED)
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    listed, imported = completed.stdout.splitlines()[-2:]
    return [name for name in listed.split(",") if name], imported == "True"


@pytest.mark.slow
def test_a_plain_task_manager_lists_every_scifig_task_after_import_scifig_tasks() -> None:
    listed, imported_lmms_eval = _probe("import scifig_tasks")
    assert listed == sorted(EXPECTED)
    assert not imported_lmms_eval  # the import itself stays cheap: lmms-eval is patched when it is first used


@pytest.mark.slow
def test_the_same_when_lmms_eval_was_imported_first() -> None:
    listed, _ = _probe("import lmms_eval.tasks\nimport scifig_tasks")
    assert listed == sorted(EXPECTED)


@pytest.mark.slow
def test_without_the_import_lmms_eval_alone_lists_none_of_them() -> None:
    assert _probe("") == ([], False)
