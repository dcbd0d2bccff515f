"""The local-data contract (``SCIFIG_GRAB_DATA``) and loud data errors naming file, row and column."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.sources import GRAB
from tests.harness.grab_data import Row, build, write_parquet

ROWS = [Row("properties", "3"), Row("function", "4", complexity=2), Row("series", "5"), Row("transform", "6")]


@pytest.fixture
def grab_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))

    def point_to(path: Path) -> None:
        monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    return point_to


def _save_parquet(dataset: datasets.Dataset, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(path))
    return path


@pytest.mark.parametrize("layout", ["parquet_file", "parquet_dir", "save_to_disk", "save_to_disk_dict"])
def test_every_local_layout_loads_the_published_split(layout: str, tmp_path: Path, grab_env) -> None:
    dataset = build(ROWS)
    if layout == "parquet_file":
        target = _save_parquet(dataset, tmp_path / "any-name.parquet")
    elif layout == "parquet_dir":
        target = tmp_path / "dir"
        _save_parquet(dataset, target / "GRAB.parquet")
    elif layout == "save_to_disk":
        target = tmp_path / "saved"
        dataset.save_to_disk(str(target))
    else:
        target = tmp_path / "saved_dict"
        datasets.DatasetDict({"GRAB": dataset}).save_to_disk(str(target))
    grab_env(target)

    loaded = load_benchmark(GRAB, "GRAB")

    assert loaded["answer"] == ["3", "4", "5", "6"]
    assert isinstance(loaded.features["decoded_image"], datasets.Image)
    assert loaded[1]["decoded_image"].size == (64, 48)


def _corrupt_image(dataset: datasets.Dataset) -> datasets.Dataset:
    raw = dataset.cast_column("decoded_image", datasets.Image(decode=False))

    def damage(row: dict, index: int) -> dict:
        if index == 2:
            row["decoded_image"] = {"bytes": row["decoded_image"]["bytes"][:40] + b"\x00garbage", "path": None}
        return row

    return raw.map(damage, with_indices=True)


BAD_DATA = {
    "missing column": (lambda ds: ds.remove_columns("complexity"), None, "complexity", "missing column"),
    "corrupt image": (_corrupt_image, 2, "decoded_image", "not a readable image"),
    "unknown task": (
        lambda ds: ds.map(lambda row, i: {"task": "functions" if i == 1 else row["task"]}, with_indices=True),
        1,
        "task",
        "unknown value 'functions'",
    ),
    "complexity out of range": (
        lambda ds: ds.map(lambda row, i: {"complexity": 12 if i == 3 else row["complexity"]}, with_indices=True),
        3,
        "complexity",
        "outside [0, 9]",
    ),
    "no precision sentence": (
        lambda ds: ds.map(lambda row, i: {"question": "How many?" if i == 0 else row["question"]}, with_indices=True),
        0,
        "question",
        "no known precision sentence",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_data_names_file_row_and_column(case: str, tmp_path: Path, grab_env) -> None:
    change, row, column, problem = BAD_DATA[case]
    path = _save_parquet(change(build(ROWS)), tmp_path / "bad" / "GRAB.parquet")
    grab_env(path)

    with pytest.raises(DataError) as caught:
        load_benchmark(GRAB)

    error = caught.value
    assert (error.origin, error.row, error.column) == (str(path), row, column)
    assert str(path) in str(error) and repr(column) in str(error) and problem in str(error)
    if row is not None:
        assert f"row {row} (0-based)" in str(error)


def test_missing_local_path_is_an_error(tmp_path: Path, grab_env) -> None:
    grab_env(tmp_path / "nowhere.parquet")
    with pytest.raises(DataError, match="nowhere.parquet: does not exist"):
        load_benchmark(GRAB)


def test_scifig_eval_exits_non_zero_on_bad_data(tmp_path: Path, lmms_env, run_cli) -> None:
    path = _save_parquet(BAD_DATA["unknown task"][0](build(ROWS)), tmp_path / "bad" / "GRAB.parquet")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(path)}

    run = run_cli("scifig", ["eval", "--model", "scifig_chance", "--tasks", "grab"], env, tmp_path / "out")

    assert run.returncode != 0
    assert f"{path}, row 1 (0-based), column 'task': unknown value 'functions'" in run.output
    assert "scifig eval: FAILED" in run.output


def test_scifig_eval_exits_non_zero_on_unknown_task(tmp_path: Path, lmms_env, run_cli) -> None:
    path = write_parquet(ROWS, tmp_path / "GRAB.parquet")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(path)}

    run = run_cli("scifig", ["eval", "--model", "scifig_chance", "--tasks", "grab_nonexistent"], env, tmp_path / "o")

    assert run.returncode != 0
    assert "grab_nonexistent" in run.output and "scifig eval: FAILED" in run.output


def test_scifibench_options_and_split_names_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scifig_tasks.core.sources import SCIFIBENCH
    from tests.harness.scifibench_data import Question
    from tests.harness.scifibench_data import build as build_scifibench

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    good = build_scifibench([Question("f2c", "A"), Question("f2c", "B")])
    bad = good.map(lambda row, i: {"Options": row["Options"][::-1] if i == 1 else row["Options"]}, with_indices=True)
    directory = tmp_path / "sfb"
    directory.mkdir()
    bad.to_parquet(str(directory / "CS_Figure2Caption.parquet"))
    good.to_parquet(str(directory / "Figure2Caption.parquet"))
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(directory))

    with pytest.raises(DataError, match=r"CS_Figure2Caption.parquet, row 1 \(0-based\), column 'Options': option 0"):
        load_benchmark(SCIFIBENCH, "CS_Figure2Caption")
    (directory / "CS_Figure2Caption.parquet").unlink()
    assert load_benchmark(SCIFIBENCH, "CS_Figure2Caption")["Answer"] == ["A", "B"]  # the older split name
    with pytest.raises(DataError, match="has no General_Caption2Figure.parquet"):
        load_benchmark(SCIFIBENCH, "General_Caption2Figure")
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(directory / "Figure2Caption.parquet"))
    with pytest.raises(DataError, match="one split cannot serve SciFIBench's splits"):
        load_benchmark(SCIFIBENCH, "General_Caption2Figure")
