"""Which data made a number: Hub benchmarks load at their pinned revision, from the Hub cache offline too, a setting
moves them off it in one line, and what was loaded (origin, revision, rows) is noted for the results files."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from datasets import Dataset

from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
from scifig_tasks.core import data, provenance, validation_records
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.schema import UNPINNED
from tests.harness.grab_data import Row, build
from tests.harness.hub_layout import card, hub_dataset, offline_hub
from tests.harness.scifibench_data import Question
from tests.harness.scifibench_data import build as build_scifibench

NEWER = "1" * 40
"""A commit of the Hub datasets newer than their pins (``refs/main`` points at it)."""


def parquet(dataset: Dataset) -> bytes:
    buffer = io.BytesIO()
    dataset.to_parquet(buffer)
    return buffer.getvalue()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An offline Hub cache holding GRAB at its pin (3 rows) and at a newer ``main`` (2 rows), and SciFIBench
    (unpinned) at ``main``; nothing loaded or noted yet in this process."""
    cache = tmp_path / "hub"
    offline_hub(monkeypatch, cache)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    for name in ("SCIFIG_GRAB_DATA", "SCIFIG_SCIFIBENCH_DATA", "SCIFIG_GRAB_REVISION", "SCIFIG_SCIFIBENCH_REVISION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(data, "_LOADED", {})
    monkeypatch.setattr(data, "_SAID", set())
    monkeypatch.setattr(provenance, "_DATA", {})
    grab_card = card({"GRAB": "data/GRAB-*"})
    rows = [Row("properties", "3"), Row("function", "4"), Row("series", "5")]
    pinned = {"README.md": grab_card, "data/GRAB-00000-of-00001.parquet": parquet(build(rows))}
    hub_dataset(cache, GRAB.hub_path, GRAB.revision, pinned, ref=None)
    newer = {"README.md": grab_card, "data/GRAB-00000-of-00001.parquet": parquet(build(rows[:2]))}
    hub_dataset(cache, GRAB.hub_path, NEWER, newer)
    split = build_scifibench([Question("f2c", "A"), Question("f2c", "C")])
    scifibench = {"README.md": card({"CS_Figure2Caption": "data/CS_Figure2Caption-*"})}
    scifibench["data/CS_Figure2Caption-00000-of-00001.parquet"] = parquet(split)
    hub_dataset(cache, SCIFIBENCH.hub_path, NEWER, scifibench)
    return cache


def test_each_hub_benchmark_loads_through_load_dataset_at_its_pinned_revision(hub: Path) -> None:
    assert len(load_benchmark(GRAB)) == 3  # the pinned commit's rows, not main's 2
    assert len(load_benchmark(SCIFIBENCH, "CS_Figure2Caption")) == 2  # unpinned: main
    noted = provenance.loaded_data()
    assert noted["grab"] == {
        "origin": "hub",
        "hub": GRAB.hub_path,
        "revision": GRAB.revision,
        "pinned": GRAB.revision,
        "rows": {"GRAB": 3},
    }
    assert noted["scifibench"]["revision"] == NEWER and noted["scifibench"]["pinned"] == UNPINNED
    assert provenance.environment(None)[provenance.DATA] == noted


def test_the_revision_setting_overrides_the_pin_and_says_so(
    hub: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SCIFIG_GRAB_REVISION", "main")
    assert len(load_benchmark(GRAB)) == 2
    assert provenance.loaded_data()["grab"]["revision"] == NEWER
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("scifig")]
    assert said == [
        f"scifig: SCIFIG_GRAB_REVISION=main: GRAB data is loaded at revision main, not the pinned "
        f"{GRAB.revision[:12]}; scores may differ from those made with the pinned data"
    ]


def test_a_pinned_revision_missing_from_the_offline_cache_is_one_line_naming_it(hub: Path) -> None:
    shutil.rmtree(hub / "datasets--jonathan-roberts1--GRAB" / "snapshots" / GRAB.revision)
    with pytest.raises(DataError) as caught:
        load_benchmark(GRAB)
    assert caught.value.origin == f"Hugging Face Hub dataset {GRAB.hub_path} at revision {GRAB.revision}"
    assert "SCIFIG_GRAB_DATA=DIR" in caught.value.problem and "SCIFIG_GRAB_REVISION" in caught.value.problem


def test_local_data_is_noted_by_the_digest_of_its_content(hub: Path, tmp_path: Path, monkeypatch) -> None:
    first = tmp_path / "one" / "GRAB.parquet"
    first.parent.mkdir()
    build([Row("properties", "3")]).to_parquet(str(first))
    second = tmp_path / "two" / "GRAB.parquet"
    second.parent.mkdir()
    shutil.copy(first, second)
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(first))
    load_benchmark(GRAB)
    noted = provenance.loaded_data()["grab"]
    assert noted == {
        "origin": "local",
        "local": True,
        "revision": validation_records.data_digest(first),
        "rows": {"GRAB": 1},
    }
    assert validation_records.data_digest(second) == noted["revision"]  # the content, not where it lies
    build([Row("properties", "4")]).to_parquet(str(second))
    assert validation_records.data_digest(second) != noted["revision"]


def test_blocks_without_a_recorded_revision_read_unknown() -> None:
    old = {"data": {"grab": {"hub": GRAB.hub_path}}}
    new = {"data": {"grab": {"origin": "hub", "revision": GRAB.revision}, "scifibench": {"revision": NEWER}}}
    assert provenance.data_revisions(old) == {"grab": provenance.UNKNOWN}
    assert provenance.data_revisions({}) == {} and provenance.data_revisions(None) == {}
    assert provenance.data_differences(old, new) == {"grab": (provenance.UNKNOWN, GRAB.revision)}
    assert provenance.data_words(provenance.data_differences(old, new)) == f"grab unknown -> {GRAB.revision[:12]}"
