"""lmms-eval's task index of a folder, kept on disk by the ``TaskManager._get_task_and_group`` patch
(:func:`scifig_tasks.lmms_eval.plugin.kept_index`): the same index as lmms-eval's own, in the same order, read again
when a YAML, an included file or the folder's list of YAMLs changes, or when an include would now be found relative to
the working directory; lines logged while indexing said again, as lmms-eval's, when the stored index is used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # imports lmms-eval (torch)


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from scifig_tasks.lmms_eval import plugin

    plugin.install()
    from lmms_eval.tasks import TaskManager
    from lmms_eval.utils import eval_logger

    found = TaskManager.__new__(TaskManager)
    found.logger = eval_logger
    return found


def indexes(manager: Any, folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index through the patch, and lmms-eval's own."""
    from scifig_tasks.lmms_eval import patches

    own = patches.original(type(manager)._get_task_and_group)
    return manager._get_task_and_group(str(folder)), own(manager, str(folder))


def stored(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "scifig" / "registration" / "lmms_eval_index").glob("*.json"))


def test_the_index_is_lmms_evals_and_read_again_when_a_file_changes(
    tmp_path: Path, manager: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "a.yaml").write_text("task: t1\ninclude: _template.yaml\n")
    (folder / "_template.yaml").write_text("tag: x\n")

    first, own = indexes(manager, folder)
    assert first == own and list(first) == list(own) and set(own) == {"t1", "x"}
    (entry,) = stored(tmp_path)
    again, _ = indexes(manager, folder)
    assert again == own and list(again) == list(own)
    assert stored(tmp_path) == [entry]

    (folder / "_template.yaml").write_text("tag: changed\n")  # an included file changed
    changed, own = indexes(manager, folder)
    assert changed == own and "changed" in changed

    (folder / "b.yaml").write_text("task: t2\n")  # a YAML added
    added, own = indexes(manager, folder)
    assert added == own and "t2" in added

    elsewhere = tmp_path / "elsewhere"  # lmms-eval reads an include found from the working directory first
    elsewhere.mkdir()
    (elsewhere / "_template.yaml").write_text("tag: from_cwd\n")
    monkeypatch.chdir(elsewhere)
    found, own = indexes(manager, folder)
    assert found == own and "from_cwd" in found
    monkeypatch.chdir(tmp_path)
    back, own = indexes(manager, folder)
    assert back == own and "changed" in back and "from_cwd" not in back


def test_the_lines_logged_while_indexing_are_said_again_as_lmms_evals(tmp_path: Path, manager: Any) -> None:
    from lmms_eval.utils import eval_logger

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "_template.yaml").write_text("output_type: generate_until\n")  # neither task nor group: a debug line
    lines: list[str] = []
    sink = eval_logger.add(lines.append, level="DEBUG", format="{level} {name}:{function} {file.name} - {message}")
    try:
        indexes(manager, folder)  # stored, then lmms-eval's own
        manager._get_task_and_group(str(folder))  # the stored index
    finally:
        eval_logger.remove(sink)
    said = [line for line in lines if "_template.yaml" in line]
    assert len(said) == 3 and len(set(said)) == 1, lines
    assert said[0].startswith("DEBUG lmms_eval.tasks:_get_task_and_group __init__.py - File _template.yaml in ")
    assert os.fspath(folder) in said[0]
