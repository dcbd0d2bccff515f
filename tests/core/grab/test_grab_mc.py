"""The multiple-choice ablation of GRAB properties: seeded options close to the true value, in its format, within
the quantity's bounds, the correct letter uniform; scoring through the shared resolver."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.grab.plan import cached_plan
from scifig_tasks.benchmarks.grab.answers import matches_format
from scifig_tasks.benchmarks.grab.multiple_choice import (
    MAX_STEPS,
    breakdown,
    mc_options,
    mc_prompt,
    sample_record,
    score_mc,
)

GRADIENT = "What is the value of the gradient of the function? Give your answer as an integer."
SERIES = "How many series are shown in the figure? Give your answer as an integer."
PEARSON = "What is the Pearson's correlation coefficient of the data? Give your answer to 1 decimal place."
AREA = "What is the total area bounded by the function and x-axis? Give your answer to the nearest 10."
TWO = (
    "What are the x-values of the two stationary points of the function? Write your answer in the form "
    "[x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2. Give your answer as an integer."
)
EQUATION = (
    "What is the equation of the function? Write your answer in the form y = <a>x^2 + <b>x + <c>. "
    "Each variable is as an integer."
)


def texts(options: list[str]) -> list[str]:
    return [option[3:] for option in options]


def test_integer_options_are_close_sorted_and_contain_the_answer() -> None:
    options, letter = mc_options("3", GRADIENT, seed=7)
    assert [option[:3] for option in options] == ["A) ", "B) ", "C) ", "D) ", "E) "]
    values = [int(text) for text in texts(options)]
    assert values == sorted(values) and len(set(values)) == 5
    assert options["ABCDE".index(letter)] == f"{letter}) 3"
    assert all(abs(value - 3) <= MAX_STEPS for value in values)
    assert mc_options("3", GRADIENT, seed=7) == (options, letter)  # deterministic
    assert {tuple(mc_options("3", GRADIENT, seed=seed)[0]) for seed in range(20)} != {tuple(options)}


def test_bounds_of_the_quantity_are_respected() -> None:
    options, letter = mc_options("1", SERIES, seed=0)
    assert letter == "A" and texts(options)[0] == "1" and min(int(t) for t in texts(options)) >= 1
    options, letter = mc_options("1.0", PEARSON, seed=3)
    assert letter == "E" and texts(options) == sorted(texts(options), key=float)
    assert all(-1 <= float(text) <= 1 and matches_format(text, PEARSON) for text in texts(options))
    options, _ = mc_options("-1.0", PEARSON, seed=3)
    assert texts(options)[0] == "-1.0"
    options, _ = mc_options("10", AREA, seed=5)
    assert all(int(text) % 10 == 0 and int(text) >= 0 for text in texts(options))


def test_correct_letter_is_uniform() -> None:
    letters = Counter(mc_options("0", GRADIENT, seed=seed)[1] for seed in range(1000))
    assert set(letters) == set("ABCDE") and all(150 <= count <= 250 for count in letters.values())


def test_list_and_equation_options_keep_their_format() -> None:
    options, letter = mc_options("[-2, 5]", TWO, seed=1)
    assert options["ABCDE".index(letter)].endswith("[-2, 5]") and len(set(options)) == 5
    assert all(matches_format(text, TWO) for text in texts(options))
    options, letter = mc_options("y = -3x^2 + 1x - 3", EQUATION, seed=1)
    assert options["ABCDE".index(letter)].endswith("y = -3x^2 + 1x - 3")
    assert all(matches_format(text, EQUATION) for text in texts(options))


@settings(max_examples=200, deadline=None)
@given(st.integers(-60, 60), st.sampled_from(["integer", "1dp", "nearest10"]), st.integers(0, 10**6))
def test_scalar_options_property(units: int, precision: str, seed: int) -> None:
    step = {"integer": Fraction(1), "1dp": Fraction(1, 10), "nearest10": Fraction(10)}[precision]
    sentence = {
        "integer": " Give your answer as an integer.",
        "1dp": " Give your answer to 1 decimal place.",
        "nearest10": " Give your answer to the nearest 10.",
    }[precision]
    question = "What is the median of the data?" + sentence
    answer = f"{float(units * step):.1f}" if precision == "1dp" else str(int(units * step))
    options, letter = mc_options(answer, question, seed)
    values = [Fraction(text) for text in texts(options)]
    assert len(set(values)) == 5 and values == sorted(values)
    assert all(matches_format(text, question) for text in texts(options))
    assert texts(options)["ABCDE".index(letter)] == answer
    assert all(abs(value - Fraction(answer)) <= MAX_STEPS * step for value in values)


def test_every_generated_properties_question_gets_valid_options() -> None:
    for item in cached_plan(0):
        if item.task != "properties":
            continue
        options, letter = mc_options(item.answer, item.question, seed=item.pid)
        assert texts(options)["ABCDE".index(letter)] == item.answer
        assert all(matches_format(text, item.question) for text in texts(options)), (item.question, options)


def test_prompt_wording() -> None:
    options, _ = mc_options("3", GRADIENT, seed=7)
    prompt = mc_prompt(GRADIENT, options)
    assert prompt == (
        GRADIENT + "\n" + "\n".join(options) + "\nAnswer with the letter of the correct option (A, B, C, D or E) only."
    )


@pytest.mark.parametrize(
    ("output", "correct", "method"),
    [("C", True, "rule"), ("Answer: (B)", False, "rule"), ("B or C", False, "unresolved"), ("", False, "unresolved")],
)
def test_scoring_uses_the_resolver_without_guessing(output: str, correct: bool, method: str) -> None:
    options = ["A) 1", "B) 2", "C) 3", "D) 4", "E) 5"]
    score = score_mc(output, options, "C", judge=None, question=GRADIENT)
    assert score.correct is correct and score.resolution.method == method


def test_breakdown_counts_resolution_methods() -> None:
    options = ["A) 1", "B) 2", "C) 3", "D) 4", "E) 5"]
    doc = {"pid": 0, "category": "Extrema", "mc_answer": "C"}
    records = [
        sample_record(doc, score_mc(output, options, "C", None, question=GRADIENT))
        for output in ("C", "D", "", "B or C")
    ]
    table = breakdown(records)
    assert table["overall"]["all"]["n"] == 4 and table["overall"]["all"]["correct"] == 1
    assert table["flags"]["resolution"] == {"rule": 2, "unresolved": 2}
    assert table["flags"]["unresolved_reason"] == {"empty": 1, "alternatives": 1}
