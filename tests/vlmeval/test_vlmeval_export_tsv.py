"""``scifig export-tsv`` and the VLMEvalKit dataset classes reading its files: the TSV columns, exact text cells,
base64 images that decode to the stored pixels (transparent images composited on white), multi-image rows as lists,
registration in VLMEvalKit and re-export when the source data changes."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from PIL import Image

from scifig_tasks.benchmarks.plot_twist.source import plot_twist_features
from tests.harness.bad_images import broken_stream
from tests.harness.grab_data import ONE_DP, Row, records, write_parquet, write_records
from tests.harness.lmms import offline_env
from tests.harness.paths import REPO
from tests.harness.scifibench_data import Question, build, write_splits

GRAB_ROWS = [Row("properties", "15"), Row("function", "2.50", precision_sentence=ONE_DP), Row("series", "007")]


def rgba_png() -> bytes:
    image = Image.new("RGBA", (8, 6), (255, 0, 0, 255))
    image.putpixel((0, 0), (0, 0, 0, 0))  # transparent black: white once composited
    image.putpixel((1, 0), (0, 0, 255, 128))  # half-transparent blue
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def plot_twist_parquet(path: Path) -> Path:
    row = {
        "q_id": "pt0",
        "figure_id": "f0",
        "chart_type": "bar",
        "question_type": "count_bars",
        "question": "How many bars are in the figure?",
        "answer": "4",
        "x_range": 0.1 + 0.2,
        "y_range": 150.0,
        "image": {"bytes": rgba_png(), "path": None},
        "variant": "base",
    }
    other = {**row, "q_id": "pt1", "variant": "grid"}  # a robustness variant: not in plot_twist
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list([row, other], features=plot_twist_features()).to_parquet(str(path))
    return path


def data_env(tmp_path: Path) -> dict[str, str]:
    scifibench = {
        "CS_Figure2Caption": build([Question("f2c", "B"), Question("f2c", "E")]),
        "CS_Caption2Figure": build([Question("c2f", "C")], first_id=7),
    }
    return {
        "SCIFIG_GRAB_DATA": str(write_parquet(GRAB_ROWS, tmp_path / "grab" / "GRAB.parquet")),
        "SCIFIG_SCIFIBENCH_DATA": str(write_splits(scifibench, tmp_path / "scifibench")),
        "SCIFIG_PLOT_TWIST_DATA": str(plot_twist_parquet(tmp_path / "pt" / "test.parquet")),
    }


NAMES = [
    "grab",
    "scifibench_cs_figure2caption",
    "scifibench_cs_caption2figure",
    "plot_twist",
]


def export(tmp_path: Path, env: dict[str, str], names: list[str]) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "scifig_tasks.commands.main",
        "export-tsv",
        "--data",
        *names,
        "--out",
        str(tmp_path / "tsv"),
    ]
    return subprocess.run(command, env={**offline_env(tmp_path), **env}, capture_output=True, text=True, timeout=300)


def first_pixels(data: bytes, count: int = 3) -> list[tuple[int, int, int]]:
    image = Image.open(io.BytesIO(data)).convert("RGB")
    return [image.getpixel((x, 0)) for x in range(count)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp_path = tmp_path_factory.mktemp("export")
    env = data_env(tmp_path)
    completed = export(tmp_path, env, NAMES)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "grab: 3 rows" in completed.stdout and "plot_twist: 1 rows" in completed.stdout
    return tmp_path / "tsv", env


def read(folder: Path, name: str):
    from scifig_tasks.vlmeval.tsv import read_tsv

    return read_tsv(folder / f"{name}.tsv")


@pytest.mark.slow
@pytest.mark.cli
def test_grab_tsv_columns_exact_text_and_same_image_bytes(exported) -> None:
    folder, env = exported
    table = read(folder, "grab")
    assert list(table.columns) == [
        "index",
        "image",
        "image_path",
        "question",
        "answer",
        "pid",
        "task",
        "category",
        "complexity",
        "source_image",
    ]
    assert list(table["index"]) == ["0", "1", "2"]
    assert list(table["answer"]) == ["15", "2.50", "007"]  # text kept exactly (pandas would read 2.5 and 7)
    source = datasets.Dataset.from_parquet(env["SCIFIG_GRAB_DATA"]).cast_column(
        "decoded_image", datasets.Image(decode=False)
    )
    for row, stored in zip(table.itertuples(), source, strict=True):
        assert base64.b64decode(row.image) == stored["decoded_image"]["bytes"]  # opaque PNG: the stored bytes
        assert row.image_path.startswith(f"{row.index}_0_") and row.image_path.endswith(".png")
        assert row.question == stored["question"] and row.source_image == stored["image"]


@pytest.mark.slow
@pytest.mark.cli
def test_scifibench_tsv_has_options_and_multi_image_lists(exported) -> None:
    folder, env = exported
    f2c = read(folder, "scifibench_cs_figure2caption")
    assert list(f2c.columns) == [
        "index", "image", "image_path", "question", "A", "B", "C", "D", "E", "answer", "category", "ID", "options"
    ]  # fmt: skip
    source = datasets.Dataset.from_parquet(str(Path(env["SCIFIG_SCIFIBENCH_DATA"]) / "CS_Figure2Caption.parquet"))
    first = f2c.iloc[0]
    assert json.loads(first["options"]) == source[0]["Options"]
    assert first["B"] == source[0]["Options"][1][3:].strip()  # label removed (two spaces after "B)")
    assert list(f2c["answer"]) == ["B", "E"]

    c2f = read(folder, "scifibench_cs_caption2figure")
    row = c2f.iloc[0]
    images, names = json.loads(row["image"]), json.loads(row["image_path"])
    assert len(images) == len(names) == 5 and len(set(names)) == 5
    stored = datasets.Dataset.from_parquet(str(Path(env["SCIFIG_SCIFIBENCH_DATA"]) / "CS_Caption2Figure.parquet"))
    stored = stored.cast_column("Images", datasets.List(datasets.Image(decode=False)))[0]["Images"]
    assert [base64.b64decode(image) for image in images] == [cell["bytes"] for cell in stored]
    assert row["ID"] == "7"


@pytest.mark.slow
@pytest.mark.cli
def test_transparent_images_are_composited_on_white_and_variants_filtered(exported) -> None:
    folder, _ = exported
    table = read(folder, "plot_twist")
    assert list(table["q_id"]) == ["pt0"]  # the grid variant is not part of plot_twist
    assert table.iloc[0]["x_range"] == repr(0.1 + 0.2)  # float written so it reads back exactly
    decoded = first_pixels(base64.b64decode(table.iloc[0]["image"]))
    assert decoded[0] == (255, 255, 255)  # transparent black -> white (VLMEvalKit alone would give black)
    assert all(abs(value - expected) <= 1 for value, expected in zip(decoded[1], (127, 127, 255), strict=True))
    assert decoded[2] == (255, 0, 0)


@pytest.mark.slow
@pytest.mark.cli
def test_bad_data_stops_export_naming_file_row_and_column(tmp_path: Path) -> None:
    bad = write_parquet([Row("properties", "1"), Row("spline", "2")], tmp_path / "bad" / "GRAB.parquet")
    completed = export(tmp_path, {"SCIFIG_GRAB_DATA": str(bad)}, ["grab"])
    assert completed.returncode != 0
    assert f"{bad}, row 1 (0-based), column 'task': unknown value 'spline'" in completed.stderr


@pytest.mark.slow
@pytest.mark.cli
def test_broken_pixel_data_stops_export_naming_file_row_and_column(tmp_path: Path) -> None:
    """The TSV is what VLMEvalKit builds requests from, so its images are decoded, strictly, when written."""
    rows = records(GRAB_ROWS)
    rows[1]["decoded_image"] = {"bytes": broken_stream(rows[1]["decoded_image"]["bytes"]), "path": None}
    bad = write_records(rows, tmp_path / "bad" / "GRAB.parquet")
    completed = export(tmp_path, {"SCIFIG_GRAB_DATA": str(bad)}, ["grab"])
    assert completed.returncode != 0
    expected = "row 1 (0-based), column 'decoded_image': image bytes are not a readable image (OSError: broken data"
    assert f"{bad}, {expected}" in completed.stderr, completed.stderr[-3000:]
    assert not (tmp_path / "tsv" / "grab.tsv").exists()


REGISTERED = """
import json, sys
from pathlib import Path
import vlmeval.dataset
from scifig_tasks.vlmeval import register
from tests.harness.grab_data import Row, write_parquet

names = register()
report = {"names": names, "again": register(), "count": vlmeval.dataset.SUPPORTED_DATASETS.count("grab")}
dataset = vlmeval.dataset.build_dataset("scifibench_cs_caption2figure")
report["class"] = type(dataset).__name__
report["forced"] = dataset.force_use_dataset_prompt
message = dataset.build_prompt(dataset.data.iloc[0])
report["types"] = [part["type"] for part in message]
report["labels"] = [part["value"] for part in message[0:10:2]]
report["files"] = [Path(part["value"]).read_bytes().hex() for part in message[1:10:2]]
report["answers"] = list(vlmeval.dataset.build_dataset("grab").data["answer"])
write_parquet([Row("properties", "99")], Path(sys.argv[1]))  # the data changes
report["answers_after"] = list(vlmeval.dataset.build_dataset("grab").data["answer"])
print("REPORT " + json.dumps(report))
"""


@pytest.mark.slow
def test_registered_classes_read_the_tsv_and_reexport_when_data_changes(tmp_path: Path) -> None:
    """register() in VLMEvalKit (in a subprocess: importing VLMEvalKit changes process-wide settings), build through
    its build_dataset: interleaved prompt files hold the stored bytes; rewriting the source data rewrites the TSV."""
    env = data_env(tmp_path)
    (tmp_path / "lmu").mkdir()
    child_env = {**offline_env(tmp_path), **env, "LMUData": str(tmp_path / "lmu")}
    command = [sys.executable, "-c", REGISTERED, env["SCIFIG_GRAB_DATA"]]
    completed = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("REPORT ")]
    report = json.loads(line.removeprefix("REPORT "))

    assert report["again"] == report["names"] and report["count"] == 1  # registered once
    assert all(not any(bad in name for bad in ("MMSci", "MMBench", "ChartQA", "MMMU")) for name in report["names"])
    assert report["class"] == "SciFigSciFIBench" and report["forced"] is True
    assert report["types"] == ["text", "image"] * 5 + ["text"]
    assert report["labels"] == ["A) ", "\nB) ", "\nC) ", "\nD) ", "\nE) "]
    stored = datasets.Dataset.from_parquet(str(Path(env["SCIFIG_SCIFIBENCH_DATA"]) / "CS_Caption2Figure.parquet"))
    stored = stored.cast_column("Images", datasets.List(datasets.Image(decode=False)))[0]["Images"]
    assert [bytes.fromhex(data) for data in report["files"]] == [cell["bytes"] for cell in stored]
    assert report["answers"] == ["15", "2.50", "007"]
    assert report["answers_after"] == ["99"]


@pytest.mark.slow
@pytest.mark.cli
def test_a_carriage_return_in_a_text_cell_stays_inside_its_row(tmp_path: Path) -> None:
    """Published text can hold a bare carriage return ("$\\rightarrow$" read from JSON as CR + "ightarrow"): the
    TSV quotes it, so VLMEvalKit's reader (pandas, tab separated) sees one row per question and the exact text."""
    import pandas as pd

    from tests.harness.scifibench_data import FEATURES, png

    options = ["A) 2 Ag \rightarrow Zn", "B) two\r\nlines", "C) c", "D) d", "E) e"]
    rows = [
        {
            "ID": index,
            "Question": "Which caption best matches the image?",
            "Options": options,
            "Answer": "A",
            "Category": "cs.CV",
            "Images": [{"bytes": png((index, 0, 0)), "path": None}],
        }
        for index in range(3)
    ]
    data = write_splits({"CS_Figure2Caption": datasets.Dataset.from_list(rows, features=FEATURES)}, tmp_path / "sfb")
    completed = export(tmp_path, {"SCIFIG_SCIFIBENCH_DATA": str(data)}, ["scifibench_cs_figure2caption"])
    assert completed.returncode == 0, completed.stderr[-3000:]
    table = pd.read_csv(tmp_path / "tsv" / "scifibench_cs_figure2caption.tsv", sep="\t")
    assert list(table["index"]) == [0, 1, 2]
    assert list(table["A"]) == ["2 Ag \rightarrow Zn"] * 3 and list(table["B"]) == ["two\r\nlines"] * 3


@pytest.mark.slow
@pytest.mark.cli
def test_missing_data_says_what_to_set_in_one_line(tmp_path: Path) -> None:
    """Not ``scifig demo`` (it writes no VLMEvalKit data): the variable to set, the command that builds the data, and
    this command again."""
    completed = export(tmp_path, {"SCIFIG_GRAB_DATA": str(tmp_path / "nowhere")}, ["grab"])
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == [
        f"scifig export-tsv: FAILED: grab: {tmp_path / 'nowhere'}: does not exist (GRAB data); set "
        "SCIFIG_GRAB_DATA=DIR to local data (`scifig curate grab --out DIR` builds it), then run "
        "`scifig export-tsv --data grab` again"
    ]


@pytest.mark.slow
@pytest.mark.cli
def test_old_names_and_groups_export_under_todays_names(tmp_path: Path) -> None:
    env = data_env(tmp_path)
    completed = export(tmp_path, env, ["SciFig_GRAB", "scifibench_cs"])
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [line for line in completed.stderr.splitlines() if "deprecated" in line]
    assert lines == ["scifig: VLMEvalKit dataset SciFig_GRAB is deprecated and goes in 0.3.0 — use grab"]
    assert sorted(path.name for path in (tmp_path / "tsv").glob("*.tsv")) == [
        "grab.tsv",
        "scifibench_cs_caption2figure.tsv",
        "scifibench_cs_figure2caption.tsv",
    ]
