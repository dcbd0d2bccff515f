"""CharXiv's default-protocol rules: a response committed to one answer is decided where every rubric of the authors
(Wang et al., NeurIPS 2024) gives the same score; the rest goes to the judge (None)."""

from __future__ import annotations

import pytest

from scifig_tasks.benchmarks.charxiv.rules import committed, rule_verdict


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("60", "60"),
        ("  **60**.  ", "60"),
        ('"Ours-AL, Ours-AL-MML"', "Ours-AL, Ours-AL-MML"),
        ("\u201cTrain  Accuracy\u201d", "Train Accuracy"),
        ("`SBC w/o  multiple test adj.`", "SBC w/o multiple test adj."),
        ("1.0", "1.00"),
        ("1.5e3", "1500"),
        ("\u22120.5", "-0.5"),
        (".5", "0.50"),
        ("Not Applicable", "Not Applicable"),
        ("not applicable.", "Not Applicable"),
        ("Yes", "yes"),
        ("**No**", "No"),
        ("2 by 3", "2 by 3"),
    ],
)
def test_right_by_rule(response: str, answer: str) -> None:
    assert rule_verdict(response, answer) is True


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("5", "6"),
        ("0.012", "0.01"),
        ("-1", "1"),
        ("0", "Not Applicable"),
        ("Not Applicable", "4"),
        ("Yes", "No"),
        ("no.", "Yes"),
        ("Yes", "Not Applicable"),
        ("Not Applicable", "No"),
        ("", "60"),
        ("  ** **  ", "Not Applicable"),
    ],
)
def test_wrong_by_rule(response: str, answer: str) -> None:
    assert rule_verdict(response, answer) is False


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("The answer is 60.", "60"),  # not committed to a bare answer
        ("60\n\nBecause the top tick reads 60.", "60"),
        ("user score", "User Score"),  # case may matter (units, symbols): the judge says
        ("\u03c6, \u03c8", "\u03a6, \u03c8"),
        ("1,000", "1000"),  # thousands separators and lists look alike
        ("10^{-2}", "0.01"),
        ("50%", "50"),
        ("5 ms", "5"),
        ("Increases", "Decreases then increases"),
        ("Not Applicable", "None"),  # only numbers and Yes/No are decided against Not Applicable
        ("Yes", "Yes, partially"),
        ("A, B", "B, A"),
        ("N/A", "Not Applicable"),
    ],
)
def test_left_to_the_judge(response: str, answer: str) -> None:
    assert rule_verdict(response, answer) is None


def test_committed_answer() -> None:
    assert committed(' **"Joint-CNN".** ') == "Joint-CNN"
    assert committed("3.14.") == "3.14"
    assert committed("Wait...") == "Wait..."  # an ellipsis is not a final period
    assert committed("'a' and 'b'") == "'a' and 'b'"  # not one quoted answer
    assert committed('"60."') == committed('"60".') == "60"
    assert committed('"a".') == "a" and committed("a..") == "a.."
    assert committed("**") == "**"
