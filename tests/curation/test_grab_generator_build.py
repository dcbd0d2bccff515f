"""Building GRAB: byte-identical output whatever the number of workers, the published features plus metadata, a
dataset card, loadable with ``datasets`` and by the local-data contract, images per the rendering schema."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import datasets
import pytest
from PIL import Image

from curation.grab.build import FEATURES, build_grab
from curation.grab.plan import answer_of
from scifig_tasks.benchmarks.grab.multiple_choice import mc_options
from scifig_tasks.benchmarks.grab.source import GRAB, grab_features
from scifig_tasks.commands.main import main
from scifig_tasks.core.data import load_benchmark

DPI = 20
LIMIT = 12


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("grab-builds")
    one = build_grab(root / "one", limit=LIMIT, workers=1, dpi=DPI, mc=True, progress=False)
    two = build_grab(root / "two", limit=LIMIT, workers=2, dpi=DPI, mc=True, progress=False)
    assert one.rows == two.rows == LIMIT and one.mc_rows == two.mc_rows == LIMIT // 4
    return one.out, two.out


def test_one_and_two_workers_give_identical_bytes(builds: tuple[Path, Path]) -> None:
    one, two = builds
    assert sha256(one / "GRAB.parquet") == sha256(two / "GRAB.parquet")
    assert sha256(one / "properties_mc" / "GRAB.parquet") == sha256(two / "properties_mc" / "GRAB.parquet")
    assert (one / "README.md").read_text() == (two / "README.md").read_text()


def test_published_features_plus_metadata_and_a_card(builds: tuple[Path, Path]) -> None:
    out, _ = builds
    dataset = datasets.Dataset.from_parquet(str(out / "GRAB.parquet"))
    assert dataset.features == FEATURES
    assert {name: dataset.features[name] for name in grab_features()} == dict(grab_features())
    assert set(dataset.column_names) - set(grab_features()) == {"metadata"}
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "path: GRAB.parquet" in card and "config_name: properties_mc" in card
    assert "half away from zero" in card and f"--dpi {DPI}" in card


def test_loadable_with_datasets_and_as_scifig_grab_data(builds: tuple[Path, Path], monkeypatch) -> None:
    out, _ = builds
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    loaded = datasets.load_dataset(str(out), split="GRAB", cache_dir=str(out.parent / "hf-cache"))
    assert len(loaded) == LIMIT and isinstance(loaded[0]["decoded_image"], Image.Image)
    monkeypatch.setenv(GRAB.env_var, str(out))
    validated = load_benchmark(GRAB)  # every row checked by the local-data contract
    rows = validated["GRAB"] if isinstance(validated, datasets.DatasetDict) else validated
    assert len(rows) == LIMIT


def test_rows_are_auditable_and_images_follow_the_schema(builds: tuple[Path, Path]) -> None:
    out, _ = builds
    dataset = datasets.Dataset.from_parquet(str(out / "GRAB.parquet")).cast_column(
        "decoded_image", datasets.Image(decode=False)
    )
    for row in dataset:
        metadata = json.loads(row["metadata"])
        assert (
            metadata["seed"] == 0
            and answer_of(metadata["type"], metadata["precision"], metadata["params"])[1] == (row["answer"])
        )
        assert row["image"] == f"images/{row['pid']}.png"
        image = Image.open(io.BytesIO(row["decoded_image"]["bytes"]))
        assert image.format == "PNG" and image.mode == "RGBA" and "Software" not in image.info
        if row["task"] == "properties":
            width, height = metadata["params"]["style"]["figsize"]
            assert image.size == (round(width * DPI), round(height * DPI))
        else:
            assert metadata["params"]["style"] == "fixed" and image.size == (6 * DPI, 5 * DPI)


def test_mc_output_holds_the_options_the_task_builds(builds: tuple[Path, Path]) -> None:
    out, _ = builds
    mc = datasets.Dataset.from_parquet(str(out / "properties_mc" / "GRAB.parquet"))
    assert set(mc["task"]) == {"properties"} and len(mc) == LIMIT // 4
    for row in mc.select_columns(["pid", "question", "answer", "options", "mc_answer"]):
        options, letter = mc_options(row["answer"], row["question"], seed=row["pid"])
        assert row["options"] == options and row["mc_answer"] == letter
        assert options["ABCDE".index(letter)] == f"{letter}) {row['answer']}"


@pytest.mark.cli
def test_cli_builds_a_subset_of_the_selected_tasks(tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli"
    code = main(["curate", "grab", "--out", str(out), "--limit", "3", "--tasks", "transforms", "--dpi", str(DPI)])
    assert code == 0 and f"SCIFIG_GRAB_DATA={out}" in capsys.readouterr().out
    rows = datasets.Dataset.from_parquet(str(out / "GRAB.parquet"))
    assert rows["task"] == ["transform"] * 3 and not (out / "properties_mc").exists()
    (out / "other.parquet").write_bytes(b"")
    assert main(["curate", "grab", "--out", str(out), "--limit", "3", "--dpi", str(DPI)]) == 2
    assert "other.parquet" in capsys.readouterr().err
    assert not any(name.endswith(".partial") for name in os.listdir(out))
