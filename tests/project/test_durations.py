"""``python -m tests.harness.durations``: pytest's durations lines summed per test (setup, call and teardown), per
folder and per file, in the tables docs/testing.md shows."""

from __future__ import annotations

from tests.harness.durations import read, tables

LOG = """\
============================= slowest durations ==============================
12.50s call     tests/lmms_eval/test_grab_lmms_cli.py::test_grab[a]
2.00s setup    tests/lmms_eval/test_grab_lmms_cli.py::test_grab[a]
0.50s teardown tests/lmms_eval/test_grab_lmms_cli.py::test_grab[a]
5.00s call     tests/core/grab/test_grab_core.py::test_rule
1.00s call     tests/core/test_judge.py::test_retry
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_a_tests_phases_are_added_up_and_other_lines_ignored() -> None:
    assert read(LOG.splitlines()) == {
        "tests/lmms_eval/test_grab_lmms_cli.py::test_grab[a]": 15.0,
        "tests/core/grab/test_grab_core.py::test_rule": 5.0,
        "tests/core/test_judge.py::test_retry": 1.0,
    }


def test_folders_are_the_package_level_and_sorted_by_time() -> None:
    text = tables(read(LOG.splitlines()), top=2)
    folders = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| `tests/")]
    assert folders[:2] == ["`tests/lmms_eval`", "`tests/core`"]  # core/grab counts under tests/core
    assert "| `tests/core` | rules of the core, in process (judge and servers on 127.0.0.1) | 2 | 6 | 29 % |" in text
    assert folders[2:] == ["`tests/lmms_eval/test_grab_lmms_cli.py`", "`tests/core/grab/test_grab_core.py`"]
    assert text.endswith("3 tests, 21 s of test time in all.")
