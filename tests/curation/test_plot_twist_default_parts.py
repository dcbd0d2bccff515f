"""The default Plot Twist data is built in the part the requested tasks read: the base charts alone for
``plot_twist`` and its chart-type tasks (and the VLMEvalKit datasets of those names), the robustness variants only
when a robustness task or dataset reads them; the data record names the files read."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import datasets
import pytest
from PIL import Image

from curation.plot_twist import build, default
from scifig_tasks.benchmarks.plot_twist import source
from scifig_tasks.benchmarks.plot_twist.source import PLOT_TWIST, plot_twist_features, reads_variants
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.validation_records import data_digest
from tests.harness import warm_start
from tests.harness.lmms import offline_env
from tests.harness.paths import REPO

FULL = f"v{default.GENERATOR_VERSION}-seed{default.DEFAULT_SEED}"
BASE = f"{FULL}-base"


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (255, 255, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_set(folder: Path, variants: list[str]) -> Path:
    """A tiny set in the default set's layout: one bar question per variant (``base`` first)."""
    row = {
        "q_id": "f0_count_bars",
        "figure_id": "f0",
        "chart_type": "bar",
        "question_type": "count_bars",
        "question": "How many bars are in the figure?",
        "answer": "4",
        "x_range": 1.0,
        "y_range": 150.0,
        "image": {"bytes": png(), "path": None},
    }
    rows = [{**row, "q_id": f"{row['q_id']}_{variant}", "variant": variant} for variant in variants]
    folder.mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=plot_twist_features()).to_parquet(str(folder / "test.parquet"))
    return folder / "test.parquet"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A default-data cache holding both parts, already built; this process has read no variant yet."""
    root = tmp_path / "cache"
    write_set(root / BASE, ["base"])
    write_set(root / FULL, ["base", "grid"])
    monkeypatch.delenv("SCIFIG_PLOT_TWIST_DATA", raising=False)
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_CACHE", str(root))
    monkeypatch.setattr(source, "_VARIANTS_READ", [])
    return root


def test_which_readers_read_the_variants() -> None:
    base_readers = ["plot_twist", "plot_twist_scatter", "plot_twist_open", "plot_twist_open_pali_pie"]
    assert not any(reads_variants(name) for name in base_readers)
    others = ["plot_twist_robustness", "plot_twist_robustness_base", "plot_twist_robustness_open", "my_task", None]
    assert all(reads_variants(name) for name in others)


def test_a_base_chart_task_reads_the_base_part_until_the_variants_are_read(cache: Path) -> None:
    assert len(load_benchmark(PLOT_TWIST, reader="plot_twist_scatter")) == 1
    assert len(load_benchmark(PLOT_TWIST, reader="plot_twist_robustness_grid")) == 2
    assert len(load_benchmark(PLOT_TWIST, reader="plot_twist_bar")) == 2  # one set, one data record per process
    assert len(load_benchmark(PLOT_TWIST)) == 2  # no reader named: everything


def test_building_for_a_base_chart_task_renders_no_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[object] = []

    def recording(out: Path, **kwargs: object) -> None:
        asked.append(kwargs["variants"])
        write_set(out / "rows", ["base"]).rename(out / "test.parquet")

    monkeypatch.setattr(build, "build_plot_twist", recording)
    monkeypatch.delenv("SCIFIG_PLOT_TWIST_DATA", raising=False)
    monkeypatch.setenv("SCIFIG_PLOT_TWIST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(source, "_VARIANTS_READ", [])
    load_benchmark(PLOT_TWIST, reader="plot_twist")
    assert asked == [["none"]] and [p.name for p in (tmp_path / "cache").iterdir()] == [BASE]
    assert "building the base charts of the seeded synthetic set once" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.cli
def test_export_tsv_reads_the_part_each_dataset_reads(cache: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "export-tsv", "--data", "plot_twist"]
    completed = warm_start.run(
        [*command, "plot_twist_robustness", "--out", str(tmp_path / "tsv")],
        {**offline_env(tmp_path), "SCIFIG_PLOT_TWIST_CACHE": str(cache)},
        cwd=REPO,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "building" not in completed.stderr and sorted(p.name for p in cache.iterdir()) == [FULL, BASE]

    def read_from(name: str) -> dict:
        return json.loads((tmp_path / "tsv" / f"{name}.tsv.scifig.json").read_text())["data"]["plot_twist"]

    base, everything = read_from("plot_twist"), read_from("plot_twist_robustness")
    assert base["rows"] == {"test": 1} and base["revision"] == data_digest(cache / BASE / "test.parquet")
    assert everything["rows"] == {"test": 2} and everything["revision"] == data_digest(cache / FULL / "test.parquet")
