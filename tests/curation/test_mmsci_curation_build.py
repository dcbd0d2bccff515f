"""``scifig curate mmsci`` end to end on synthetic articles: the files follow the MMSci local layout, load through
``scifig_tasks.core.data.load_benchmark`` and hold exactly what the article records say."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from scifig_tasks.benchmarks.mmsci.rules import LETTERS, SUBCAP2FIG_QUESTION, SUBFIG2CAP_QUESTION
from scifig_tasks.benchmarks.mmsci.source import (
    MMSCI_CAPTIONING,
    MMSCI_MCQ,
    mmsci_captioning_features,
    mmsci_mcq_features,
)
from scifig_tasks.commands.main import main as scifig_main
from scifig_tasks.core.data import load_benchmark
from tests.harness import warm_start
from tests.harness.mmsci_articles import LABELS, figure_record, subcaption, title, write_articles

SUBJECTS = {("Physical sciences", "Physics"): 12, ("Biological sciences", "Genetics"): 8}


def curate(articles: Path, out: Path, *extra: str) -> int:
    return scifig_main(["curate", "mmsci", "--articles", str(articles), "--out", str(out), *extra])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("mmsci")
    articles = write_articles(root / "in", SUBJECTS)
    assert curate(articles, root / "out", "--seed", "3") == 0
    return root / "in", root / "out"


def split_uids(out: Path) -> dict[str, list[str]]:
    """``splits.json`` ({split: {category: {subject: [uid]}}}) as uids per split."""
    nested = json.loads((out / "splits.json").read_text(encoding="utf-8"))
    return {
        split: sorted(uid for subjects in tree.values() for uids in subjects.values() for uid in uids)
        for split, tree in nested.items()
    }


def rows(path: Path) -> list[dict]:
    data = datasets.Dataset.from_parquet(str(path))
    return data.cast_column("image", datasets.Image(decode=False)).to_list()


@pytest.mark.cli
def test_layout_and_exact_features(built: tuple[Path, Path]) -> None:
    _, out = built
    for table, features in (("mcq", mmsci_mcq_features()), ("captioning", mmsci_captioning_features())):
        for split in ("test", "dev"):
            data = datasets.Dataset.from_parquet(str(out / table / f"{split}.parquet"))
            assert list(data.features) == list(features)
            assert data.features == features
    assert (out / "README.md").read_text(encoding="utf-8").startswith("---\npretty_name: MMSci")


def test_splits_per_subject(built: tuple[Path, Path]) -> None:
    _, out = built
    chosen = split_uids(out)
    subject_of = lambda uid: "Physics" if uid.startswith("physics") else "Genetics"  # noqa: E731
    counts = {split: sorted(subject_of(uid) for uid in chosen[split]) for split in chosen}
    # min 5 per subject: Physics 12 -> 5 / 5 / 2, Genetics 8 -> 5 / 3 / 0
    assert counts == {
        "test": ["Genetics"] * 5 + ["Physics"] * 5,
        "dev": ["Genetics"] * 3 + ["Physics"] * 5,
        "train": ["Physics"] * 2,
    }
    assert not set(chosen["test"]) & set(chosen["dev"])


def test_mcq_rows_hold_what_the_articles_say(built: tuple[Path, Path]) -> None:
    source, out = built
    chosen = split_uids(out)
    for split in ("test", "dev"):
        table = rows(out / "mcq" / f"{split}.parquet")
        assert [row["setting"] for row in table] == ["fig2cap"] * len(chosen[split]) + ["subfig2cap"] * len(
            chosen[split]
        ) + ["subcap2fig"] * len(chosen[split])
        for row in table:
            uid, index = row["uid"], row["figure_index"]
            assert uid in chosen[split]
            assert row["image"]["bytes"] == (source / figure_record(uid, index)["image_filename"]).read_bytes()
            correct = row["options"][LETTERS.index(row["answer"])]
            assert len(set(row["options"])) == 4
            if row["setting"] == "fig2cap":
                assert correct == title(uid, index) and row["subfigure"] == ""
                assert all(option.startswith("Title ") and uid in option for option in row["options"])
            elif row["setting"] == "subfig2cap":
                assert correct == subcaption(uid, index, row["subfigure"])
                assert row["question"] == SUBFIG2CAP_QUESTION.format(label=row["subfigure"])
                assert all(f" in {uid} shows" in option for option in row["options"])
            else:
                assert row["question"] == SUBCAP2FIG_QUESTION.format(
                    subcaption=subcaption(uid, index, row["subfigure"])
                )
                assert correct == f"({row['subfigure']})"
                assert set(row["options"]) <= {f"({label})" for label in LABELS}
                assert index < 4  # figure 4 has only 2 sub-captions
        for setting in ("fig2cap", "subfig2cap", "subcap2fig"):
            answers = [row["answer"] for row in table if row["setting"] == setting]
            counts = [answers.count(letter) for letter in LETTERS]
            assert max(counts) - min(counts) <= 1  # balanced answer letters


def test_captioning_rows(built: tuple[Path, Path]) -> None:
    source, out = built
    for row in rows(out / "captioning" / "test.parquet"):
        uid, index = row["uid"], row["figure_index"]
        record = figure_record(uid, index)
        assert index < 4
        assert row["caption"] == f"{title(uid, index)} {record['description']}"
        assert len(row["caption"].split()) >= 50
        assert row["abstract"].startswith(f"Abstract of {uid}:")
        assert row["image"]["bytes"] == (source / record["image_filename"]).read_bytes()


def test_loads_through_the_evaluation_sources(built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, out = built
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", str(out))
    assert len(load_benchmark(MMSCI_MCQ)) == 30  # test: 10 articles x 3 settings
    assert len(load_benchmark(MMSCI_MCQ, "dev")) == 24
    assert len(load_benchmark(MMSCI_CAPTIONING)) == 10
    assert len(load_benchmark(MMSCI_CAPTIONING, "dev")) == 8


def test_sft_from_train_articles_only(built: tuple[Path, Path]) -> None:
    _, out = built
    train = set(split_uids(out)["train"])
    records = [json.loads(line) for line in (out / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2 * (13 + 4 + 5)  # per article: 13 MCQ, 4 captions, 5 conversations
    for record in records:
        assert record["id"].split("-")[1] in train
        assert all((out / "sft" / image).is_file() for image in record["images"])


@pytest.mark.cli
def test_same_seed_same_bytes_other_seed_other_questions(built: tuple[Path, Path], tmp_path: Path) -> None:
    source, out = built
    assert curate(source / "articles.jsonl", tmp_path / "again", "--seed", "3") == 0
    for name in ("mcq/test.parquet", "mcq/dev.parquet", "captioning/test.parquet", "sft/train.jsonl"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
    assert curate(source / "articles.jsonl", tmp_path / "other", "--seed", "4", "--no-sft") == 0
    assert (tmp_path / "other" / "mcq/test.parquet").read_bytes() != (out / "mcq/test.parquet").read_bytes()
    assert not (tmp_path / "other" / "sft").exists()


@pytest.mark.cli
def test_bad_record_names_file_row_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    articles = write_articles(tmp_path / "in", {("Physical sciences", "Physics"): 2})
    lines = articles.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["images"][2]["image_filename"] = "images/missing.png"
    lines[1] = json.dumps(record)
    articles.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert curate(articles, tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert f"{articles}, row 1 (0-based), column 'images[2].image_filename'" in error
    assert "missing.png does not exist" in error


@pytest.mark.cli
def test_directory_of_records_in_the_authors_tree(tmp_path: Path) -> None:
    """``rawdata/<category>/<subject>/<uid>/<uid>_data.json`` without category/subject fields, next to the authors'
    split lists; a paper filed under two subjects."""
    flat = write_articles(tmp_path / "flat", {("Earth and environmental sciences", "Ecology"): 10})
    raw = tmp_path / "rawdata"
    for line in flat.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        category, subject = record.pop("category"), record.pop("subject")
        homes = [(category, subject)] + ([(category, "Limnology")] if record["uid"] == "ecology000" else [])
        record["unique_id"] = record.pop("uid")
        for home in homes:
            folder = raw / home[0] / home[1] / record["unique_id"]
            folder.mkdir(parents=True)
            for figure in record["images"]:
                name = Path(figure["image_filename"]).name
                (folder / name).write_bytes((tmp_path / "flat" / "images" / name).read_bytes())
            images = [{**figure, "image_filename": Path(figure["image_filename"]).name} for figure in record["images"]]
            data = {**record, "images": images}
            (folder / f"{record['unique_id']}_data.json").write_text(json.dumps(data), encoding="utf-8")
    test_ids = {"Earth and environmental sciences": {"Ecology": ["ecology003", "ecology004"]}}
    dev_ids = {"Earth and environmental sciences": {"Ecology": ["ecology005"], "Limnology": ["ecology000"]}}
    (raw / "test_split_ids.json").write_text(json.dumps(test_ids), encoding="utf-8")
    (raw / "dev_split_ids.json").write_text(json.dumps(dev_ids), encoding="utf-8")

    assert curate(raw, tmp_path / "out", "--no-sft", "--pattern", "*_data.json") == 0
    table = rows(tmp_path / "out" / "mcq" / "test.parquet")
    assert {row["category"] for row in table} == {"Earth and environmental sciences"}
    assert {(row["subject"], row["setting"]) for row in table} >= {("Ecology", "fig2cap"), ("Limnology", "fig2cap")}
    assert len(table) == 18  # Ecology 5 articles + Limnology 1 (its only article), 3 settings each
    chosen = split_uids(tmp_path / "out")
    assert not set(chosen["train"]) & (set(chosen["test"]) | set(chosen["dev"]))

    assert curate(raw, tmp_path / "authors", "--no-sft", "--pattern", "*_data.json", "--split-ids", str(raw)) == 0
    assert split_uids(tmp_path / "authors") == {
        "test": ["ecology003", "ecology004"],
        "dev": ["ecology000", "ecology005"],
        "train": ["ecology001", "ecology002", "ecology006", "ecology007", "ecology008", "ecology009"],
    }


@pytest.mark.slow
@pytest.mark.cli
def test_the_installed_scifig_command_runs_it(tmp_path: Path) -> None:
    scifig = Path(sys.executable).parent / "scifig"
    listing = subprocess.run([str(scifig), "curate", "--help"], capture_output=True, text=True, check=True).stdout
    assert {"mmsci", "mmsci-from-vlmeval", "mmsci-from-authors"} <= set(re.findall(r"[\w-]+", listing))
    articles = write_articles(tmp_path / "in", {("Physical sciences", "Physics"): 6})
    out = tmp_path / "out"
    completed = warm_start.run(
        [str(scifig), "curate", "mmsci", "--articles", str(articles), "--out", str(out)], os.environ, timeout=600
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "test: fig2cap 5, subfig2cap 5, subcap2fig 5, captioning 5; dev: fig2cap 1," in completed.stdout
    assert f"use SCIFIG_MMSCI_DATA={out}" in completed.stdout


@pytest.mark.cli
def test_duplicate_article_in_a_subject_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    articles = write_articles(tmp_path / "in", {("Physical sciences", "Physics"): 2})
    lines = articles.read_text(encoding="utf-8").splitlines()
    articles.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    assert curate(articles, tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert f"{articles}, row 2 (0-based), column 'uid': duplicate article 'physics000' in subject 'Physics'" in error
    assert f"(also {articles}, row 0)" in error


def test_sft_is_read_by_the_finetune_recipe(built: tuple[Path, Path]) -> None:
    from scifig_finetune.data import read_sft_jsonl

    _, out = built
    examples = list(read_sft_jsonl(out / "sft" / "train.jsonl"))
    assert len(examples) == 44
    assert {example.source for example in examples} == {"mmsci_mcq", "mmsci_caption", "mmsci_subfigure"}
