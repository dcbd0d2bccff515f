"""CharXiv's questions are the authors', byte for byte: every validation prompt hashes as the one their own code builds
(tests/fixtures/charxiv/authors_prompts.json), and the digest check fails on one space more."""

from __future__ import annotations

import pytest

from scifig_tasks.benchmarks.charxiv.authors_text import text
from scifig_tasks.benchmarks.charxiv.prompts import (
    descriptive_question,
    number_instruction,
    reasoning_question,
    subplot_prefix,
)
from tests.harness.charxiv_full_data import authors_file, authors_prompts, differing


def our_prompts() -> tuple[dict[str, str], dict[str, str]]:
    """Our questions of the authors' validation files, keyed and ordered as the authors' response files."""
    descriptive = {
        f"{chart['figure_id']}_{index}": descriptive_question(template, chart["subplot_loc"])
        for chart in authors_file("descriptive").values()
        for index, template in enumerate(chart["qids"])
    }
    reasoning = {
        str(chart["figure_id"]): reasoning_question(chart["query"], chart["inst_category"], chart["answer"])
        for chart in authors_file("reasoning").values()
    }
    return descriptive, reasoning


def test_every_validation_prompt_is_the_authors() -> None:
    descriptive, reasoning = our_prompts()
    authors = authors_prompts()
    assert (len(descriptive), len(reasoning)) == (4000, 1000)
    for mode, ours in (("descriptive", descriptive), ("reasoning", reasoning)):
        for key, question in authors["examples"][mode].items():
            assert ours[key] == question, f"{mode} {key}"  # the readable failure: their text in full
        assert differing(ours, authors[mode]) == [], mode


def test_the_digest_check_fails_on_one_space_more_or_less() -> None:
    descriptive, reasoning = our_prompts()
    digests = authors_prompts()["descriptive"]
    changed = {**descriptive, "62_1": descriptive["62_1"].replace(" ", "  ", 1)}
    assert differing(changed, digests) == ["62_1"]
    assert reasoning["0"].endswith("\n    ")
    changed = {**reasoning, "0": reasoning["0"].removesuffix(" ")}  # the instruction's last indent, one space less
    assert differing(changed, authors_prompts()["reasoning"]) == ["0"]
    assert differing(dict(reversed(descriptive.items())), digests) == ["order"]
    assert differing({key: descriptive[key] for key in list(descriptive)[1:]}, digests) == ["0_0"]


def test_the_subplot_is_named_as_the_authors_name_it() -> None:
    title = text("descriptive_response_instructions", 1)
    assert descriptive_question(1, [0, 0]) == "For the current plot, " + title.removeprefix("{}")
    assert subplot_prefix([0, 3]) == "For the current plot, "  # row 0: a single plot, whatever the column
    assert subplot_prefix([2, 1]) == "For the subplot at row 2 and column 1, "
    assert subplot_prefix("the bottom right subplot") == "For the bottom right subplot, "
    for template in (18, 19):  # the layout questions name no subplot
        unformatted = text("descriptive_response_instructions", template)
        assert descriptive_question(template, [2, 1]) == descriptive_question(template, "the inset") == unformatted
    with pytest.raises(ValueError, match="unknown descriptive template 20"):
        descriptive_question(20, [0, 0])
    with pytest.raises(ValueError, match="invalid subplot location None"):
        descriptive_question(1, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "line"),
    [
        ("3", "* Your final answer must be an exact integer."),
        ("-12", "* Your final answer must be an exact integer."),
        ("0.50", "* Your final answer must be a number with 2 decimal places."),
        ("1.2.3", "* Your final answer must be a number with 1 decimal places."),  # counted up to a second dot
        ("5.", "* Your final answer must be a number with 0 decimal places."),
    ],
)
def test_number_instruction_counts_the_gold_answers_decimals(answer: str, line: str) -> None:
    assert number_instruction(answer) == line


def test_the_answer_type_not_the_question_source_picks_the_instruction() -> None:
    chart = authors_file("reasoning")["2"]  # answer type 1 (text in chart), source 3 (human-written)
    assert (chart["inst_category"], chart["qa_source"]) == (1, 3)
    question = reasoning_question(chart["query"], chart["inst_category"], chart["answer"])
    assert question == text("reasoning_response_instructions", 1).format(chart["query"])
    assert question != text("reasoning_response_instructions", 3).format(chart["query"])
    integer = authors_file("reasoning")["17"]
    assert reasoning_question(integer["query"], 4, integer["answer"]) == text(
        "reasoning_response_instructions", 4
    ).format(integer["query"], "* Your final answer must be an exact integer.")
    with pytest.raises(ValueError, match="unknown reasoning answer type 5"):
        reasoning_question("Q?", 5, "1")
