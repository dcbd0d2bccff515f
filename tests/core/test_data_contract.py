"""The local-data contract (``SCIFIG_GRAB_DATA``) and loud data errors naming file, row and column."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from PIL import Image, ImageFile

from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import undecoded
from scifig_tasks.core.images import for_upload, to_rgb
from tests.harness.bad_images import bad_checksum, broken_stream, declared_size, truncated_stream
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
    assert "scifig eval: unknown task 'grab_nonexistent' — did you mean" in run.output


def test_scifibench_options_and_split_names_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
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


def _raises_at(source, split: str | None, path: Path, row: int | None, column: str | None, problem: str) -> None:
    with pytest.raises(DataError) as caught:
        load_benchmark(source, split)
    error = caught.value
    assert (error.origin, error.row, error.column) == (str(path), row, column), str(error)
    assert (
        str(error)
        == f"{path}{'' if row is None else f', row {row} (0-based)'}"
        + ("" if column is None else f", column {column!r}")
        + f": {problem}"
    )


def _scifibench_rows(kinds: str) -> list[dict]:
    from tests.harness.scifibench_data import Question
    from tests.harness.scifibench_data import build as build_scifibench

    return build_scifibench([Question(kind, "ABCDE"[i]) for i, kind in enumerate(kinds.split())]).to_list()


def _drop_option(rows: list[dict]) -> list[dict]:
    rows[1] = {**rows[1], "Options": rows[1]["Options"][:4], "Answer": "E"}
    return rows


SCIFIBENCH_BAD = {
    # split, change of the rows, (row, column, problem)
    "answer F with 5 options": (
        "CS_Figure2Caption",
        lambda rows: [rows[0], {**rows[1], "Answer": "F"}],
        (1, "Answer", "'F' is not one of the row's 5 options (A to E)"),
    ),
    "answer E with 4 options": (
        "CS_Figure2Caption",
        _drop_option,
        (1, "Answer", "'E' is not one of the row's 4 options (A to D)"),
    ),
    "caption-to-figure row with 4 images for 5 options": (
        "CS_Caption2Figure",
        lambda rows: [rows[0], {**rows[1], "Images": rows[1]["Images"][:4]}],
        (1, "Images", "4 images for 5 options (a Caption→Figure question has one image per option)"),
    ),
    "figure-to-caption row with 2 images": (
        "General_Figure2Caption",
        lambda rows: [{**rows[0], "Images": rows[0]["Images"] * 2}, rows[1]],
        (0, "Images", "a Figure→Caption question has one image, got 2"),
    ),
    "duplicate ID": (
        "CS_Figure2Caption",
        lambda rows: [rows[0], {**rows[1], "ID": 0}],
        (1, "ID", "duplicate key 0, already at row 0"),
    ),
    "row repeated in full": (
        "CS_Figure2Caption",
        lambda rows: [rows[0], rows[1], rows[0]],
        (2, None, "repeats row 0 in full (every column is equal)"),
    ),
}


@pytest.mark.parametrize("case", sorted(SCIFIBENCH_BAD))
def test_scifibench_rows_agree_with_their_options_and_are_unique(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
    from tests.harness.scifibench_data import FEATURES

    split, change, (row, column, problem) = SCIFIBENCH_BAD[case]
    kind = "c2f" if split.endswith("Caption2Figure") else "f2c"
    rows = change(_scifibench_rows(f"{kind} {kind}"))
    path = _save_parquet(datasets.Dataset.from_list(rows, features=FEATURES), tmp_path / "sfb" / f"{split}.parquet")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(path.parent))

    _raises_at(SCIFIBENCH, split, path, row, column, problem)


def test_scifibench_good_rows_of_both_kinds_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
    from tests.harness.scifibench_data import FEATURES

    directory = tmp_path / "sfb"
    for split, kind in (("CS_Figure2Caption", "f2c"), ("CS_Caption2Figure", "c2f")):
        rows = _scifibench_rows(f"{kind} {kind} {kind}")
        _save_parquet(datasets.Dataset.from_list(rows, features=FEATURES), directory / f"{split}.parquet")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(directory))

    assert load_benchmark(SCIFIBENCH, "CS_Figure2Caption")["Answer"] == ["A", "B", "C"]
    assert [len(images) for images in load_benchmark(SCIFIBENCH, "CS_Caption2Figure")["Images"]] == [5, 5, 5]


def _mmsci_rows() -> list[dict]:
    from tests.harness.mmsci_data import Mcq, mcq_row

    return [mcq_row(0, Mcq("fig2cap", "A")), mcq_row(1, Mcq("fig2cap", "B")), mcq_row(2, Mcq("subfig2cap", "C"))]


MMSCI_BAD = {
    "answer E with 4 options": (
        lambda rows: [rows[0], {**rows[1], "answer": "E"}, rows[2]],
        (1, "answer", "unknown value 'E' (expected one of: A, B, C, D)"),
    ),
    "duplicate question key": (
        lambda rows: [rows[0], rows[1], {**rows[1], "answer": "D", "image": rows[0]["image"]}],
        (
            2,
            "uid, figure_index, setting, subfigure",
            "duplicate key ('ncomms1001', 1, 'fig2cap', ''), already at row 1",
        ),
    ),
    "row repeated in full": (
        lambda rows: [rows[0], rows[1], rows[2], rows[1]],
        (3, None, "repeats row 1 in full (every column is equal)"),
    ),
}


@pytest.mark.parametrize("case", sorted(MMSCI_BAD))
def test_mmsci_answers_and_question_keys_are_checked(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scifig_tasks.benchmarks.mmsci.source import MMSCI_MCQ, mmsci_mcq_features

    change, (row, column, problem) = MMSCI_BAD[case]
    dataset = datasets.Dataset.from_list(change(_mmsci_rows()), features=mmsci_mcq_features())
    path = _save_parquet(dataset, tmp_path / "mmsci" / "mcq" / "test.parquet")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", str(tmp_path / "mmsci"))

    _raises_at(MMSCI_MCQ, "test", path, row, column, problem)


def _set_image(index: int, damage) -> object:
    def change(dataset: datasets.Dataset) -> datasets.Dataset:
        raw = dataset.cast_column("decoded_image", datasets.Image(decode=False))

        def one(row: dict, i: int) -> dict:
            if i == index:
                row["decoded_image"] = {"bytes": damage(row["decoded_image"]["bytes"]), "path": None}
            return row

        return raw.map(one, with_indices=True)

    return change


def _rows_of(dataset: datasets.Dataset, order: list[int]) -> datasets.Dataset:
    return dataset.select(order)


GRAB_BAD = {
    "duplicate pid": (
        lambda ds: ds.map(lambda row, i: {"pid": 1 if i == 3 else row["pid"]}, with_indices=True),
        (3, "pid", "duplicate key 1, already at row 1"),
    ),
    "row repeated in full": (
        lambda ds: _rows_of(ds, [0, 1, 2, 3, 2]),
        (4, None, "repeats row 2 in full (every column is equal)"),
    ),
    "PNG chunk checksum wrong": (
        _set_image(2, bad_checksum),
        (
            2,
            "decoded_image",
            "image bytes are not a readable image (SyntaxError: broken PNG file (bad header checksum in b'IDAT'))",
        ),
    ),
    "PNG declaring more pixels than the limit": (
        _set_image(1, lambda png: declared_size(png, 20_000, 10_000)),
        (
            1,
            "decoded_image",
            "image bytes are not a readable image (ValueError: declared size 20000x10000 (200,000,000 pixels) is over "
            "the 178,956,970-pixel limit (a decompression bomb, or a figure to downscale before evaluating))",
        ),
    ),
}

GRAB_BAD_PIXELS = {
    "PNG data stream broken, header fine": (
        _set_image(1, broken_stream),
        (
            1,
            "decoded_image",
            "image bytes are not a readable image (OSError: broken data stream when reading image file)",
        ),
    ),
    "PNG data stream truncated, header fine": (
        _set_image(3, truncated_stream),
        (
            3,
            "decoded_image",
            "image bytes are not a readable image (OSError: image file is truncated (0 bytes not processed))",
        ),
    ),
}


@pytest.mark.parametrize("lenient", [False, True], ids=["pil-default", "lmms-eval-lenient"])
@pytest.mark.parametrize("case", sorted(GRAB_BAD))
def test_grab_keys_repeats_and_undecodable_images(
    case: str, lenient: bool, tmp_path: Path, grab_env, monkeypatch
) -> None:
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", lenient)  # lmms-eval sets it to True at import
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)  # as some frameworks set it: scifig's bound holds
    change, (row, column, problem) = GRAB_BAD[case]
    path = _save_parquet(change(build(ROWS)), tmp_path / "bad" / "GRAB.parquet")
    grab_env(path)

    _raises_at(GRAB, None, path, row, column, problem)


@pytest.mark.parametrize("lenient", [False, True], ids=["pil-default", "lmms-eval-lenient"])
@pytest.mark.parametrize("decode", [to_rgb, for_upload], ids=["pixel-model", "api-model"])
@pytest.mark.parametrize("case", sorted(GRAB_BAD_PIXELS))
def test_broken_pixel_data_stops_the_request_with_the_data_check_error(
    case: str, decode, lenient: bool, tmp_path: Path, grab_env, monkeypatch
) -> None:
    """Pixels are decoded when the request is built, not at load: the structure is fine, so the data load, and the
    pixels of every other row decode; the broken row's request raises the file, row and column."""
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", lenient)  # lmms-eval sets it to True at import
    change, (row, column, problem) = GRAB_BAD_PIXELS[case]
    path = _save_parquet(change(build(ROWS)), tmp_path / "bad" / "GRAB.parquet")
    grab_env(path)
    cells = undecoded(load_benchmark(GRAB))["decoded_image"]

    for index, cell in enumerate(cells):
        if index != row:
            decode(cell)
    with pytest.raises(DataError) as caught:
        decode(dict(cells[row]))  # a copy: the request's cell is found by its bytes
    error = caught.value
    assert (error.origin, error.row, error.column, error.problem) == (str(path), row, column, problem), str(error)


@pytest.mark.parametrize("layout", ["parquet_file", "parquet_dir", "save_to_disk", "save_to_disk_dict"])
def test_an_empty_split_says_it_has_no_rows(layout: str, tmp_path: Path, grab_env) -> None:
    empty = build(ROWS).select([])
    if layout == "save_to_disk":
        path = tmp_path / "saved"
        empty.save_to_disk(str(path))
        grab_env(path)
    elif layout == "save_to_disk_dict":
        datasets.DatasetDict({"GRAB": empty, "other": build(ROWS)}).save_to_disk(str(tmp_path / "saved_dict"))
        path = tmp_path / "saved_dict" / "GRAB"
        grab_env(path.parent)
    else:
        path = _save_parquet(empty, tmp_path / "dir" / "GRAB.parquet")
        grab_env(path if layout == "parquet_file" else path.parent)

    _raises_at(GRAB, None, path, None, None, "has no rows (an empty split: nothing to evaluate)")
