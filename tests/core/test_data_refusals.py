"""The rules behind refusing data that is not data, in process (the command lines are in
``test_data_refusals_cli.py``): non-finite gold answers, image files outside the data's folder (symlinks, ``..``,
Hub caches), image lists, every local layout; and non-finite model answers scored wrong."""

from __future__ import annotations

from pathlib import Path

import datasets
import huggingface_hub
import pyarrow.parquet as pq
import pytest

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.source import GRAB, grab_features
from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import undecoded
from scifig_tasks.core.schema import expect_answer
from tests.harness.grab_data import Row, png, records, write_records
from tests.harness.scifibench_data import FEATURES as SCIFIBENCH_FEATURES
from tests.harness.scifibench_data import Question
from tests.harness.scifibench_data import build as build_scifibench

ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5")]
NON_FINITE = "not a finite number (nan, inf and numbers beyond the float range, such as 1e309, cannot be answers)"


@pytest.fixture(autouse=True)
def private_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("SCIFIG_GRAB_DATA", raising=False)
    monkeypatch.delenv("SCIFIG_SCIFIBENCH_DATA", raising=False)


@pytest.mark.parametrize(
    ("answer", "number"),
    [("nan", "nan"), ("-NaN", "nan"), ("inf", "inf"), (" Infinity ", "inf"), ("-inf", "-inf"), ("1e309", "inf")],
)
def test_a_gold_answer_that_reads_as_a_non_finite_number_is_refused(answer: str, number: str) -> None:
    assert expect_answer()(answer) == f"{answer!r} reads as {number}, {NON_FINITE}"


@pytest.mark.parametrize("answer", ["3", "-2.5", "1e308", "[1, 4]", "y = 2x - 3", "Italy", "infinite", "0"])
def test_finite_numbers_and_text_answers_are_accepted(answer: str) -> None:
    assert expect_answer()(answer) is None


def test_expect_answer_keeps_the_string_rules() -> None:
    assert expect_answer()(" ") == "expected a non-empty string"
    assert expect_answer()(3) == "expected a string, got int 3"


@pytest.mark.parametrize("said", ["inf", "-inf", "1e309", "nan", "Infinity"])
@pytest.mark.parametrize(("gold", "margin"), [("1.75e308", 5e306), ("3", 5.0), ("1.75e308", None), ("-1.75e308", 1.0)])
def test_a_non_finite_plot_twist_answer_is_wrong_whatever_the_gold(said: str, gold: str, margin: float | None) -> None:
    assert plot_twist.score_answer(said, gold, margin) == plot_twist.WRONG


@pytest.mark.parametrize("gold", ["inf", "nan", "1e309"])
def test_no_answer_is_right_against_a_non_finite_plot_twist_gold(gold: str) -> None:
    for said in ("inf", gold, "1e309", "3"):
        assert plot_twist.score_answer(said, gold, 5.0) == plot_twist.WRONG


def test_a_finite_answer_near_the_float_limit_still_scores() -> None:
    assert plot_twist.score_answer("1.75e308", "1.75e308", 5e306) == plot_twist.Correctness(True, True, True)


@pytest.mark.parametrize("said", ["inf", "nan", "-inf", "Infinity", "NaN", "1e309"])
def test_a_non_finite_grab_output_never_matches_a_gold_the_data_accepts(said: str) -> None:
    for gold in ("3", "-3", "0.5", "10", "[1, 4]", "y = 1x + 2"):
        assert expect_answer()(gold) is None
        assert not grab.score_exact(said, gold).correct


def _grab_with_image(tmp_path: Path, image: dict) -> Path:
    rows = records(ROWS)
    rows[1]["decoded_image"] = image
    return write_records(rows, tmp_path / "data" / "GRAB.parquet")


def _refused(path: Path, source=GRAB, split: str | None = None, row: int = 1, column: str = "decoded_image") -> str:
    with pytest.raises(DataError) as caught:
        load_benchmark(source, split)
    error = caught.value
    assert (error.origin, error.row, error.column) == (str(path), row, column), str(error)
    return error.problem


def test_a_symlink_inside_the_folder_to_a_file_outside_is_refused(tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(png(7))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "figure.png").symlink_to(secret)
    path = _grab_with_image(tmp_path, {"bytes": None, "path": "figure.png"})
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    assert _refused(path) == (
        f"image path 'figure.png' resolves to {secret.resolve()}, outside the data's folder {path.parent}: image "
        "files are read only from there (store the image bytes in the cell, or move the file into the folder)"
    )


def test_a_relative_path_that_climbs_out_of_the_folder_is_refused(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "secret.png").write_bytes(png(7))
    path = _grab_with_image(tmp_path, {"bytes": None, "path": "../secret.png"})
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    assert _refused(path).startswith(f"image path '../secret.png' resolves to {(tmp_path / 'secret.png').resolve()}, ")


def test_a_missing_file_inside_the_folder_is_named(tmp_path: Path, monkeypatch) -> None:
    path = _grab_with_image(tmp_path, {"bytes": None, "path": "figures/none.png"})
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    assert (
        _refused(path) == f"image path 'figures/none.png': no such file {(path.parent / 'figures/none.png').resolve()}"
    )


def test_a_file_that_is_not_an_image_is_refused_when_read(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.png").write_text("not an image")
    path = _grab_with_image(tmp_path, {"bytes": None, "path": "notes.png"})
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(path))

    assert _refused(path).startswith("image bytes are not a readable image (UnidentifiedImageError: ")


@pytest.mark.parametrize("layout", ["parquet_dir", "save_to_disk", "save_to_disk_dict"])
def test_files_inside_the_folder_are_read_into_their_cells_in_every_layout(
    layout: str, tmp_path: Path, monkeypatch
) -> None:
    folder = tmp_path / "data"
    (folder / "figures").mkdir(parents=True)
    figure = folder / "figures" / "one.png"
    figure.write_bytes(png(11, (30, 20)))
    (folder / "link.png").symlink_to(figure)  # a symlink that stays inside is fine
    rows = records(ROWS)
    rows[1]["decoded_image"] = {"bytes": None, "path": "figures/one.png"}
    rows[2]["decoded_image"] = {"bytes": None, "path": "link.png"}
    dataset = datasets.Dataset.from_list(rows, features=grab_features())
    monkeypatch.chdir(folder)  # datasets' writers look for the files (to estimate sizes) from the working directory
    if layout == "parquet_dir":
        write_records(rows, folder / "GRAB.parquet")
    elif layout == "save_to_disk":
        dataset.save_to_disk(str(folder))
    else:
        datasets.DatasetDict({"GRAB": dataset}).save_to_disk(str(folder))
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(folder))
    monkeypatch.chdir(tmp_path)  # relative paths are relative to the data's folder, not to the working directory

    loaded = load_benchmark(GRAB)

    cells = undecoded(loaded)["decoded_image"]
    assert [cell["bytes"] for cell in cells[1:]] == [figure.read_bytes()] * 2
    assert cells[0]["bytes"] == png(0)
    assert isinstance(loaded.features["decoded_image"], datasets.Image) and loaded[1]["decoded_image"].size == (30, 20)


def test_an_image_list_cell_outside_the_folder_is_refused_and_one_inside_is_read(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "sfb"
    folder.mkdir()
    (folder / "option.png").write_bytes(png(5))
    (tmp_path / "elsewhere.png").write_bytes(png(6))
    rows = build_scifibench([Question("c2f", "A"), Question("c2f", "B")]).to_list()
    rows = datasets.Dataset.from_list(rows, features=SCIFIBENCH_FEATURES)
    raw = rows.cast_column("Images", datasets.List(datasets.Image(decode=False))).to_list()
    raw[1]["Images"][3] = {"bytes": None, "path": str(tmp_path / "elsewhere.png")}
    path = folder / "CS_Caption2Figure.parquet"
    datasets.Dataset.from_list(raw, features=SCIFIBENCH_FEATURES).to_parquet(str(path))
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(folder))

    problem = _refused(path, SCIFIBENCH, "CS_Caption2Figure", 1, "Images")
    assert problem.startswith(f"image 3: image path {str(tmp_path / 'elsewhere.png')!r} resolves to ")

    raw[1]["Images"][3] = {"bytes": None, "path": "option.png"}
    pq.write_table(datasets.Dataset.from_list(raw, features=SCIFIBENCH_FEATURES).data.table, str(path))
    images = undecoded(load_benchmark(SCIFIBENCH, "CS_Caption2Figure"))[1]["Images"]
    assert images[3]["bytes"] == png(5) and all(image["bytes"] for image in images)


def test_a_hub_dataset_reads_files_only_inside_its_directory_and_the_caches(tmp_path: Path) -> None:
    """``load_dataset`` of a local directory (what a Hub id resolves to once downloaded): cells naming files inside
    it are read; a file elsewhere is refused, naming the folders allowed."""
    repo = tmp_path / "repo"
    (repo / "figures").mkdir(parents=True)
    (repo / "figures" / "one.png").write_bytes(png(21))
    (tmp_path / "elsewhere.png").write_bytes(png(22))
    rows = records(ROWS)
    rows[1]["decoded_image"] = {"bytes": None, "path": str(repo / "figures" / "one.png")}
    write_records(rows, repo / "data" / "GRAB-00000-of-00001.parquet")

    loaded = load_benchmark(GRAB, hub_path=str(repo))
    assert undecoded(loaded)[1]["decoded_image"]["bytes"] == png(21)

    rows[1]["decoded_image"] = {"bytes": None, "path": str(tmp_path / "elsewhere.png")}
    write_records(rows, repo / "data" / "GRAB-00000-of-00001.parquet")
    with pytest.raises(DataError) as caught:
        load_benchmark(GRAB, hub_path=str(repo))
    assert (caught.value.origin, caught.value.row, caught.value.column) == (f"{repo}[GRAB]", 1, "decoded_image")
    caches = f"{datasets.config.HF_DATASETS_CACHE}, {huggingface_hub.constants.HF_HUB_CACHE}"
    assert f"outside the data's folders {repo}, {caches}: " in caught.value.problem
