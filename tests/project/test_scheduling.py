"""How the tests are dealt out to pytest-xdist's workers (tests/harness/scheduling.py): the readers of a shared run,
and a module with a module-scoped run, each travel as one unit, so no run is made twice."""

from __future__ import annotations

from tests.harness.paths import REPO
from tests.harness.scheduling import SHARED_RUNS, unit_of


def test_every_reader_of_a_shared_run_travels_in_the_same_unit_as_the_other_readers_of_that_run() -> None:
    for run in SHARED_RUNS:
        readers = [
            path.relative_to(REPO).as_posix()
            for path in (REPO / "tests").rglob("test_*.py")
            if run in path.read_text(encoding="utf-8")
        ]
        assert len(readers) >= 2, (run, readers)  # shared by several modules, else it would be module-scoped
        assert len({unit_of(path) for path in readers}) == 1, (run, {path: unit_of(path) for path in readers})


def test_a_module_with_a_module_scoped_run_is_one_unit_and_other_modules_split_per_test() -> None:
    assert unit_of("tests/report/test_report.py") == "tests/report/test_report.py"
    assert unit_of("tests/core/grab/test_grab_core.py") is None


def test_a_module_reading_two_runs_joins_their_readers() -> None:
    assert unit_of("tests/cli/test_rescore.py") == unit_of("tests/lmms_eval/test_mmsci_lmms_cli.py")
    assert unit_of("tests/cli/test_rescore.py") == unit_of("tests/lmms_eval/test_scifibench_lmms_cli.py")
