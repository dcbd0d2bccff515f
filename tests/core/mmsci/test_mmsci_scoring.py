"""MMSci scoring rules: the authors' prompts, multiple-choice scoring through the shared resolver, the per-setting /
category / subject breakdown under both denominators (strict and the authors'), the pooled "Avg." and the
settings' mean, captioning prompts and the data contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.benchmarks.mmsci.source import MMSCI_CAPTIONING, MMSCI_MCQ
from scifig_tasks.core import multiple_choice as mcq
from scifig_tasks.core.data import load_benchmark
from scifig_tasks.core.errors import DataError
from tests.harness.mmsci_data import Caption, Mcq, mcq_row, write

OPTIONS = ["Raman spectra at 0 GPa.", "Crystal structure of TiS3.", "SEM image of the flakes.", "XRD pattern."]


def test_multiple_choice_prompt_is_the_authors_template() -> None:
    assert mmsci.mcq_prompt(mmsci.FIG2CAP_QUESTION, OPTIONS) == (
        "Which of the following captions best describes the whole figure?\n"
        "A: Raman spectra at 0 GPa.\nB: Crystal structure of TiS3.\nC: SEM image of the flakes.\nD: XRD pattern.\n"
        "Choose one answer from available options. Return only your answer."
    )
    assert mmsci.mcq_prompt("Q?", OPTIONS, "reasoning").endswith(
        "D: XRD pattern.Analyze the problem before concluding your response in this format: "
        '"The final answer is **[ANSWER]**."'
    )
    assert mmsci.SUBFIG2CAP_QUESTION.format(label="c") == (
        "which of the following options best describes the content in sub-figure (c)?"
    )
    with pytest.raises(ValueError, match="4 options"):
        mmsci.mcq_prompt("Q?", OPTIONS[:3])


def _doc(setting: str, answer: str, options: list[str], category: str = "Physical sciences") -> dict:
    return {
        "uid": "ncomms1",
        "figure_index": 0,
        "setting": setting,
        "subfigure": "" if setting == "fig2cap" else "b",
        "category": category,
        "subject": "Optics",
        "options": options,
        "answer": answer,
    }


SUBFIGURES = ["(a)", "(b)", "(c)", "(d)"]

# (setting, answer, output, expected letter or None) -- written by hand
CASES = [
    ("fig2cap", "A", "A", "A"),
    ("fig2cap", "B", "The final answer is **B**.", "B"),
    ("fig2cap", "C", "D: XRD pattern.", "D"),
    ("fig2cap", "D", "", None),
    ("subfig2cap", "C", "C: SEM image of the flakes.", "C"),
    ("subfig2cap", "A", "I cannot tell.", None),
    ("subcap2fig", "B", "sub-figure (c)", "C"),  # the option text of C
    ("subcap2fig", "D", "The answer is D", "D"),
    ("subcap2fig", "A", "a", None),  # the article/label "a" is never read as an answer
]


@pytest.mark.parametrize(("setting", "answer", "output", "letter"), CASES)
def test_resolution_through_the_shared_resolver(setting: str, answer: str, output: str, letter: str | None) -> None:
    options = SUBFIGURES if setting == "subcap2fig" else OPTIONS
    resolution = mcq.resolve_choice(output, mmsci.resolver_options(setting, options), judge=None)
    record = mmsci.sample_record(_doc(setting, answer, options), resolution)
    assert record["predicted"] == letter
    assert record["correct"] == int(letter == answer)
    assert record["resolution"] == ("unresolved" if letter is None else "rule")


@pytest.mark.parametrize(
    ("setting", "options", "output", "letter"),
    [
        ("fig2cap", OPTIONS, "(d) XRD pattern.", "D"),
        ("fig2cap", OPTIONS, "answer: b", "B"),
        ("fig2cap", ["(a) Raman spectra; (b) XRD.", *OPTIONS[1:]], "answer: b", None),  # a caption names panels
        ("subfig2cap", OPTIONS, "(d) XRD pattern.", None),  # the question names sub-figure (b)
        ("subcap2fig", SUBFIGURES, "(c)", None),  # setting III keeps upper-case labels only
        ("subcap2fig", SUBFIGURES, "b", None),
        ("subcap2fig", SUBFIGURES, "C", "C"),
    ],
)
def test_lower_case_labels_are_read_only_where_nothing_in_the_question_uses_them(
    setting: str, options: list[str], output: str, letter: str | None
) -> None:
    question = {
        "fig2cap": mmsci.FIG2CAP_QUESTION,
        "subfig2cap": mmsci.SUBFIG2CAP_QUESTION.format(label="b"),
        "subcap2fig": mmsci.SUBCAP2FIG_QUESTION.format(subcaption="Raman spectra."),
    }[setting]
    doc = {**_doc(setting, "A", options), "question": question}
    assert mmsci.resolve_answer(doc, output, judge=None).letter == letter


def _records() -> list[dict]:
    records = []
    for index, (setting, answer, output, _) in enumerate(CASES):
        options = SUBFIGURES if setting == "subcap2fig" else OPTIONS
        category = "Physical sciences" if index % 2 else "Health sciences"
        resolution = mcq.resolve_choice(output, mmsci.resolver_options(setting, options))
        records.append(mmsci.sample_record(_doc(setting, answer, options, category), resolution))
    return records


def test_breakdown_counts_unresolved_as_wrong_and_reports_the_authors_denominator_beside() -> None:
    table = mmsci.breakdown(_records())
    # correct: fig2cap A, B (2 of 4); subfig2cap C (1 of 2); subcap2fig D (1 of 3)
    assert {key: (cell["correct"], cell["n"]) for key, cell in table["setting"].items()} == {
        "fig2cap": (2, 4),
        "subcap2fig": (1, 3),
        "subfig2cap": (1, 2),
    }
    assert table["overall"]["all"]["accuracy"] == round(4 / 9, 4)  # pooled: the paper's "Avg."
    # the authors' denominator drops the 3 unresolved outputs: fig2cap 2 of 3, subfig2cap 1 of 1, subcap2fig 1 of 2
    answered = table["paper_denominator"]
    assert {key: (cell["correct"], cell["n"]) for key, cell in answered["setting"].items()} == {
        "fig2cap": (2, 3),
        "subcap2fig": (1, 2),
        "subfig2cap": (1, 1),
    }
    assert (answered["overall"]["all"]["correct"], answered["overall"]["all"]["n"]) == (4, 6)
    assert answered["overall"]["all"]["accuracy"] == round(4 / 6, 4)
    assert {key: (cell["correct"], cell["n"]) for key, cell in answered["category"].items()} == {
        "Health sciences": (2, 4),
        "Physical sciences": (2, 2),
    }
    assert "flags" not in answered
    assert table["setting_mean"] == {
        "accuracy": round((2 / 4 + 1 / 2 + 1 / 3) / 3, 4),
        "paper_denominator": round((2 / 3 + 1 / 1 + 1 / 2) / 3, 4),
        "settings": list(mmsci.SETTINGS),
    }
    # correct are cases 0, 1, 4 and 7; the even ones (0, 2, 4, 6, 8) are Health sciences -> 0 and 4 correct
    assert (table["category"]["Health sciences"]["correct"], table["category"]["Health sciences"]["n"]) == (2, 5)
    assert table["flags"]["resolution"] == {"rule": 6, "unresolved": 3}
    assert table["flags"]["judge"] == {"not_used": 9}
    assert table["setting"]["fig2cap"]["ci95"] == [0.15, 0.85]


def test_group_breakdown_merges_counts_and_keeps_the_settings_mean() -> None:
    records = _records()
    parts = [mmsci.breakdown([r for r in records if r["setting"] == setting]) for setting in mmsci.SETTINGS]
    merged = mmsci.merge_breakdowns(parts)
    assert merged == mmsci.breakdown(records)
    assert (merged["overall"]["all"]["correct"], merged["overall"]["all"]["n"]) == (4, 9)
    assert merged["paper_denominator"]["overall"]["all"]["accuracy"] == round(4 / 6, 4)
    assert merged["setting_mean"]["accuracy"] == round((0.5 + 0.5 + 1 / 3) / 3, 4)
    assert mmsci.merge_breakdowns([mmsci.breakdown(records[3:4])])["paper_denominator"] == {}  # nothing resolved
    assert mmsci.setting_mean({"fig2cap": None}) is None


def test_captioning_prompts_are_the_authors() -> None:
    assert mmsci.caption_prompt() == (
        "Please write a detailed description of the whole figures and all sub-figures based on the article."
    )
    assert mmsci.caption_prompt("We report X.") == (
        "Please write a detailed description of the whole figure and all sub-figures based on the article.\n"
        " Article:\nWe report X."
    )
    # the authors append " ...\n" when the prompt does not end a sentence (a cut abstract, or none at all)
    assert mmsci.caption_prompt("one two three four", word_budget=2).endswith("Article:\none two ...\n")
    assert mmsci.caption_prompt("We report X").endswith("Article:\nWe report X ...\n")
    assert mmsci.truncate_words("a  b\nc d", 3) == "a  b\nc"


def test_unset_data_variable_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCIFIG_MMSCI_DATA", raising=False)
    with pytest.raises(DataError) as error:
        load_benchmark(MMSCI_MCQ, split="test")
    message = str(error.value)
    assert message.startswith("SCIFIG_MMSCI_DATA: is not set")
    assert "scifig curate mmsci --articles ARTICLES --out DIR" in message and "export SCIFIG_MMSCI_DATA=DIR" in message
    assert "mcq/<split>.parquet" in message and "mmsci_dev" in message


def test_local_layout_is_read_and_bad_rows_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = write(tmp_path / "mmsci", [Mcq("fig2cap", "B"), Mcq("subcap2fig", "C")], [Caption("A caption.")])
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", str(data))
    assert load_benchmark(MMSCI_MCQ, split="test")["setting"] == ["fig2cap", "subcap2fig"]
    assert load_benchmark(MMSCI_CAPTIONING, split="test")["caption"] == ["A caption."]
    with pytest.raises(DataError, match=r"dev\.parquet"):
        load_benchmark(MMSCI_MCQ, split="dev")

    import datasets

    from tests.harness.mmsci_data import MCQ_FEATURES

    bad = mcq_row(1, Mcq("subfig2cap", "A"))
    bad["subfigure"] = ""
    rows = [mcq_row(0, Mcq("fig2cap", "A")), bad]
    datasets.Dataset.from_list(rows, features=MCQ_FEATURES).to_parquet(str(data / "mcq" / "test.parquet"))
    with pytest.raises(DataError, match=r"mcq/test\.parquet, row 1 \(0-based\), column 'subfigure'"):
        load_benchmark(MMSCI_MCQ, split="test")


def test_judge_use_is_flagged() -> None:
    failed = mcq.Resolution(None, "unresolved", "alternatives; judge failed")
    none = mcq.Resolution(None, "unresolved", "alternatives; judge found none")
    judged = mcq.Resolution("B", "judge", "alternatives")
    doc = _doc("fig2cap", "B", OPTIONS)
    table = mmsci.breakdown([mmsci.sample_record(doc, resolution) for resolution in (failed, none, judged)])
    assert table["flags"]["judge"] == {"judge_failed": 1, "judged": 2}
    assert table["overall"]["all"]["correct"] == 1


def test_sources_check_exactly_the_columns_the_features_define() -> None:
    from scifig_tasks.benchmarks.mmsci.source import (
        MMSCI_CAPTIONING,
        MMSCI_MCQ,
        mmsci_captioning_features,
        mmsci_mcq_features,
    )

    for source, features in ((MMSCI_MCQ, mmsci_mcq_features()), (MMSCI_CAPTIONING, mmsci_captioning_features())):
        assert [column.name for column in source.columns] == list(features)
