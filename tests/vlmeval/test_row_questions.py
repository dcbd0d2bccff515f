"""Several questions per source row (``BenchmarkSource.questions``): applied where the data is loaded, after the row
checks, so a bad cell still names the source's file, row and column, a row the rule fails on is named, and every
reader gets one document per question, each named by its own id."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import datasets
import pytest
from PIL import Image

from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_str


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def two_questions(row: Any) -> list[dict[str, Any]]:
    if row["chart"] == "broken":
        raise KeyError("labels")
    return [{**row, "qid": f"{row['chart']}-{n}", "question": f"Q{n} of {row['chart']}"} for n in (1, 2)]


def source(path: Path) -> BenchmarkSource:
    return BenchmarkSource(
        name="Charts",
        hub_path="",
        splits=("test",),
        env_var="SCIFIG_GRAB_DATA",  # a registered setting; the source is this test's own
        columns=(Column("chart", expect_str()), Column("image", image=True)),
        key=("chart",),
        questions=two_questions,
    )


def write(path: Path, charts: list[Any]) -> Path:
    rows = [{"chart": chart, "image": {"bytes": png(), "path": None}} for chart in charts]
    features = datasets.Features({"chart": datasets.Value("string"), "image": datasets.Image()})
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path / "test.parquet"))
    return path


def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, charts: list[Any]) -> datasets.Dataset:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    folder = write(tmp_path, charts)
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(folder))
    return load_benchmark(source(folder))


def test_each_row_gives_its_questions_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load(tmp_path, monkeypatch, ["a", "b"])
    assert loaded["qid"] == ["a-1", "a-2", "b-1", "b-2"]
    assert loaded["question"][3] == "Q2 of b"
    assert isinstance(loaded.features["image"], datasets.Image)  # the image is still an image, shared
    assert loaded[0]["image"].size == loaded[1]["image"].size == (8, 8)


def test_a_bad_cell_names_the_source_row_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError) as raised:
        load(tmp_path, monkeypatch, ["a", " "])
    assert (raised.value.row, raised.value.column) == (1, "chart")
    assert str(raised.value).startswith(str(tmp_path / "test.parquet"))


def test_a_row_the_rule_fails_on_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError, match=r"row 2 \(0-based\): the source's `questions` rule failed on this row"):
        load(tmp_path, monkeypatch, ["a", "b", "broken"])
