"""Plot Twist data: the local-data contract, row validation naming file/row/column, the default set built once into a
cache (a killed build's leftovers cleared by the next), the ChartQA subset's required file, and files without a
``variant`` column."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from PIL import Image

from curation.plot_twist import default
from scifig_tasks.benchmarks.plot_twist.source import PLOT_TWIST, PLOT_TWIST_CHARTQA, plot_twist_features
from scifig_tasks.core.data import load_benchmark, registered_default_data
from scifig_tasks.core.errors import ConfigError, DataError
from tests.harness.paths import REPO


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 255, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


def rows() -> list[dict]:
    image = {"bytes": png(), "path": None}
    base = {"question": "How many bars are in the figure?", "image": image, "variant": "base"}
    return [
        {**base, "q_id": "b0_count", "figure_id": "b0", "chart_type": "bar", "question_type": "count_bars",
         "answer": "3", "x_range": 3.3, "y_range": 200.0},
        {**base, "q_id": "p0_count", "figure_id": "p0", "chart_type": "pie", "question_type": "count_categories",
         "answer": "4", "x_range": 2.5, "y_range": 2.5},
        {**base, "q_id": "s0_x", "figure_id": "s0", "chart_type": "scatter", "question_type": "x_max_point",
         "answer": "-7", "x_range": 50.0, "y_range": 20.0, "variant": "marker_x"},
    ]  # fmt: skip


def write(records: list[dict], path: Path, drop_variant: bool = False) -> Path:
    features = plot_twist_features()
    if drop_variant:
        records = [{k: v for k, v in r.items() if k != "variant"} for r in records]
        features = datasets.Features({k: v for k, v in features.items() if k != "variant"})
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(records, features=features).to_parquet(str(path))
    return path


def test_local_file_loads_and_a_file_without_variant_is_all_base(tmp_path: Path, monkeypatch) -> None:
    from scifig_tasks.benchmarks.plot_twist.tasks import utils

    monkeypatch.setenv("SCIFIG_PLOT_TWIST_DATA", str(write(rows(), tmp_path / "any.parquet")))
    assert load_benchmark(PLOT_TWIST)["variant"] == ["base", "base", "marker_x"]
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_DATA", str(write(rows()[:2], tmp_path / "plain.parquet", drop_variant=True)))
    loaded = load_benchmark(PLOT_TWIST)
    assert "variant" not in loaded.column_names
    assert utils.plot_twist_robustness_base_docs(loaded)["variant"] == ["base", "base"]
    assert utils.plot_twist_bar_docs(loaded)["q_id"] == ["b0_count"]
    with pytest.raises(ValueError, match="no rows with variant 'grid'"):
        utils.plot_twist_grid_docs(loaded)


BAD = {
    "question type of another chart": (1, "question_type", "count_bars", "is not a pie question type"),
    "unknown question type": (0, "question_type", "tallest_bar", "unknown value 'tallest_bar'"),
    "zero span": (2, "x_range", 0.0, "expected a finite number > 0"),
    "negative span": (0, "y_range", -3.0, "expected a finite number > 0"),
    "unknown variant": (1, "variant", "sepia", "unknown value 'sepia'"),
    "variant not for this chart type": (1, "variant", "marker_plus", "does not apply to pie charts"),
    "unknown chart type": (2, "chart_type", "line", "unknown value 'line'"),
    "empty answer": (0, "answer", " ", "expected a non-empty string"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_rows_name_file_row_and_column(case: str, tmp_path: Path, monkeypatch) -> None:
    row, column, value, problem = BAD[case]
    records = rows()
    records[row][column] = value
    path = write(records, tmp_path / "bad.parquet")
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_DATA", str(path))
    with pytest.raises(DataError) as error:
        load_benchmark(PLOT_TWIST)
    assert (error.value.origin, error.value.row, error.value.column) == (str(path), row, column)
    assert problem in str(error.value)


def test_chartqa_subset_needs_a_user_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SCIFIG_PLOT_TWIST_CHARTQA_DATA", raising=False)
    with pytest.raises(DataError, match="no published copy: set SCIFIG_PLOT_TWIST_CHARTQA_DATA"):
        load_benchmark(PLOT_TWIST_CHARTQA)
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_CHARTQA_DATA", str(write(rows()[:2], tmp_path / "chartqa.parquet")))
    assert len(load_benchmark(PLOT_TWIST_CHARTQA)) == 2


def test_default_set_is_built_once_into_the_cache(tmp_path: Path, monkeypatch, capsys) -> None:
    from curation.plot_twist import build

    builds: list[Path] = []

    original = build.build_plot_twist

    def counting(out: Path, **kwargs):
        builds.append(out)
        return original(out, progress=True, **kwargs)

    monkeypatch.setattr(build, "build_plot_twist", counting)
    monkeypatch.delenv("SCIFIG_PLOT_TWIST_DATA", raising=False)
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_CACHE", str(tmp_path / "cache"))

    def small_default() -> Path:
        return default.ensure_default_data(plots_per_type=1, variants=["grid"], workers=1)

    source = dataclasses.replace(PLOT_TWIST, default_data=small_default)
    first = load_benchmark(source)
    second = load_benchmark(source)
    assert len(builds) == 1 and len(first) == len(second) == 16 + 13
    err = capsys.readouterr().err
    assert "building the seeded synthetic set once" in err and "Plot Twist charts" in err  # message + progress bar
    cached = tmp_path / "cache" / "v2-seed0-plots1-variantsgrid" / "test.parquet"
    assert small_default() == cached and cached.is_file()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["v2-seed0-plots1-variantsgrid"]  # no staging left


def test_default_cache_location(monkeypatch) -> None:
    assert default.cache_root({"SCIFIG_PLOT_TWIST_CACHE": "/x/y"}) == Path("/x/y")
    assert default.cache_root({}) == Path("~/.cache/scifig/plot_twist").expanduser()
    assert PLOT_TWIST.default_data is not None and PLOT_TWIST.hub_path == ""


def test_the_core_finds_the_default_builder_by_name_among_the_entry_points() -> None:
    """The core imports nothing from curation: the builder is registered in pyproject's ``scifig.builders``."""
    (entry,) = importlib.metadata.entry_points(group="scifig.builders", name="plot_twist_default_data")
    assert entry.load() is default.ensure_default_data
    with pytest.raises(ConfigError, match="entry point 'no_such_set_default_data' of scifig.builders: not installed"):
        registered_default_data("no_such_set")


INTERRUPTED_BUILD = """
import sys, time
from pathlib import Path
from curation.plot_twist import build, default

add = build._add


def add_then_hang(*args):
    add(*args)
    print("first row written", flush=True)
    time.sleep(600)


build._add = add_then_hang
default.ensure_default_data(Path(sys.argv[1]), plots_per_type=1, variants=["grid"], workers=1)
"""


@pytest.mark.slow
def test_an_interrupted_default_build_leaves_nothing_the_next_run_trips_over(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    killed = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_BUILD, str(root)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert killed.stdout is not None and killed.stdout.readline() == "first row written\n"
    finally:
        killed.kill()  # SIGKILL mid-build: no clean-up runs
        killed.wait()
    (staged,) = root.iterdir()
    assert staged.name.startswith(".v2-seed0-plots1-variantsgrid.partial-")
    assert [p.name for p in staged.iterdir()] == ["test.parquet.partial"]
    target = root / "v2-seed0-plots1-variantsgrid"
    target.mkdir()  # a set folder without its parquet file (an older build's leftovers)
    (target / "README.md").write_text("unfinished", encoding="utf-8")
    live = root / f".v2-seed0-plots1-variantsgrid.partial-{socket.gethostname()}-{os.getpid()}-x"
    live.mkdir()  # a build still running (this process): kept

    data = default.ensure_default_data(root, plots_per_type=1, variants=["grid"], workers=1)

    assert data == target / "test.parquet"
    assert sorted(p.name for p in root.iterdir()) == sorted([live.name, target.name])
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "test.parquet"]
    assert "unfinished" not in (target / "README.md").read_text(encoding="utf-8")
    assert len(datasets.Dataset.from_parquet(str(data))) == 16 + 13


def test_a_folder_with_only_an_unfinished_build_says_so(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "test.parquet.partial").write_bytes(b"PAR1")
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_DATA", str(tmp_path))
    with pytest.raises(DataError) as error:
        load_benchmark(PLOT_TWIST)
    assert str(error.value) == (
        f"{tmp_path}: holds no <split>.parquet file (test.parquet.partial: an unfinished build, run it again); "
        "a directory of <split>.parquet files or a save_to_disk directory"
    )
