"""A benchmark's own local layout (``BenchmarkSource.local_reader``): tried first for a folder, under each of the
split's names, its rows checked like any others (a bad cell names the folder, the row and the column); a folder
that is not in the layout falls back to the ``<split>.parquet`` files, and a file is never handed to the reader."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import datasets
import pytest
from PIL import Image

from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_str

FEATURES = datasets.Features({"chart": datasets.Value("string"), "image": datasets.Image()})


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def read_charts(folder: Path, split: str) -> datasets.Dataset | None:
    """The toy layout: ``charts_<split>.json`` (a list of chart names) and ``<name>.png`` beside it."""
    listing = folder / f"charts_{split}.json"
    if not listing.is_file():
        return None
    rows = [
        {"chart": name, "image": {"path": str(folder / f"{name}.png"), "bytes": None}}
        for name in json.loads(listing.read_text())
    ]
    return datasets.Dataset.from_list(rows, features=FEATURES)


SOURCE = BenchmarkSource(
    name="Charts",
    hub_path="",
    splits=("validation",),
    env_var="SCIFIG_GRAB_DATA",  # a registered setting; the source is this test's own
    columns=(Column("chart", expect_str()), Column("image", image=True)),
    split_aliases={"validation": ("val",)},
    key=("chart",),
    local_reader=read_charts,
)


def layout(folder: Path, charts: list[str], split: str = "val") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"charts_{split}.json").write_text(json.dumps(charts))
    for name in charts:
        (folder / f"{name}.png").write_bytes(png())
    return folder


Load = Callable[[Path], datasets.Dataset]


@pytest.fixture
def use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Load:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))

    def load(path: Path) -> datasets.Dataset:
        monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))
        return load_benchmark(SOURCE)

    return load


def test_the_benchmarks_own_layout_is_read_under_the_splits_older_name(tmp_path: Path, use: Load) -> None:
    loaded = use(layout(tmp_path / "data", ["bars", "pie"]))
    assert loaded["chart"] == ["bars", "pie"]
    assert loaded[1]["image"].size == (8, 8)  # the file the cell named, read into the row


def test_its_rows_are_checked_like_any_others(tmp_path: Path, use: Load) -> None:
    folder = layout(tmp_path / "data", ["bars", " "])
    with pytest.raises(DataError) as raised:
        use(folder)
    assert (raised.value.origin, raised.value.row, raised.value.column) == (str(folder), 1, "chart")
    (folder / "bars.png").write_bytes(b"not an image")
    (folder / "charts_val.json").write_text(json.dumps(["bars"]))
    with pytest.raises(DataError, match=r"row 0 \(0-based\), column 'image'"):
        use(folder)


def test_a_folder_in_another_layout_is_read_as_parquet_files(tmp_path: Path, use: Load) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"chart": "line", "image": {"bytes": png(), "path": None}}]
    datasets.Dataset.from_list(rows, features=FEATURES).to_parquet(str(folder / "validation.parquet"))
    assert use(folder)["chart"] == ["line"]
    assert use(folder / "validation.parquet")["chart"] == ["line"]  # a file: never the reader's


def test_a_cell_naming_a_missing_file_is_located(tmp_path: Path, use: Load) -> None:
    folder = layout(tmp_path / "data", ["bars"])
    (folder / "charts_val.json").write_text(json.dumps(["bars", "gone"]))
    with pytest.raises(DataError, match=r"image path .*gone\.png.*: no such file"):
        use(folder)
