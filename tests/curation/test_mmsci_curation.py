"""MMSci curation rules: caption cleaning, sub-caption extraction on real caption shapes, the three MCQ settings,
captioning items, the split rule and the fine-tuning records (curation/mmsci)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from curation.mmsci import captioning, questions, sft, splits
from curation.mmsci.articles import Article, Figure, read_articles
from curation.mmsci.captions import clean_title, extract_subcaptions, full_caption, word_count
from scifig_tasks.benchmarks.mmsci.rules import (
    FIG2CAP_QUESTION,
    LETTERS,
    SUBCAP2FIG_QUESTION,
    SUBFIG2CAP_QUESTION,
    caption_prompt,
    mcq_prompt,
)
from tests.harness.mmsci_articles import write_articles

# ---- caption cleaning ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "text", "number"),
    [
        (
            "Figure 1: 5hmC preferentially appears in the paternal genome of early mouse preimplantation embryos.",
            "5hmC preferentially appears in the paternal genome of early mouse preimplantation embryos.",
            1,
        ),
        ("Fig. 3: Gate-tunable magnetoresistance", "Gate-tunable magnetoresistance", 3),
        ("fig 12 :  Spin   switching\n in CoTPP.", "Spin switching in CoTPP.", 12),
        ("Figure 2: Ratio 1:2 of the two phases.", "Ratio 1:2 of the two phases.", 2),
        ("Overview of the device", "Overview of the device", None),
        ("Figure 4 Overview without a colon", "Figure 4 Overview without a colon", None),
    ],
)
def test_title_is_the_text_after_figure_n(line: str, text: str, number: int | None) -> None:
    title = clean_title(line)
    assert (title.text, title.number) == (text, number)
    assert title.found is (number is not None)


def test_caption_is_title_plus_description() -> None:
    assert full_caption("Figure 2: Spin switching.", " (a) Chemical\nstructure.  (b) Spectra.") == (
        "Spin switching. (a) Chemical structure. (b) Spectra."
    )
    assert full_caption("Figure 2:", "(a) Only panels.") == "(a) Only panels."
    assert word_count("one two  three\nfour") == 4


# ---- sub-captions --------------------------------------------------------------------------------------------------

AUTHORS_EXAMPLE = (
    "In all spectra, 'a.u.' represents arbitrary units. (a) Chemical structure of the CoTPP molecule (top) and "
    "schematic view of the XMCD experiment (bottom). (b) Chemical identification of Co and Ni: L-edges X-ray "
    "absorption spectra of Co (CoTPP, photon energy range: 765–815 eV) acquired with circularly polarized X-ray light "
    "(μ+and μ−). The difference reveals the magnetization. (c) Spin-switching sequence from left to right: L-edges "
    "XMCD spectra of Co (top panels) and Ni (bottom panels)."
)


@pytest.mark.parametrize(
    ("description", "expected", "reason"),
    [
        (
            AUTHORS_EXAMPLE,
            {
                "a": "Chemical structure of the CoTPP molecule (top) and schematic view of the XMCD experiment "
                "(bottom).",
                "b": "Chemical identification of Co and Ni: L-edges X-ray absorption spectra of Co (CoTPP, photon "
                "energy range: 765–815 eV) acquired with circularly polarized X-ray light (μ+and μ−). The difference "
                "reveals the magnetization.",
                "c": "Spin-switching sequence from left to right: L-edges XMCD spectra of Co (top panels) and Ni "
                "(bottom panels).",
            },
            "",
        ),
        # Nature's print style: bare letters are not markers
        ("a, Schematic of the device. b, Transfer curves at 300 K.", {}, "no markers"),
        ("a Representative images. b Quantification.", {}, "no markers"),
        ("(A) Upper-case panel. (B) Another.", {}, "no markers"),
        # a reference inside a sentence is not a marker
        (
            "(a) Growth curves. (b) Same as in (a) but at 37 °C. (c) Summary of (a) and (b).",
            {"a": "Growth curves.", "b": "Same as in (a) but at 37 °C.", "c": "Summary of (a) and (b)."},
            "",
        ),
        # after ':' and ';'
        ("Panels: (a) Wild type; (b) mutant.", {"a": "Wild type;", "b": "mutant."}, ""),
        # ranges and lists delimit but give no sub-caption
        ("(a-c) Confocal images of cells. (d) Quantification.", {"d": "Quantification."}, ""),
        ("(a–c) En-dash range. (d) Quantification.", {"d": "Quantification."}, ""),
        ("(a,b) Maps. (c) Profiles. (d, e) Fits. (f) Residuals.", {"c": "Profiles.", "f": "Residuals."}, ""),
        ("(a and b) Maps. (c) Profiles.", {"c": "Profiles."}, ""),
        # a back-reference at a marker position stays in the text
        (
            "(a) Foo. (b) Bar; (a) inset zooms in. (c) Baz.",
            {"a": "Foo.", "b": "Bar; (a) inset zooms in.", "c": "Baz."},
            "",
        ),
        # missing and out-of-order markers make the figure unusable
        ("(a) Foo. (c) Bar.", {}, "skipped"),
        ("(a) Foo. (c) Bar. (b) Baz.", {}, "skipped"),
        ("(b) Foo. (c) Bar.", {}, "skipped"),
        ("(a) Foo. (b-d) Bar. (c) Baz.", {"a": "Foo."}, ""),
        # white space is normalised
        ("(a)  Two\nlines\there.  (b) End.", {"a": "Two lines here.", "b": "End."}, ""),
        ("", {}, "no markers"),
    ],
)
def test_subcaptions_on_real_caption_shapes(description: str, expected: dict[str, str], reason: str) -> None:
    found = extract_subcaptions(description)
    assert found.by_label == expected
    assert list(found.by_label) == sorted(found.by_label)
    assert found.reason == reason


# ---- in-memory articles for the question rules ---------------------------------------------------------------------


def figure(index: int, line: str, description: str) -> Figure:
    return Figure(
        index,
        Path(f"/nonexistent/{index}.png"),
        line,
        description,
        clean_title(line),
        full_caption(line, description),
        extract_subcaptions(description),
    )


def article(uid: str, figures: list[Figure], subject: str = "Physics", category: str = "Physical sciences") -> Article:
    return Article(uid, category, subject, f"Article {uid}", f"Abstract of {uid}.", tuple(figures), "memory", None)


def panels(uid: str, index: int, count: int) -> str:
    return " ".join(f"({label}) Panel {label} of {uid} figure {index}." for label in "abcdefgh"[:count])


def rich_article(uid: str, titled: int = 5, subpanels: int = 4) -> Article:
    figures = [figure(i, f"Figure {i + 1}: Title {i} of {uid}.", panels(uid, i, subpanels)) for i in range(titled)]
    return article(uid, figures)


def test_fig2cap_needs_four_titled_figures() -> None:
    three = article("x3", [figure(i, f"Figure {i + 1}: T{i}.", "") for i in range(3)] + [figure(3, "Untitled", "")])
    assert questions.fig2cap_drafts(three, seed=0) == []
    duplicate = article(
        "dup", [figure(i, f"Figure {i + 1}: Same.", "") for i in range(3)] + [figure(3, "Fig 4: B", "")]
    )
    assert questions.fig2cap_drafts(duplicate, seed=0) == []
    four = article("x4", [figure(i, f"Figure {i + 1}: T{i}.", "") for i in range(4)])
    (draft,) = questions.fig2cap_drafts(four, seed=0)
    assert sorted([draft.answer.text, *(d.text for d in draft.distractors)]) == ["T0.", "T1.", "T2.", "T3."]


def check_question(q: questions.Question) -> None:
    assert len(q.options) == 4 and len(set(q.options)) == 4
    assert q.answer in LETTERS
    correct = q.options[LETTERS.index(q.answer)]
    if q.setting == "fig2cap":
        assert q.question == FIG2CAP_QUESTION and q.subfigure == ""
        assert correct == q.figure.title.text
        titles = {f.title.text: f.index for f in q.article.figures if f.title.found}
        for option, source in zip(q.options, q.sources, strict=True):
            assert titles[option] == source.figure_index  # a title of this article
        assert sum(source.figure_index == q.figure.index for source in q.sources) == 1
    elif q.setting == "subfig2cap":
        assert q.question == SUBFIG2CAP_QUESTION.format(label=q.subfigure)
        assert correct == q.figure.subcaptions.by_label[q.subfigure]
        for option, source in zip(q.options, q.sources, strict=True):
            owner = q.article.figures[source.figure_index]
            assert owner.subcaptions.by_label[source.label] == option  # a sub-caption of this article
    else:
        assert q.question == SUBCAP2FIG_QUESTION.format(subcaption=q.figure.subcaptions.by_label[q.subfigure])
        assert correct == f"({q.subfigure})"
        for option, source in zip(q.options, q.sources, strict=True):
            assert source.figure_index == q.figure.index  # a sub-figure of the same figure
            assert option == f"({source.label})" and source.label in q.figure.subcaptions.by_label
    assert q.options.count(correct) == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcq_invariants(seed: int) -> None:
    pool = [rich_article(f"art{n:02d}", titled=4 + n % 3, subpanels=4 + n % 2) for n in range(12)]
    built = questions.build_questions(pool, seed, "test")
    assert {setting: len(items) for setting, items in built.items()} == {
        "fig2cap": 12,
        "subfig2cap": 12,
        "subcap2fig": 12,
    }
    for items in built.values():
        for q in items:
            check_question(q)
        assert sorted(Counter(q.answer for q in items).values()) == [3, 3, 3, 3]  # balanced letters


def test_mcq_is_seeded_and_independent_of_input_order() -> None:
    pool = [rich_article(f"art{n:02d}") for n in range(8)]
    first = questions.build_questions(pool, 5, "dev")
    again = questions.build_questions(list(reversed(pool)), 5, "dev")
    other = questions.build_questions(pool, 6, "dev")
    rows = lambda built: [q.row() for setting in built for q in built[setting]]  # noqa: E731
    assert rows(first) == rows(again)
    assert rows(first) != rows(other)


def test_subfig2cap_distractors_may_come_from_other_figures_of_the_article_only() -> None:
    pool = [rich_article("one", titled=2, subpanels=2), rich_article("two", titled=2, subpanels=2)]
    for seed in range(10):
        for q in questions.build_questions(pool, seed, "test")["subfig2cap"]:
            check_question(q)
            assert all(q.article.uid in option for option in q.options)


def test_subcap2fig_needs_four_subcaptions_and_unique_texts() -> None:
    three = rich_article("three", titled=4, subpanels=3)
    assert questions.subcap2fig_drafts(three, seed=0) == []
    shared = article("shared", [figure(0, "Figure 1: T.", "(a) Same. (b) Same. (c) C. (d) D.")])
    for seed in range(20):
        (draft,) = questions.subcap2fig_drafts(shared, seed)
        assert draft.subfigure in ("c", "d")  # a shared sub-caption is never asked


def test_balanced_letters_counts() -> None:
    import random

    letters = questions.balanced_letters(10, random.Random(0))
    assert sorted(Counter(letters).values()) == [2, 2, 3, 3]


def test_per_article_none_asks_every_eligible_figure() -> None:
    pool = [rich_article("big", titled=6, subpanels=4)]
    built = questions.build_questions(pool, 0, "train", per_article=None)
    assert [len(built[s]) for s in ("fig2cap", "subfig2cap", "subcap2fig")] == [6, 6, 6]
    assert sorted(q.figure.index for q in built["fig2cap"]) == list(range(6))


# ---- captioning ----------------------------------------------------------------------------------------------------


def test_captioning_needs_fifty_words() -> None:
    words = lambda n: " ".join(f"w{i}" for i in range(n))  # noqa: E731
    short = figure(0, "Figure 1: t1", words(48))  # 49 words with the title
    exact = figure(1, "Figure 2: t2", words(49))  # 50 words
    item_article = article("cap", [short, exact])
    assert word_count(short.caption) == 49 and word_count(exact.caption) == 50
    (item,) = captioning.caption_items([item_article], seed=0)
    assert item.figure.index == 1
    assert item.row()["caption"] == "t2 " + words(49)


# ---- splits --------------------------------------------------------------------------------------------------------


def bare(uid: str, subject: str) -> Article:
    return Article(uid, "Cat", subject, "", "abstract", (), "memory", None)


def test_split_rule_one_percent_per_subject_min_five_disjoint() -> None:
    pool = (
        [bare(f"big{n:04d}", "Big") for n in range(750)]
        + [bare(f"mid{n:03d}", "Mid") for n in range(300)]
        + [bare(f"small{n:02d}", "Small") for n in range(12)]
        + [bare(f"tiny{n}", "Tiny") for n in range(7)]
    )
    made = splits.split_articles(pool, lambda a: True, seed=0)
    sizes = {s: (c["test"], c["dev"], c["train"]) for s, c in made.per_subject.items()}
    assert sizes == {"Big": (7, 7, 736), "Mid": (5, 5, 290), "Small": (5, 5, 2), "Tiny": (5, 2, 0)}
    test, dev, train = set(made.test), set(made.dev), set(made.train)
    assert not test & dev and not test & train and not dev & train
    assert test | dev | train == {a.key for a in pool}
    assert made == splits.split_articles(list(reversed(pool)), lambda a: True, seed=0)
    assert made.test != splits.split_articles(pool, lambda a: True, seed=1).test


def test_split_draws_only_eligible_articles() -> None:
    pool = [bare(f"s{n:02d}", "S") for n in range(20)]
    made = splits.split_articles(pool, lambda a: a.uid < "s08", seed=0)
    assert set(made.test) | set(made.dev) == {(f"s{n:02d}", "S") for n in range(8)}
    assert (len(made.test), len(made.dev)) == (5, 3)


def test_a_paper_filed_under_two_subjects_never_leaks_into_train() -> None:
    shared = [f"p{n:02d}" for n in range(10)]
    pool = [bare(uid, "A") for uid in shared] + [bare(uid, "B") for uid in shared] + [bare("only-b", "B")]
    for seed in range(5):
        made = splits.split_articles(pool, lambda a: True, seed)
        held = {uid for uid, _ in made.test} | {uid for uid, _ in made.dev}
        assert not held & {uid for uid, _ in made.train}
        assert not {uid for uid, _ in made.test} & {uid for uid, _ in made.dev}
        assert len([key for key in made.test if key[1] == "A"]) == 5


def test_predefined_splits_from_the_authors_lists(tmp_path: Path) -> None:
    pool = [bare(f"s{n}", "S") for n in range(6)] + [bare("s0", "T"), bare("t1", "T")]
    lists = {"test": {"Cat": {"S": ["s0", "s1", "gone"]}}, "dev": {"Cat": {"S": ["s2", "s0"], "T": ["t1"]}}}
    for split, data in lists.items():
        (tmp_path / f"{split}_split_ids.json").write_text(json.dumps(data), encoding="utf-8")
    made = splits.predefined_splits(pool, tmp_path)
    assert made.test == (("s0", "S"), ("s1", "S"))
    assert made.dev == (("s2", "S"), ("t1", "T"))  # s0 is in test: not in dev
    assert made.train == (("s3", "S"), ("s4", "S"), ("s5", "S"))  # ("s0", "T") is the test paper: not in train


# ---- fine-tuning records -------------------------------------------------------------------------------------------


def test_sft_records_are_valid(tmp_path: Path) -> None:
    pool = read_articles(write_articles(tmp_path / "in", {("Physical sciences", "Physics"): 3}))
    counts = sft.write_sft(tmp_path / "sft", pool, seed=0)
    lines = (tmp_path / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    # per article: fig2cap 4 (figures 0-3 titled), subfig2cap 5, subcap2fig 4; captions 4; conversations 5
    assert counts["sources"] == {"mmsci_mcq": 39, "mmsci_caption": 12, "mmsci_subfigure": 15}
    assert counts["records"] == len(records) == 66
    for record in records:
        assert set(record) == {"id", "source", "images", "messages"}
        assert len(record["images"]) == 1 and (tmp_path / "sft" / record["images"][0]).is_file()
        placeholders = sum(message["content"].count("<image>") for message in record["messages"])
        assert placeholders == len(record["images"])
        assert record["messages"][0]["content"].startswith("<image>\n")
        roles = [message["role"] for message in record["messages"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
    by_source = {record["source"]: record for record in records}
    mcq = by_source["mmsci_mcq"]
    assert mcq["messages"][1]["content"] in LETTERS
    assert "\nA: " in mcq["messages"][0]["content"]
    chat = by_source["mmsci_subfigure"]
    assert len(chat["messages"]) in (4, 8)
    caption = by_source["mmsci_caption"]
    abstracts = {a.uid: a.abstract for a in pool}
    assert caption["messages"][0]["content"] == "<image>\n" + caption_prompt(abstracts[caption["id"].split("-")[1]])
    assert caption["messages"][1]["content"].startswith("Title ")
    assert len({record["id"] for record in records}) == len(records)


def test_sft_mcq_prompt_is_the_evaluation_prompt() -> None:
    q = questions.build_questions([rich_article("p")], 0, "train", per_article=None)["fig2cap"][0]
    record = sft.mcq_record(q)
    assert record["messages"][0]["content"] == "<image>\n" + mcq_prompt(q.question, q.options)
    assert record["messages"][1]["content"] == q.answer


def test_sft_trains_once_on_a_paper_filed_under_two_subjects() -> None:
    first = rich_article("twice")
    second = Article(first.uid, "Other category", "Other", first.title, first.abstract, first.figures, "m", None)
    once = sft.sft_records([first], seed=0)
    both = sft.sft_records([second, first], seed=0)
    assert [record["id"] for record in both] == [record["id"] for record in once]
    assert len({record["id"] for record in both}) == len(both)
