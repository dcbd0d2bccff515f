"""CharXiv's data source on a few real validation charts: the authors' layout read into the Hub's columns, a Hub-shaped
parquet folder (``val.parquet`` as on the Hub, or ``validation.parquet``), each chart's question documents, and bad
data located by file, row and column (a missing image by its file and figure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pytest

from scifig_tasks.benchmarks.charxiv.questions import figure_id
from scifig_tasks.benchmarks.charxiv.source import (
    CHARXIV_DESCRIPTIVE,
    CHARXIV_REASONING,
    charxiv_features,
    read_authors_layout,
)
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import undecoded
from tests.harness.charxiv_full_data import (
    SAMPLE,
    authors_file,
    authors_prompts,
    differing,
    point_data_at,
    write_layout,
)

Load = Callable[[Path], tuple[datasets.Dataset, datasets.Dataset]]


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Load:
    """Both sources' documents of the data in a folder, through the real loader."""

    def loaded(folder: Path) -> tuple[datasets.Dataset, datasets.Dataset]:
        point_data_at(monkeypatch, folder, tmp_path / "cache")
        return load_benchmark(CHARXIV_DESCRIPTIVE), load_benchmark(CHARXIV_REASONING)

    return loaded


def hub_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows of the authors' layout in ``folder`` as the Hub stores them: image bytes in the cell."""
    rows = undecoded(read_authors_layout(folder, "val")).to_list()  # type: ignore[arg-type]
    for row in rows:
        row["image"] = {"bytes": Path(row["image"]["path"]).read_bytes(), "path": None}
    return rows


def write_parquet(folder: Path, rows: list[dict[str, Any]], name: str = "val.parquet") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=charxiv_features()).to_parquet(str(folder / name))
    return folder


def test_the_authors_layout_has_the_hubs_columns(tmp_path: Path) -> None:
    folder = write_layout(tmp_path / "authors", SAMPLE)
    rows = read_authors_layout(folder, "val")
    assert rows is not None and rows.features == charxiv_features()
    by_figure = {figure_id(row["figure_path"]): row for row in undecoded(rows).to_list()}
    assert list(by_figure) == [int(key) for key in SAMPLE]
    grid, single, words = by_figure[0], by_figure[2], by_figure[62]
    assert (grid["subplot_row"], grid["subplot_col"], grid["subplot_loc"]) == (1, 2, None)
    assert (single["subplot_row"], single["subplot_col"], single["subplot_loc"]) == (0, 0, None)
    assert (words["subplot_row"], words["subplot_col"]) == (None, None)
    assert words["subplot_loc"] == authors_file("descriptive")["62"]["subplot_loc"]
    metadata, reasoning = authors_file("image_metadata")["0"], authors_file("reasoning")["0"]
    assert (grid["original_id"], grid["original_figure_path"]) == (metadata["paper_id"], metadata["figure_path"])
    assert (grid["category"], grid["year"]) == (metadata["category"], metadata["year"])
    assert [grid[f"descriptive_q{n}"] for n in range(1, 5)] == authors_file("descriptive")["0"]["qids"]
    assert (grid["reasoning_a_type"], grid["reasoning_q_source"]) == (
        reasoning["inst_category"],
        reasoning["qa_source"],
    )
    assert grid["image"]["path"] == str(folder / "images" / "0.jpg")
    assert read_authors_layout(folder, "test") is None  # no descriptive_test.json: not this layout's split
    assert read_authors_layout(tmp_path, "val") is None


def check_documents(descriptive: datasets.Dataset, reasoning: datasets.Dataset) -> None:
    """The sample's documents: each chart's four descriptive questions and its reasoning one, as the authors ask."""
    assert descriptive["query_id"] == [f"{key}_{index}" for key in SAMPLE for index in range(4)]
    assert descriptive["subq_idx"] == [0, 1, 2, 3] * len(SAMPLE)
    charts = authors_file("descriptive")
    assert descriptive["template"] == [template for key in SAMPLE for template in charts[key]["qids"]]
    assert descriptive["answer"] == [answer for key in SAMPLE for answer in charts[key]["answers"]]
    assert reasoning["query_id"] == list(SAMPLE)
    assert reasoning["answer_type"] == [authors_file("reasoning")[key]["inst_category"] for key in SAMPLE]
    authors = authors_prompts()
    for mode, documents in (("descriptive", descriptive), ("reasoning", reasoning)):
        ours = dict(zip(documents["query_id"], documents["question"], strict=True))
        wanted = {key: authors[mode][key] for key in ours}
        assert differing(ours, wanted) == [], mode
    assert descriptive[0]["image"].size == reasoning[0]["image"].size == (8, 8)


def test_the_authors_layout_loads(tmp_path: Path, load: Load) -> None:
    check_documents(*load(write_layout(tmp_path / "authors", SAMPLE)))


@pytest.mark.parametrize("name", ["val.parquet", "validation.parquet"])
def test_a_hub_shaped_parquet_folder_loads(tmp_path: Path, load: Load, name: str) -> None:
    rows = hub_rows(write_layout(tmp_path / "authors", SAMPLE))
    check_documents(*load(write_parquet(tmp_path / "hub", rows, name)))


def test_a_missing_image_names_its_file_and_figure(tmp_path: Path, load: Load) -> None:
    folder = write_layout(tmp_path / "authors", SAMPLE)
    (folder / "images" / "14.jpg").unlink()
    with pytest.raises(DataError) as raised:
        load(folder)
    assert raised.value.origin == str(folder / "images" / "14.jpg")
    assert "the image of figure 14" in str(raised.value)


def test_the_three_files_must_hold_the_same_charts(tmp_path: Path) -> None:
    folder = write_layout(tmp_path / "authors", SAMPLE)
    reasoning = json.loads((folder / "reasoning_val.json").read_text())
    del reasoning["17"]
    (folder / "reasoning_val.json").write_text(json.dumps(reasoning))
    with pytest.raises(DataError, match=r"reasoning_val\.json: lacks figure 17"):
        read_authors_layout(folder, "val")
    (folder / "image_metadata_val.json").unlink()
    with pytest.raises(DataError, match=r"image_metadata_val\.json: is missing"):
        read_authors_layout(folder, "val")


@pytest.mark.parametrize(
    ("change", "column", "problem"),
    [
        ({"category": "biology"}, "category", "unknown value 'biology'"),
        ({"descriptive_q3": 2}, "descriptive_q1", "repeat one"),  # chart 2's templates are 2, 8, 7, 15
        ({"reasoning_a_type": 4, "reasoning_a": "about 3"}, "reasoning_a", "must be a plain number"),
        ({"figure_path": "images/2.png"}, "figure_path", "expected images/<figure id>.jpg"),
    ],
)
def test_bad_data_names_the_file_row_and_column(
    tmp_path: Path, load: Load, change: dict[str, Any], column: str, problem: str
) -> None:
    rows = hub_rows(write_layout(tmp_path / "authors", SAMPLE))
    rows[1].update(change)
    folder = write_parquet(tmp_path / "hub", rows)
    with pytest.raises(DataError, match=problem) as raised:
        load(folder)
    assert (raised.value.origin, raised.value.row, raised.value.column) == (str(folder / "val.parquet"), 1, column)


def test_a_chart_without_a_subplot_location_is_named(tmp_path: Path, load: Load) -> None:
    rows = hub_rows(write_layout(tmp_path / "authors", SAMPLE))
    rows[2].update(subplot_row=None, subplot_col=None, subplot_loc=None)
    with pytest.raises(DataError, match=r"row 2 \(0-based\): the source's `questions` rule failed.*subplot_row"):
        load(write_parquet(tmp_path / "hub", rows))
