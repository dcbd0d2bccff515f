"""Importers of the public MMSci copies on small fake inputs in their formats: VLMEvalKit's TSVs (base64 images,
row references, ``A``-``D`` columns, ``setting``) and the authors' benchmark archive (per-setting JSON lists,
options inside the question, ``images/``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import datasets
import pandas as pd
import pytest

from curation.mmsci.items import split_options, to_paper_setting3
from scifig_tasks.benchmarks.mmsci.rules import SUBCAP2FIG_QUESTION
from scifig_tasks.benchmarks.mmsci.source import MMSCI_CAPTIONING, MMSCI_MCQ
from scifig_tasks.commands.main import main as scifig_main
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from tests.harness.mmsci_articles import png

SUB = {
    "a": "Alpha panel showing the raw spectra of the first sample at room temperature.",
    "b": "Beta panel showing the fitted spectra of the second sample after annealing.",
    "c": "Gamma panel comparing the intensities of all samples against the reference.",
    "d": "Delta panel summarising the extracted parameters with their uncertainties.",
}
CAPTION = "Spectra of the samples studied in this work. " + " ".join(f"({k}) {v}" for k, v in SUB.items())
ABSTRACT = "We study four samples and report their spectra."
FIG2CAP = "Which of the following captions best describes the whole figure?"
SUBFIG2CAP = "which of the following options best describes the content in sub-figure ({x})?"
TITLES = ["Spectra of the samples.", "Device layout.", "Temperature dependence.", "Model fits."]


def authors_question(question: str, options: list[str]) -> str:
    return question + "".join(f"\n{letter}: {option}" for letter, option in zip("ABCD", options, strict=True))


def rows(path: Path) -> list[dict]:
    return datasets.Dataset.from_parquet(str(path)).cast_column("image", datasets.Image(decode=False)).to_list()


def test_caption_is_long_enough() -> None:
    assert len(CAPTION.split()) >= 50


def test_split_options_of_the_authors_question() -> None:
    text = authors_question(FIG2CAP, ["One: with a colon", "Two", "Three\nlines", "Four"])
    assert split_options(text, "f.json", 0) == (FIG2CAP, ["One: with a colon", "Two", "Three\nlines", "Four"])
    with pytest.raises(DataError, match=r"f.json, row 3 \(0-based\), column 'question': no option line 'C: ...'"):
        split_options(FIG2CAP + "\nA: x\nB: y", "f.json", 3)


# ---- the authors' archive ------------------------------------------------------------------------------------------


def item(setting: str, uid: str, image: str, question: str, answer: str) -> dict[str, str]:
    return {
        "uid": uid,
        "category": "Physical sciences",
        "subject": "Physics",
        "question": question,
        "answer": answer,
        "image": image,
    }


def write_archive(root: Path, test_answer: str = "") -> Path:
    for split in ("dev", "test"):
        folder = root / "benchmark" / split
        (folder / "images").mkdir(parents=True)
        for index in range(3):
            (folder / "images" / f"nc1_figure_{index}.png").write_bytes(png(index + 1))
        setting1 = [
            item("I", "nc1", "nc1_figure_0.png", authors_question(FIG2CAP, TITLES[1:2] + TITLES[:1] + TITLES[2:]), "B")
        ]
        setting2 = [
            item(
                "II",
                "nc1",
                "nc1_figure_0.png",
                authors_question(SUBFIG2CAP.format(x="c"), [SUB["c"], "Other article text one.", SUB["a"], "Two."]),
                "A" if split == "dev" else test_answer,
            )
        ]
        setting3 = [
            item(
                "III",
                "nc1",
                "nc1_figure_0.png",
                authors_question(SUBFIG2CAP.format(x="b"), [SUB["c"], SUB["b"], SUB["d"], SUB["a"]]),
                "B",
            ),
            item(
                "III", "nc1", "nc1_figure_2.png", authors_question(SUBFIG2CAP.format(x="a"), ["p", "q", "r", "s"]), "C"
            ),
        ]
        setting4 = [item("IV", "nc1", "nc1_figure_1.png", "ignored", "A")]
        (folder / "image_caption_matching_data.json").write_text(
            json.dumps([setting1, setting2, setting3, setting4]), encoding="utf-8"
        )
        captioning = [
            {
                "uid": "nc1",
                "category": "Physical sciences",
                "subject": "Physics",
                "abstract": ABSTRACT,
                "content": "Full text.",
                "image": "nc1_figure_0.png",
                "caption": CAPTION,
            }
        ]
        (folder / "image_caption_generation_data.json").write_text(json.dumps(captioning), encoding="utf-8")
    return root / "benchmark"


@pytest.mark.cli
def test_authors_archive_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    benchmark = write_archive(tmp_path)
    out = tmp_path / "out"
    args = ["curate", "mmsci-from-authors", "--benchmark", str(benchmark), "--out", str(out)]
    assert scifig_main(args) == 0
    table = rows(out / "mcq" / "dev.parquet")
    image0 = (benchmark / "dev" / "images" / "nc1_figure_0.png").read_bytes()
    assert [{k: v for k, v in row.items() if k != "image"} for row in table] == [
        {
            "uid": "nc1",
            "figure_index": 0,
            "setting": "fig2cap",
            "category": "Physical sciences",
            "subject": "Physics",
            "question": FIG2CAP,
            "options": TITLES[1:2] + TITLES[:1] + TITLES[2:],
            "answer": "B",
            "subfigure": "",
        },
        {
            "uid": "nc1",
            "figure_index": 0,
            "setting": "subfig2cap",
            "category": "Physical sciences",
            "subject": "Physics",
            "question": SUBFIG2CAP.format(x="c"),
            "options": [SUB["c"], "Other article text one.", SUB["a"], "Two."],
            "answer": "A",
            "subfigure": "c",
        },
        {  # the authors' within-figure variant converted to the paper's setting III, same answer letter
            "uid": "nc1",
            "figure_index": 0,
            "setting": "subcap2fig",
            "category": "Physical sciences",
            "subject": "Physics",
            "question": SUBCAP2FIG_QUESTION.format(subcaption=SUB["b"]),
            "options": ["(c)", "(b)", "(d)", "(a)"],
            "answer": "B",
            "subfigure": "b",
        },
    ]
    assert all(row["image"]["bytes"] == image0 for row in table)
    (caption,) = rows(out / "captioning" / "dev.parquet")
    assert (caption["uid"], caption["figure_index"], caption["caption"], caption["abstract"]) == (
        "nc1",
        0,
        CAPTION,
        ABSTRACT,
    )
    summary = json.loads((out / "curation.json").read_text(encoding="utf-8"))
    assert summary["dropped"] == {"dev": {"subcap2fig not convertible": 1}}
    assert not (out / "mcq" / "test.parquet").exists()
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", str(out))
    assert len(load_benchmark(MMSCI_MCQ, "dev")) == 3
    assert len(load_benchmark(MMSCI_CAPTIONING, "dev")) == 1


@pytest.mark.cli
def test_authors_test_split_with_anonymised_answers_fails_loudly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmark = write_archive(tmp_path, test_answer="")
    args = ["curate", "mmsci-from-authors", "--benchmark", str(benchmark), "--splits", "dev", "test"]
    assert scifig_main([*args, "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    matching = benchmark / "test" / "image_caption_matching_data.json"
    assert f"{matching}[1], row 0 (0-based), column 'answer': expected a letter A-D, got ''" in error


def test_paper_form_setting3_is_kept_and_unknown_caption_drops() -> None:
    from curation.mmsci.items import Mcq

    kept = Mcq("u", 0, "subcap2fig", "c", "s", b"", "q", ["(a)", "(b)", "(c)", "(d)"], "C", "c", "k")
    assert to_paper_setting3(kept, None) is kept
    variant = Mcq("u", 0, "subcap2fig", "c", "s", b"", "q", [SUB["a"], SUB["b"], SUB["c"], "unknown"], "A", "a", "k")
    assert to_paper_setting3(variant, CAPTION) is None  # an option that is no sub-caption of the figure
    assert to_paper_setting3(variant, None) is None


# ---- VLMEvalKit TSVs -----------------------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def write_tsvs(root: Path) -> tuple[Path, Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    figure, other = png(11), png(12)
    base = {"category": "Physical sciences", "subject": "Physics"}
    mcq = [
        {"index": 0, "image": b64(figure), "question": FIG2CAP, **dict(zip("ABCD", TITLES, strict=True)),
         "answer": "A", "setting": "Fig2Cap", **base},
        {"index": 1, "image": "0", "question": SUBFIG2CAP.format(x="d"),
         **dict(zip("ABCD", ["x1", SUB["d"], "x2", "x3"], strict=True)), "answer": "B", "setting": "SubFig2Cap",
         **base},
        {"index": 2, "image": "0", "question": SUBFIG2CAP.format(x="a"),
         **dict(zip("ABCD", [SUB["b"], SUB["c"], SUB["d"], SUB["a"]], strict=True)), "answer": "D",
         "setting": "SubCap2Fig", **base},
        {"index": 3, "image": b64(other), "question": SUBCAP2FIG_QUESTION.format(subcaption="Some panel."),
         **dict(zip("ABCD", ["(a)", "(b)", "(c)", "(d)"], strict=True)), "answer": "C", "setting": "SubCap2Fig",
         **base},
    ]  # fmt: skip
    prompt = "Please write a detailed description of the whole figures and all sub-figures based on the article."
    image_only = [
        {"index": 0, "image": b64(figure), "question": prompt, "caption": CAPTION, "abstract": "",
         "image_id": "nc7_figure_2.png", **base},
    ]  # fmt: skip
    with_abs = [
        {"index": 0, "image": b64(figure), "question": prompt, "caption": "", "abstract": ABSTRACT,
         "image_id": "nc7_figure_2.png", **base},
    ]  # fmt: skip
    paths = (root / "MMSci_DEV_MCQ.tsv", root / "image_only.tsv", root / "with_abs.tsv")
    for path, data in zip(paths, (mcq, image_only, with_abs), strict=True):
        pd.DataFrame(data).to_csv(path, sep="\t", index=False)
    return paths


@pytest.mark.cli
def test_vlmeval_tsv_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mcq, image_only, with_abs = write_tsvs(tmp_path / "tsv")
    out = tmp_path / "out"
    args = ["curate", "mmsci-from-vlmeval", "--mcq", str(mcq), "--captioning", str(image_only), str(with_abs)]
    assert scifig_main([*args, "--out", str(out)]) == 0
    table = rows(out / "mcq" / "dev.parquet")
    plain = [{k: v for k, v in row.items() if k not in ("image", "category", "subject")} for row in table]
    assert plain == [
        {"uid": "vlmeval-0", "figure_index": 0, "setting": "fig2cap", "question": FIG2CAP, "options": TITLES,
         "answer": "A", "subfigure": ""},
        {"uid": "vlmeval-1", "figure_index": 0, "setting": "subfig2cap", "question": SUBFIG2CAP.format(x="d"),
         "options": ["x1", SUB["d"], "x2", "x3"], "answer": "B", "subfigure": "d"},
        {"uid": "vlmeval-2", "figure_index": 0, "setting": "subcap2fig",
         "question": SUBCAP2FIG_QUESTION.format(subcaption=SUB["a"]), "options": ["(b)", "(c)", "(d)", "(a)"],
         "answer": "D", "subfigure": "a"},
        {"uid": "vlmeval-3", "figure_index": 0, "setting": "subcap2fig",
         "question": SUBCAP2FIG_QUESTION.format(subcaption="Some panel."), "options": ["(a)", "(b)", "(c)", "(d)"],
         "answer": "C", "subfigure": "c"},
    ]  # fmt: skip
    assert [row["image"]["bytes"] for row in table] == [png(11), png(11), png(11), png(12)]  # references resolved
    (caption,) = rows(out / "captioning" / "dev.parquet")
    assert (caption["uid"], caption["figure_index"], caption["caption"], caption["abstract"]) == (
        "nc7",
        2,
        CAPTION,
        ABSTRACT,
    )
    summary = json.loads((out / "curation.json").read_text(encoding="utf-8"))
    assert summary["unnamed_rows"] == {"mcq": 4}
    assert "`uid` is `vlmeval-<index>`" in (out / "README.md").read_text(encoding="utf-8")
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", str(out))
    assert len(load_benchmark(MMSCI_MCQ, "dev")) == 4
    assert len(load_benchmark(MMSCI_CAPTIONING, "dev")) == 1


@pytest.mark.cli
def test_vlmeval_bad_rows_fail_loudly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mcq, image_only, _ = write_tsvs(tmp_path / "tsv")
    frame = pd.read_csv(mcq, sep="\t", dtype=str, keep_default_na=False)
    frame.loc[3, "image"] = "not base64 at all, and longer than sixty-four characters so it is no row reference!!"
    frame.to_csv(mcq, sep="\t", index=False)
    assert scifig_main(["curate", "mmsci-from-vlmeval", "--mcq", str(mcq), "--out", str(tmp_path / "o1")]) == 2
    assert f"{mcq}, row 3 (0-based), column 'image': not base64" in capsys.readouterr().err
    args = ["curate", "mmsci-from-vlmeval", "--captioning", str(image_only), "--out", str(tmp_path / "o2")]
    assert scifig_main(args) == 2
    assert f"{image_only}, row 0 (0-based), column 'abstract': empty" in capsys.readouterr().err


def write_train(benchmark: Path) -> None:
    folder = benchmark / "train"
    (folder / "images").mkdir(parents=True)
    for index in range(2):
        (folder / "images" / f"nc9_figure_{index}.png").write_bytes(png(20 + index))
    generation = [
        {
            "uid": "nc9",
            "category": "Physical sciences",
            "subject": "Physics",
            "abstract": ABSTRACT,
            "content": "Full text.",
            "images": [
                {"image": "nc9_figure_0.png", "caption": CAPTION},
                {"image": "nc9_figure_1.png", "caption": "Too short to caption."},
            ],
        }
    ]
    matching = [
        [item("I", "nc9", "nc9_figure_1.png", authors_question(FIG2CAP, TITLES), "D")],
        [],
        [
            item(
                "III",
                "nc9",
                "nc9_figure_0.png",
                authors_question(SUBFIG2CAP.format(x="d"), [SUB[k] for k in "adcb"]),
                "B",
            ),
            item("III", "nc9", "nc9_figure_1.png", authors_question(SUBFIG2CAP.format(x="a"), list("pqrs")), "A"),
        ],
    ]
    chats = [
        {
            "uid": "nc9",
            "image": "nc9_figure_0.png",
            "caption": "Spectra.",
            "conversations": [
                {"from": "human", "value": "What does sub-figure (b) show?"},
                {"from": "gpt", "value": SUB["b"]},
                {"from": "human", "value": "And sub-figure (a)?"},
                {"from": "gpt", "value": SUB["a"]},
            ],
        }
    ]
    for name, data in (
        ("image_caption_generation_data.json", generation),
        ("image_caption_matching_data.json", matching),
        ("image_caption_chat_data.json", chats),
    ):
        (folder / name).write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.cli
def test_authors_train_split_to_sft(tmp_path: Path) -> None:
    from scifig_tasks.benchmarks.mmsci.rules import caption_prompt, mcq_prompt

    benchmark = write_archive(tmp_path)
    write_train(benchmark)
    out = tmp_path / "out"
    assert scifig_main(["curate", "mmsci-from-authors", "--benchmark", str(benchmark), "--out", str(out), "--sft"]) == 0
    records = [json.loads(line) for line in (out / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [record["source"] for record in records] == ["mmsci_mcq", "mmsci_mcq", "mmsci_caption", "mmsci_subfigure"]
    fig2cap, setting3, caption, chat = records
    assert fig2cap["messages"] == [
        {"role": "user", "content": "<image>\n" + mcq_prompt(FIG2CAP, TITLES)},
        {"role": "assistant", "content": "D"},
    ]
    assert setting3["messages"][0]["content"] == "<image>\n" + mcq_prompt(
        SUBCAP2FIG_QUESTION.format(subcaption=SUB["d"]), ["(a)", "(d)", "(c)", "(b)"]
    )
    assert setting3["messages"][1]["content"] == "B"
    assert caption["messages"] == [
        {"role": "user", "content": "<image>\n" + caption_prompt(ABSTRACT)},
        {"role": "assistant", "content": CAPTION},
    ]
    assert chat["messages"][0] == {"role": "user", "content": "<image>\nWhat does sub-figure (b) show?"}
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user", "assistant"]
    for record in records:
        assert sum(m["content"].count("<image>") for m in record["messages"]) == len(record["images"]) == 1
        assert (out / "sft" / record["images"][0]).read_bytes() == (
            benchmark / "train" / "images" / Path(record["images"][0]).name
        ).read_bytes()
    summary = json.loads((out / "curation.json").read_text(encoding="utf-8"))
    assert summary["sft"]["dropped"] == {"subcap2fig not convertible": 1}
    from scifig_finetune.data import read_sft_jsonl

    assert len(list(read_sft_jsonl(out / "sft" / "train.jsonl"))) == 4  # the fine-tuning recipe reads it
