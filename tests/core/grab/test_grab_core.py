"""GRAB protocol rules in scifig_tasks.core: prompt text, exact match, extraction, precision, aggregation, chance."""

from __future__ import annotations

import re

import pytest
from scipy.stats import binomtest

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.core import chance
from scifig_tasks.core.stats import Tally, wilson_interval
from tests.harness.paths import REPO

QUESTION = "What is the value of the gradient of the function? Give your answer as an integer."


def test_prompt_is_the_readme_prompt() -> None:
    # The README's triple-quoted template as Python evaluates it: leading newline, a newline before "If you are
    # unsure", two trailing newlines.
    assert grab.build_prompt("Q?") == (
        "\nQ?\n Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. Answer: \n\n"
    )
    assert grab.build_prompt("Q?", "paper") == (
        "Q?\n Only provide the answer, no reasoning steps. If you are unsure, still provide an answer. Answer:\n"
    )
    with pytest.raises(ValueError, match="unknown GRAB prompt variant 'chat'"):
        grab.build_prompt("Q?", "chat")


@pytest.mark.parametrize(
    ("output", "answer", "correct"),
    [
        (" 15.3", "15", True),  # worked example of the rule
        ("1", "10", False),  # worked example of the rule
        ("15", "15", True),
        ("\n\t 15 apples", "15", True),
        ("15", "15.0", False),
        ("-3", "3", False),
        ("[-10, -3]", "[-10, -3]", True),
        ("[-10,-3]", "[-10, -3]", False),
        ("y = -3x^2 + 1x - 3 is the equation", "y = -3x^2 + 1x - 3", True),
        ("", "5", False),
        (None, "5", False),
    ],
)
def test_exact_match(output: str | None, answer: str, correct: bool) -> None:
    assert grab.exact_match(output, answer) is correct


def test_extraction_prompt_is_the_papers() -> None:
    prompt = grab.extraction_prompt("Q?", "about 5")
    assert prompt.startswith('A generative model has been asked this question: "Q?" about a plot.\n The output from')
    assert ' is: "about 5"\n Extract just the answer from the generative model output.' in prompt
    assert prompt.endswith('without any additional text or explanation. If no answer is provided, return "None".')
    # The README code's template, evaluated: 4-space indents, "\n" escapes followed by real newlines.
    assert grab.extraction_prompt("Q?", "about 5", "readme") == (
        '    \n    A generative model has been asked this question: "Q?" about a plot.\n\n'
        '    The output from the model answering the question is: "about 5"\n\n'
        "    Extract just the answer from the generative model output. Maintain the same precision given by the model. "
        '\n    Convert any numbers to digits (e.g., "one" to "1"). '
        "Remove any additional terms like 'approximately'.\n"
        "    Return only the extracted numeric answer, without any additional text or explanation. If no answer is "
        'provided, return "None".\n    '
    )


@pytest.mark.parametrize(
    ("question", "precision"),
    [
        (QUESTION, "integer"),
        ("Estimate the mean variance of the functions shown in the plot. Give your answer to 1 decimal place.", "1dp"),
        ("What is the net area bounded by the function and x-axis? Give your answer to the nearest 10.", "nearest10"),
        (
            "What are the x-values of the two stationary points of the function? Write your answer in the form "
            "[x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2. Give your answer as an integer.",
            "list",
        ),
        (
            "What is the equation of the function? Write your answer in the form y = <m>x + <c>. "
            "Each variable is as an integer.",
            "equation",
        ),
    ],
)
def test_precision_from_question(question: str, precision: str) -> None:
    assert grab.precision_of(question) == precision
    # the paper's classes (Table 1): list and equation questions ask for integers
    paper = {"list": "integer", "equation": "integer"}.get(precision, precision)
    assert grab.precision_class(question) == paper


def test_record_carries_the_paper_class_and_the_answer_format() -> None:
    doc = {
        "pid": 3,
        "question": "What is the equation of the function? Write your answer in the form y = <m>x + <c>. "
        "Each variable is as an integer.",
        "answer": "y = 2x + 1",
        "task": "properties",
        "category": "Functions",
        "complexity": 0,
    }
    record = grab.sample_record(doc, grab.score_exact("y = 2x + 1", doc["answer"]))
    assert (record["precision"], record["answer_format"]) == ("integer", "equation")
    table = grab.breakdown([record])
    assert table["precision"] == {"integer": {"n": 1, "correct": 1, "accuracy": 1.0, "ci95": [0.2065, 1.0]}}
    assert list(table["answer_format"]) == ["equation"]


def test_extraction_scoring_never_falls_back_to_the_raw_output() -> None:
    assert grab.score_extracted("15", "15", "judge_failed", None).correct is False
    assert grab.score_extracted("15", "15", "judge_off", None).judge == "judge_off"
    assert grab.score_extracted("about 15", "15", "judged", " 15.2").correct is True
    assert grab.score_extracted("no idea", "15", "judged", "None").correct is False
    marker = "[LMMS_EVAL_REQUEST_FAILED after 5 retries] boom"
    assert grab.score_extracted(marker, "15", "judged", "15").output_status == "request_failed"


def test_request_failed_marker_is_flagged_and_wrong() -> None:
    score = grab.score_exact("[LMMS_EVAL_REQUEST_FAILED after 1 retries] 500", "[")
    assert (score.correct, score.output_status) == (False, "request_failed")


@pytest.mark.parametrize(("correct", "total"), [(0, 20), (7, 17), (20, 20), (1, 3)])
def test_wilson_interval_matches_scipy(correct: int, total: int) -> None:
    reference = binomtest(correct, total).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(correct, total)
    assert low == pytest.approx(reference.low, abs=1e-9) and high == pytest.approx(reference.high, abs=1e-9)


def test_group_breakdown_is_micro_and_exact() -> None:
    records = [
        {
            "task": t,
            "category": "Extrema",
            "complexity": c,
            "precision": "integer",
            "correct": ok,
            "output_status": "ok",
            "judge": "not_used",
        }
        for t, c, ok in [("function", 1, 1), ("function", 1, 0), ("function", 2, 1), ("series", 1, 1)]
    ]
    merged = grab.merge_breakdowns([grab.breakdown(records[:3]), grab.breakdown(records[3:])])
    assert merged == grab.breakdown(records)
    assert merged["complexity"]["1"]["correct"] == 2 and merged["complexity"]["1"]["n"] == 3
    assert merged["overall"]["all"]["accuracy"] == 0.75


def test_tally_keeps_flags() -> None:
    tally = Tally()
    tally.add(False, {"task": "series"}, {"output_status": "empty"})
    assert tally.to_dict()["flags"] == {"output_status": {"empty": 1}}


FORMATS = {
    "integer": re.compile(r"-?\d+"),
    "1dp": re.compile(r"-?\d+\.\d"),
    "nearest10": re.compile(r"-?\d*0"),
    "list": re.compile(r"\[-?\d+, -?\d+\]"),
    "equation": re.compile(r"y = -?\d+x\^2 [+-] \d+x [+-] \d+"),
}


@pytest.mark.parametrize(
    ("question", "precision"),
    [
        (QUESTION, "integer"),
        ("What is the Pearson's correlation coefficient of the data? Give your answer to 1 decimal place.", "1dp"),
        ("What is the total area bounded by the function and x-axis? Give your answer to the nearest 10.", "nearest10"),
        (
            "What are the x-values of the two stationary points of the function? Write your answer in the form "
            "[x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2. Give your answer as an integer.",
            "list",
        ),
        (
            "What is the equation of the function? Write your answer in the form y = <a>x^2 + <b>x + <c>. "
            "Each variable is as an integer.",
            "equation",
        ),
    ],
)
def test_chance_guesses_in_the_answer_format(question: str, precision: str) -> None:
    prompt = grab.build_prompt(question)
    guesses = [chance.guess(prompt, "grab", seed=0, salt=str(i)) for i in range(40)]
    assert all(FORMATS[precision].fullmatch(guess) for guess in guesses), guesses
    assert len(set(guesses)) > 3  # independent draws per question
    assert guesses == [chance.guess(prompt, "grab", seed=0, salt=str(i)) for i in range(40)]  # reproducible
    if precision == "list":
        assert all(int(g[1:-1].split(",")[0]) < int(g[1:-1].split(",")[1]) for g in guesses)
    if precision == "1dp" and "correlation" in question:
        assert all(-1.0 <= float(g) <= 1.0 for g in guesses)


def test_chance_picks_option_letters_uniformly() -> None:
    prompt = "Which caption?\nA) one\nB) two\nC) three\nD) four\nE) five\nAnswer:"
    picks = [chance.guess(prompt, "scifibench", seed=3, salt=str(i)) for i in range(2000)]
    counts = {letter: picks.count(letter) for letter in "ABCDE"}
    assert set(picks) == set("ABCDE")
    assert all(330 <= count <= 470 for count in counts.values()), counts


def test_chance_reads_mmsci_option_lines() -> None:
    from scifig_tasks.benchmarks.mmsci import rules as mmsci

    prompt = mmsci.mcq_prompt(mmsci.FIG2CAP_QUESTION, ["Title one", "Title two", "Title three", "Title four"])
    assert chance.option_letters(prompt) == ["A", "B", "C", "D"]
    assert chance.option_letters("(A) one\n(B) two") == ["A", "B"]
    assert chance.option_letters("Answer: 15\nNote: rounded") == []  # lines with words before a colon are no options


def test_task_yaml_and_core_name_the_same_published_data() -> None:

    import yaml

    from scifig_tasks.benchmarks.grab.source import GRAB, grab_features

    template = REPO / "scifig_tasks" / "benchmarks" / "grab" / "tasks" / "_default_template_yaml"
    text = "\n".join(line for line in template.read_text().splitlines() if "!function" not in line)
    config = yaml.safe_load(text)
    assert (config["dataset_path"], config["test_split"]) == (GRAB.hub_path, GRAB.default_split)
    assert config["metadata"]["scifig_source"] == "grab"
    assert [column.name for column in GRAB.columns] == list(grab_features())


def test_lmms_eval_hooks_put_text_first_and_switch_to_the_appendix_wording() -> None:
    from PIL import Image

    from scifig_tasks.benchmarks.grab.tasks import utils

    doc = {"question": "Q?", "decoded_image": Image.new("RGB", (4, 3), (255, 255, 255))}
    (message,) = utils.grab_doc_to_messages(doc)
    assert [part["type"] for part in message["content"]] == ["text", "image"]
    assert message["content"][0]["text"] == (
        "\nQ?\n Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. Answer: \n\n"
    )
    # lmms-eval merges `lmms_eval_specific_kwargs: {default: {prompt: paper}}` into the kwargs it passes
    paper = utils.grab_doc_to_text(doc, {"default": {"prompt": "paper"}, "prompt": "paper"})
    assert (
        paper
        == "Q?\n Only provide the answer, no reasoning steps. If you are unsure, still provide an answer. Answer:\n"
    )
