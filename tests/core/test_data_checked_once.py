"""A split is checked once per process and, while its files are unchanged, once across runs (validation records);
a changed file, other checks or another validator check again, and bad data is never recorded."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import pytest

from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.core import data, validation_records
from scifig_tasks.core.errors import DataError
from tests.harness.grab_data import Row, write_parquet

ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The origins :func:`data.validate` checked, in order; a private datasets cache and an empty process memo."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(data, "_LOADED", {})
    seen: list[str] = []
    check = data.validate

    def counting(dataset, columns, origin, *args, **kwargs):
        seen.append(origin)
        return check(dataset, columns, origin, *args, **kwargs)

    monkeypatch.setattr(data, "validate", counting)
    return seen


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "_LOADED", {})


def _loaded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GRAB rows written, pointed at and loaded (checked) once; the parquet file's path."""
    path = write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))
    data.load_benchmark(GRAB)
    return path


def test_one_check_per_process_and_none_in_the_next_run_of_unchanged_data(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    first = [data.load_benchmark(GRAB) for _ in range(4)]  # GRAB's four subtasks
    assert checks == [str(path)]
    assert all(loaded is first[0] for loaded in first)
    assert len(list((tmp_path / "hf" / "scifig_validated").glob("*.json"))) == 1

    _new_process(monkeypatch)
    assert data.load_benchmark(GRAB)["answer"] == first[0]["answer"]
    assert checks == [str(path)]  # the record stood for the check


def test_a_changed_file_is_checked_again_and_bad_data_is_never_recorded(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _loaded_once(tmp_path, monkeypatch)

    write_parquet([*ROWS[:3], Row("transforms", "6")], path)  # an unknown task: same rows, other bytes
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    for _ in range(2):  # in this process and the next: a bad split stops every run
        with pytest.raises(DataError, match=r"row 3 \(0-based\), column 'task': unknown value 'transforms'"):
            data.load_benchmark(GRAB)
        _new_process(monkeypatch)
    assert checks == [str(path)] * 3
    assert len(list((tmp_path / "hf" / "scifig_validated").glob("*.json"))) == 1  # the good version's only


def test_other_checks_or_another_validator_check_again(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _loaded_once(tmp_path, monkeypatch)

    _new_process(monkeypatch)
    data.load_benchmark(data.BenchmarkSource(**{**GRAB.__dict__, "key": ()}))  # the same data, one rule fewer
    assert len(checks) == 2

    _new_process(monkeypatch)
    monkeypatch.setattr(validation_records, "validator_version", lambda: "another release")
    data.load_benchmark(GRAB)
    assert len(checks) == 3


def test_the_validator_version_changes_with_any_core_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    core = Path(validation_records.__file__).parent
    for module in core.glob("*.py"):
        (tmp_path / module.name).write_bytes(module.read_bytes())
    monkeypatch.setattr(validation_records, "_CORE", tmp_path)
    validation_records.validator_version.cache_clear()
    try:
        before = validation_records.validator_version()
        (tmp_path / "schema.py").write_text((core / "schema.py").read_text() + "\n# another rule\n")
        validation_records.validator_version.cache_clear()
        assert validation_records.validator_version() != before
    finally:
        validation_records.validator_version.cache_clear()
