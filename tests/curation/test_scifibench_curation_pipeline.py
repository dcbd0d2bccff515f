"""SciFIBench curation end to end with the tiny open_clip model scifig ships (a config, no weights: random ones):
a SciCap-layout release converted, a CS and a General corpus curated, the gold split accepted, the output validated
against the published schema and scored through the real ``lmms-eval`` CLI; reruns, resumable and multi-process
embedding, and loud errors for bad input."""

from __future__ import annotations

import io
import json
import random
import shutil
import socket
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from curation.scifibench.cli import main
from curation.scifibench.embed import ClipSpec, ProcessLayout, embed_pairs
from curation.scifibench.gold import accept
from curation.scifibench.pairs import read_pairs
from curation.scifibench.questions import TASKS
from scifig_tasks.benchmarks.scifibench.source import SCIFIBENCH
from scifig_tasks.core.clip_baseline import TINY_MODEL, tiny_config
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError

MODEL = TINY_MODEL
WORDS = [
    "loss",
    "accuracy",
    "epoch",
    "snr",
    "ber",
    "latency",
    "throughput",
    "network",
    "graph",
    "model",
    "training",
    "curve",
    "error",
    "rate",
    "node",
]
CS_PRIMARIES = (
    ["cs.CV"] * 7 + ["cs.LG"] * 6 + ["cs.CL"] * 5 + ["cs.AI"] * 4 + ["cs.RO"] * 4 + ["cs.NI"] * 4 + ["cs.CR"] * 4
    + ["cs.DC"] * 3 + ["cs.SE"] * 3 + ["cs.SY"] * 3 + ["cs.DB"] * 2 + ["cs.HC"] + ["stat.ML"] * 3 + ["eess.IV"] * 2
)  # fmt: skip
GENERAL_PRIMARIES = (
    ["hep-th"] * 6 + ["astro-ph.CO"] * 5 + ["math.AP"] * 5 + ["q-bio.NC"] * 4 + ["physics.optics"] * 4 + ["eess.SP"] * 4
)  # fmt: skip
CS_SIZES = ["--gold-size", "4", "--silver-size", "12"]
GENERAL_SIZES = ["--gold-size", "3", "--silver-size", "6", "--domain", "General"]


def png(seed: int) -> bytes:
    pixels = (np.random.default_rng(seed).random((8, 8, 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    Image.fromarray(pixels).resize((32, 32), Image.NEAREST).save(buffer, format="PNG")
    return buffer.getvalue()


def caption(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(7))


def write_scicap(root: Path) -> dict[str, Any]:
    """A miniature SciCap release: per-figure caption JSONs, images by sub-figure flag, arXiv metadata lines."""
    captions = root / "SciCap-Caption-All" / "Train"
    plain, subfig = root / "SciCap-No-Subfig-Img" / "Train", root / "SciCap-Yes-Subfig-Img" / "train"
    for folder in (captions, plain, subfig):
        folder.mkdir(parents=True)
    metadata = [{"id": "0704.0001", "categories": "hep-ph"}]
    records = []
    for i, primary in enumerate(CS_PRIMARIES):
        paper = f"2101.{i:05d}"
        cross = ["cs.LG"] if not primary.startswith("cs.") else []
        metadata.append({"id": paper, "categories": " ".join([primary, *cross]), "title": f"paper {i}"})
        records.append((f"{paper}v1", f"{paper}v1-Figure1-1.png", caption(i), False, png(i)))
    records.append(("2101.00000v2", "2101.00000v2-Figure2-1.png", caption(0), False, png(1000)))  # same caption
    records.append(("2101.00001v1", "2101.00001v1-Figure3-1.png", caption(2000), False, png(1)))  # same image
    records.append(("2101.00002v1", "2101.00002v1-Figure4-1.png", caption(3000), True, png(3000)))  # sub-figures
    records.append(("2201.99999v1", "2201.99999v1-Figure1-1.png", caption(4000), False, png(4000)))  # no metadata
    for paper, figure, text, flag, image in records:
        record = {
            "contains-subfigure": flag,
            "paper-ID": paper,
            "figure-ID": figure,
            "figure-type": "Graph Plot",
            "0-originally-extracted": f"Figure 1: {text.capitalize()}.",
            "1-lowercase-and-token-and-remove-figure-index": {"caption": f"{text} .", "sentence": [], "token": []},
        }
        (captions / f"{figure}.json").write_text(json.dumps(record))
        ((subfig if flag else plain) / figure).write_bytes(image)
    (root / "arxiv-metadata-oai-snapshot.json").write_text("\n".join(json.dumps(line) for line in metadata) + "\n")
    return {"records": records}


def write_general(directory: Path) -> Path:
    """A General corpus as a DatasetDict on disk, categories as arXiv's space-separated strings."""
    rows = [
        {
            "image": {"bytes": png(500 + i), "path": None},
            "caption": f"Fig. {i + 1}: " + caption(500 + i).upper() + ".",
            "paper_id": f"gen{i}",
            "categories": f"{primary} physics.data-an",
        }
        for i, primary in enumerate(GENERAL_PRIMARIES)
    ]
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "caption": datasets.Value("string"),
            "paper_id": datasets.Value("string"),
            "categories": datasets.Value("string"),
        }
    )
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows, features=features)}).save_to_disk(str(directory))
    return directory


def model_args(config: Path) -> list[str]:
    return ["--model", MODEL, "--model-config", str(config), "--pretrained", "none", "--device", "cpu"]


def curate_args(pairs: Path | str, out: Path, config: Path, *extra: str) -> list[str]:
    args = ["scifibench", "--pairs", str(pairs), "--out", str(out), *model_args(config)]
    return [*args, "--k", "8", "--batch-size", "8", "--shard-size", "16", *extra]


@dataclass
class Curated:
    root: Path
    config: Path
    scicap_pairs: Path
    general_pairs: Path
    cs: Path
    general: Path
    accepted: dict[str, list[int]]


def read(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Curated:
    root = tmp_path_factory.mktemp("scifibench-curation")
    config = tiny_config()  # the shipped configuration, as --pretrained tiny registers it
    write_scicap(root / "scicap")
    scicap_pairs = root / "scicap-train.parquet"
    assert main(["scifibench-from-scicap", "--root", str(root / "scicap"), "--out", str(scicap_pairs)]) == 0
    general_pairs = write_general(root / "general-pairs")
    cs, general = root / "cs", root / "general"
    assert main(curate_args(scicap_pairs, cs, config, *CS_SIZES)) == 0
    assert main(curate_args(general_pairs, general, config, *GENERAL_SIZES)) == 0
    accepted: dict[str, list[int]] = {}
    # the verifier accepts every Figure2Caption candidate and all but the two hardest Caption2Figure ones
    lines = ["# verified by hand", ""]
    for task in TASKS:
        ids = [row["ID"] for row in read(cs / "gold_candidates" / f"CS_{task}.parquet")]
        accepted[task] = ids if task == "Figure2Caption" else ids[2:]
        lines += [f"{task} {question}" for question in accepted[task]]
    (root / "accepted.txt").write_text("\n".join(lines) + "\n")
    assert main(["scifibench-accept", "--out", str(cs), "--accepted", str(root / "accepted.txt")]) == 0
    general_ids = [row["ID"] for row in read(general / "gold_candidates" / "General_Figure2Caption.parquet")]
    (root / "general-accepted.txt").write_text("".join(f"f2c {q}\nGeneral_Caption2Figure {q}\n" for q in general_ids))
    assert main(["scifibench-accept", "--out", str(general), "--accepted", str(root / "general-accepted.txt")]) == 0
    return Curated(root, config, scicap_pairs, general_pairs, cs, general, accepted)


# --- input -----------------------------------------------------------------------------------------------------------


@pytest.mark.cli
def test_scicap_release_converts_to_the_input_schema(curated: Curated) -> None:
    rows = read(curated.scicap_pairs)
    assert len(rows) == len(CS_PRIMARIES) + 2  # + the duplicate caption and image; sub-figure and orphan skipped
    first = rows[0]
    assert first["figure_id"] == "2101.00000v1-Figure1-1.png" and first["paper_id"] == "2101.00000"
    assert first["caption"] == f"{caption(0)} ." and first["has_subfigures"] is False
    assert first["image"]["bytes"] == png(0)
    by_paper = {row["paper_id"]: row["categories"] for row in rows}
    assert by_paper["2101.00046"] == ["stat.ML", "cs.LG"]  # primary first, then the cross-list
    pairs = read_pairs(str(curated.scicap_pairs))
    assert len(pairs) == len(CS_PRIMARIES)
    assert pairs.dropped == {"has_subfigures": 0, "empty_caption": 0, "duplicate_caption": 1, "duplicate_image": 1}


@pytest.mark.cli
def test_bad_pairs_stop_with_file_row_and_column(curated: Curated, tmp_path: Path, capsys) -> None:
    rows = read(curated.scicap_pairs)[:6]

    def write(name: str, table: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"{name}.parquet"
        datasets.Dataset.from_list(table).to_parquet(str(path))
        return path

    missing = write("missing", [{k: v for k, v in row.items() if k != "categories"} for row in rows])
    with pytest.raises(DataError, match=r"missing\.parquet, column 'categories': missing column"):
        read_pairs(str(missing))
    bad_categories = write(
        "categories", [dict(row, categories=[] if i == 2 else row["categories"]) for i, row in enumerate(rows)]
    )
    with pytest.raises(DataError, match=r"categories\.parquet, row 2 \(0-based\), column 'categories'"):
        read_pairs(str(bad_categories))
    broken = [dict(row) for row in rows]
    broken[4]["image"] = {"bytes": b"not an image", "path": None}
    with pytest.raises(DataError, match=r"image\.parquet, row 4 \(0-based\), column 'image': image bytes are not"):
        read_pairs(str(write("image", broken)))
    repeated = [dict(row) for row in rows]
    repeated[3]["figure_id"] = repeated[1]["figure_id"]
    with pytest.raises(DataError, match=r"row 3 \(0-based\), column 'figure_id': .* repeats row 1"):
        read_pairs(str(write("repeated", repeated)))
    assert main(curate_args(missing, tmp_path / "out", curated.config)) == 2
    assert "missing.parquet, column 'categories'" in capsys.readouterr().err


# --- outputs ---------------------------------------------------------------------------------------------------------


def tier_files(out: Path) -> dict[str, list[Path]]:
    return {tier.name: sorted(tier.glob("*.parquet")) for tier in sorted(out.iterdir()) if tier.is_dir()}


def test_every_tier_has_the_published_schema_and_consistent_questions(curated: Curated, monkeypatch) -> None:
    pairs = read_pairs(str(curated.scicap_pairs))
    caption_of = dict(zip(pairs.figure_ids, pairs.captions, strict=True))
    image_of = dict(zip(pairs.figure_ids, pairs.image_bytes(list(range(len(pairs)))), strict=True))
    files = tier_files(curated.cs)
    for tier in ("gold", "gold_random_negatives", "gold_candidates", "silver", "bronze", "random_negatives"):
        assert [path.name for path in files[tier]] == ["CS_Caption2Figure.parquet", "CS_Figure2Caption.parquet"]
        monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(curated.cs / tier))
        for task in TASKS:
            loaded = load_benchmark(SCIFIBENCH, f"CS_{task}")  # the package's own validation of the schema
            assert loaded.column_names[:6] == ["ID", "Question", "Options", "Answer", "Category", "Images"]
            for row in read(curated.cs / tier / f"CS_{task}.parquet"):
                truth = row["source_figure_id"]
                assert row["option_figure_ids"]["ABCDE".index(row["Answer"])] == truth
                assert len(set(row["option_figure_ids"])) == 5
                assert row["negatives"] == ("random" if "random" in tier else "nearest")
                assert row["tier"] == tier.removesuffix("_random_negatives") or tier == "random_negatives"
                if task == "Figure2Caption":
                    assert row["Question"] == "Which caption best matches the image?"
                    assert [image["bytes"] for image in row["Images"]] == [image_of[truth]]
                    assert row["Options"] == [
                        f"{letter}) {caption_of[figure]}"
                        for letter, figure in zip("ABCDE", row["option_figure_ids"], strict=True)
                    ]
                else:
                    assert row["Question"] == f"Caption: {caption_of[truth]} Which image best matches the caption?"
                    assert row["Options"] == ["A) image0", "B) image1", "C) image2", "D) image3", "E) image4"]
                    assert [image["bytes"] for image in row["Images"]] == [
                        image_of[f] for f in row["option_figure_ids"]
                    ]


def test_tiers_partition_the_questions_hardest_first(curated: Curated) -> None:
    summary = json.loads((curated.cs / "curation.json").read_text())
    built = summary["questions"]["built"]
    assert summary["corpus"]["pairs"] == len(CS_PRIMARIES) == built + summary["questions"]["short"]
    for task in TASKS:
        tiers = {t: read(curated.cs / t / f"CS_{task}.parquet") for t in ("gold_candidates", "silver", "bronze")}
        assert [len(rows) for rows in tiers.values()] == [8, 12, built - 20]
        ids = [row["ID"] for rows in tiers.values() for row in rows]
        assert len(ids) == len(set(ids)) == built
        pool, rest = tiers["gold_candidates"], tiers["silver"] + tiers["bronze"]
        assert [r["difficulty"] for r in rest] == sorted(r["difficulty"] for r in rest)
        assert [r["difficulty"] for r in pool] == sorted(r["difficulty"] for r in pool)
        pool_counts = Counter(row["Category"] for row in pool)
        assert max(pool_counts.values()) == 1  # 8 places, 12 categories: at most one each
        for row in pool:  # each candidate is the hardest question of its category
            same = [r["difficulty"] for r in rest if r["Category"] == row["Category"]]
            assert all(row["difficulty"] <= d for d in same)
        variants = read(curated.cs / "random_negatives" / f"CS_{task}.parquet")
        assert sorted(row["ID"] for row in variants) == sorted(ids)
        assert Counter(row["tier"] for row in variants) == {"gold_candidates": 8, "silver": 12, "bronze": built - 20}
    categories = set(summary["tiers"]["gold_candidates"]["categories"]["Figure2Caption"])
    all_categories = {row["Category"] for row in read(curated.cs / "random_negatives" / "CS_Figure2Caption.parquet")}
    assert {"cross-list", "other cs", "cs.CV"} <= all_categories and len(all_categories) <= 12
    assert categories <= all_categories
    assert summary["categories"]["top"][:2] == ["cs.CV", "cs.LG"]


def test_gold_holds_the_hardest_accepted_candidates_balanced(curated: Curated) -> None:
    for task in TASKS:
        pool = read(curated.cs / "gold_candidates" / f"CS_{task}.parquet")
        gold = read(curated.cs / "gold" / f"CS_{task}.parquet")
        accepted = [row for row in pool if row["ID"] in set(curated.accepted[task])]
        assert [row["ID"] for row in gold] == [row["ID"] for row in accepted[:4]]  # one per category, hardest first
        assert {row["tier"] for row in gold} == {"gold"}
        assert [{k: v for k, v in row.items() if k != "tier"} for row in gold] == [
            {k: v for k, v in row.items() if k != "tier"} for row in accepted[:4]
        ]
        variants = read(curated.cs / "gold_random_negatives" / f"CS_{task}.parquet")
        assert [row["ID"] for row in variants] == [row["ID"] for row in gold]
        assert all(row["negatives"] == "random" for row in variants)
    summary = json.loads((curated.cs / "curation.json").read_text())
    assert summary["tiers"]["gold"]["accepted"] == {"Figure2Caption": 8, "Caption2Figure": 6}
    card = (curated.cs / "README.md").read_text()
    assert (
        "- config_name: gold\n  data_files:\n  - split: CS_Caption2Figure\n    path: gold/CS_Caption2Figure.parquet"
        in card
    )
    assert "Gold: Figure2Caption 4 of 8 accepted, Caption2Figure 4 of 6 accepted" in card


@pytest.mark.cli
def test_accept_rejects_ids_that_are_not_candidates(curated: Curated, tmp_path: Path, capsys) -> None:
    out = tmp_path / "copy"
    shutil.copytree(curated.cs, out, ignore=shutil.ignore_patterns("cache"))
    bronze_id = read(out / "bronze" / "CS_Figure2Caption.parquet")[0]["ID"]
    pool_id = read(out / "gold_candidates" / "CS_Figure2Caption.parquet")[0]["ID"]
    cases = {
        f"Figure2Caption {pool_id}\nFigure2Caption {bronze_id}\n": f"line 2: ID {bronze_id} is not a Figure2Caption",
        "Figure2Caption x\n": "line 1: ID 'x' is not an integer",
        f"Figure2Captions {pool_id}\n": "line 1: unknown task 'Figure2Captions'",
        "Figure2Caption\n": "line 1: expected '<task> <ID>'",
    }
    for text, message in cases.items():
        (tmp_path / "accepted.txt").write_text(text)
        with pytest.raises(DataError, match=message):
            accept(out, tmp_path / "accepted.txt")
    assert main(["scifibench-accept", "--out", str(out), "--accepted", str(tmp_path / "accepted.txt")]) == 2
    assert "accepted.txt: line 1" in capsys.readouterr().err
    (tmp_path / "accepted.txt").write_text(f"f2c {pool_id}\n")  # a later decision replaces the gold split
    summary = accept(out, tmp_path / "accepted.txt")
    assert summary["tiers"]["gold"]["questions"] == {"Figure2Caption": 1}
    assert [path.name for path in (out / "gold").iterdir()] == ["CS_Figure2Caption.parquet"]


def test_verification_sheet_and_card(curated: Curated) -> None:
    sheet = (curated.cs / "verification" / "index.html").read_text()
    for task in TASKS:
        for row in read(curated.cs / "gold_candidates" / f"CS_{task}.parquet"):
            key = f"{task}:{row['ID']}"
            assert f'data-key="{key}"' in sheet
            assert f'name="{key}" value="accept"' in sheet and f'name="{key}" value="reject"' in sheet
            assert f"answer <b>{row['Answer']}</b>" in sheet.split(f'data-key="{key}"')[1].split("</div>")[0]
    images = sheet.count('src="images/')
    assert images == 8 + 8 * 5  # one figure per Figure2Caption card, five per Caption2Figure card
    for name in set(part.split('"')[0] for part in sheet.split('src="images/')[1:]):
        assert (curated.cs / "verification" / "images" / name).exists()
    card = (curated.general / "README.md").read_text()
    assert "General_Figure2Caption" in card and "cross-list" not in card
    summary = json.loads((curated.general / "curation.json").read_text())
    assert summary["split_names"] == {
        "Figure2Caption": "General_Figure2Caption",
        "Caption2Figure": "General_Caption2Figure",
    }
    assert set(summary["categories"]["top"]) == {p for p in GENERAL_PRIMARIES}
    assert summary["threshold"]["rule"].startswith("auto") and summary["index"]["kind"] == "flat"


# --- determinism, resuming, multi-process ----------------------------------------------------------------------------


@pytest.mark.cli
def test_a_rerun_with_the_same_inputs_and_seed_writes_identical_questions(curated: Curated, tmp_path: Path) -> None:
    fresh = tmp_path / "again"  # a new output and a new cache: embeddings and neighbours are recomputed
    assert main(curate_args(curated.scicap_pairs, fresh, curated.config, *CS_SIZES)) == 0
    for tier in ("gold_candidates", "silver", "bronze", "random_negatives"):
        for task in TASKS:
            assert read(fresh / tier / f"CS_{task}.parquet") == read(curated.cs / tier / f"CS_{task}.parquet")
    reseeded = tmp_path / "seed1"
    assert main(curate_args(curated.scicap_pairs, reseeded, curated.config, *CS_SIZES, "--seed", "1")) == 0
    before = read(curated.cs / "silver" / "CS_Figure2Caption.parquet")
    after = read(reseeded / "silver" / "CS_Figure2Caption.parquet")
    assert [row["ID"] for row in before] == [row["ID"] for row in after]  # same questions ...
    assert [row["Answer"] for row in before] != [row["Answer"] for row in after]  # ... shuffled differently


def reference_vectors(curated: Curated) -> np.ndarray:
    summary = json.loads((curated.cs / "curation.json").read_text())
    return np.load(Path(summary["embedding"]["cache"]) / "joint.npy")


def test_an_interrupted_embedding_resumes_at_the_first_missing_shard(curated: Curated, tmp_path: Path) -> None:
    pairs = read_pairs(str(curated.scicap_pairs))
    spec = ClipSpec(MODEL, None, curated.config, 0)
    layout = ProcessLayout(device="cpu")
    finished: list[int] = []

    def stop_after_first(shard: int) -> None:
        finished.append(shard)
        raise KeyboardInterrupt  # the user pressed Ctrl-C (or the job was killed) after one shard

    with pytest.raises(KeyboardInterrupt):
        embed_pairs(pairs, spec, tmp_path, batch_size=8, shard_size=16, layout=layout, on_shard=stop_after_first)
    (cache,) = (tmp_path / "embeddings").iterdir()
    assert finished == [0] and sorted(p.name for p in cache.glob("shard-*.npy")) == ["shard-000000.npy"]
    (cache / "shard-000001.npy.partial.npy").write_bytes(b"half-written")  # a write cut short is ignored
    resumed: list[int] = []
    vectors = embed_pairs(pairs, spec, tmp_path, batch_size=8, shard_size=16, layout=layout, on_shard=resumed.append)
    assert resumed == [1, 2, 3]  # 51 pairs in shards of 16: only the missing ones are embedded
    np.testing.assert_array_equal(vectors, reference_vectors(curated))
    assert vectors.shape == (len(pairs), 2 * json.loads(tiny_config().read_text())["embed_dim"])
    np.testing.assert_allclose(np.linalg.norm(vectors[:, :16], axis=1), 1.0, rtol=1e-5)
    again: list[int] = []
    np.testing.assert_array_equal(
        embed_pairs(pairs, spec, tmp_path, layout=layout, shard_size=16, on_shard=again.append), vectors
    )
    assert again == []  # a finished cache is reused without loading the model


def test_processes_of_a_multi_gpu_run_embed_disjoint_shards(curated: Curated, tmp_path: Path) -> None:
    pairs = read_pairs(str(curated.scicap_pairs))
    spec = ClipSpec(MODEL, None, curated.config, 0)
    done: dict[int, list[int]] = {0: [], 1: []}
    for rank in (1, 0):  # accelerate runs them at once; the barrier is a no-op here, so run rank 1 first
        layout = ProcessLayout(rank=rank, world=2, device="cpu")
        result = embed_pairs(
            pairs, spec, tmp_path, batch_size=8, shard_size=16, layout=layout, on_shard=done[rank].append
        )
        assert (result is None) == (rank == 1)
    assert done == {1: [1, 3], 0: [0, 2]}
    np.testing.assert_array_equal(result, reference_vectors(curated))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_distributed_launch_splits_the_embedding_and_writes_the_same_set(
    curated: Curated, tmp_path: Path, lmms_env
) -> None:
    """Two real processes (torchrun sets WORLD_SIZE/RANK as accelerate launch does), joined through accelerate."""
    torchrun = Path(sys.executable).parent / "torchrun"
    out = tmp_path / "distributed"
    command = [str(torchrun), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    command += ["-m", "curation.scifibench.cli", *curate_args(curated.scicap_pairs, out, curated.config, *CS_SIZES)]
    run = subprocess.run(command, env=lmms_env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-4000:]
    progress = run.stderr.replace("\r", "\n")
    assert "process 1/2" in progress and "process 2/2" in progress
    for tier in ("gold_candidates", "silver", "bronze", "random_negatives"):
        for task in TASKS:
            assert read(out / tier / f"CS_{task}.parquet") == read(curated.cs / tier / f"CS_{task}.parquet")


# --- the output through lmms-eval ------------------------------------------------------------------------------------


def test_curated_gold_sets_run_through_lmms_eval(curated: Curated, tmp_path: Path, lmms_env, run_cli) -> None:
    data = tmp_path / "scifibench"  # both domains' gold splits in one directory: what `--tasks scifibench` reads
    data.mkdir()
    for out in (curated.cs, curated.general):
        for path in (out / "gold").glob("*.parquet"):
            (data / path.name).symlink_to(path)
    rows = {path.stem: pq.read_metadata(path).num_rows for path in data.glob("*.parquet")}
    assert rows == {
        "CS_Figure2Caption": 4,
        "CS_Caption2Figure": 4,
        "General_Figure2Caption": 3,
        "General_Caption2Figure": 3,
    }
    args = ["--model", "scifig_chance", "--model_args", "seed=0", "--tasks", "scifibench", "--log_samples"]
    run = run_cli("lmms-eval", args, {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(data)}, tmp_path / "results")
    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    for split, task in {
        "CS_Figure2Caption": "scifibench_cs_figure2caption",
        "CS_Caption2Figure": "scifibench_cs_caption2figure",
        "General_Figure2Caption": "scifibench_general_figure2caption",
        "General_Caption2Figure": "scifibench_general_caption2figure",
    }.items():
        breakdown = results["results"][task]["breakdown,none"]
        assert breakdown["overall"]["all"]["n"] == rows[split], task
        assert breakdown["flags"]["resolution"] == {"rule": rows[split]}  # the chance model always names a letter
        assert len(run.samples(task)) == rows[split]
    assert results["groups"]["scifibench"]["breakdown,none"]["overall"]["all"]["n"] == sum(rows.values())
