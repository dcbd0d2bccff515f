"""Local parquet data are read through an Arrow copy written a few rows at a time: the same rows and features as
``Dataset.from_parquet``, one copy per version of the file, never a half-written one."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import pytest

from scifig_tasks.core import data
from tests.harness.grab_data import Row, write_parquet

ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")]


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "hf"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(folder))
    return folder


def test_the_arrow_copy_holds_what_from_parquet_reads_and_is_written_once_per_version(
    cache: Path, tmp_path: Path
) -> None:
    path = write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")
    expected = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "other"))

    loaded = data._read_parquet(path)
    again = data._read_parquet(path)

    assert loaded.features == expected.features
    assert loaded.data.table.equals(expected.data.table)
    copies = sorted((cache / "scifig_parquet").glob("*.arrow"))
    assert [Path(entry["filename"]) for entry in again.cache_files] == copies and len(copies) == 1

    write_parquet(ROWS[:3], path)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    assert len(data._read_parquet(path)) == 3
    assert len(list((cache / "scifig_parquet").glob("*.arrow"))) == 2
    assert not list((cache / "scifig_parquet").glob("*.partial"))
