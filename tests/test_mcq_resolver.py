"""The multiple-choice resolver: resolves every output stating one answer, refuses the rest, never guesses."""

from __future__ import annotations

import pytest

from scifig_tasks.core.mcq import judge_prompt, parse_judge_reply, resolve_by_rules

OPTIONS = [
    "A) a plot of the loss over training steps .",
    "B)  the architecture of the proposed network .",
    "C) comparison of runtime on three datasets .",
    "D) north-south flow duration curves for the basin .",
    "E) expected lookup cost as a function of load factor .",
]

RESOLVED = {
    "D) north-south flow duration curves for the basin .</s>": "D",  # the spec's examples
    "The correct caption that best describes the image is: E) expected lookup cost": "E",
    "**C**": "C",
    "Answer: (B)": "B",
    "C": "C",
    "C.": "C",
    "(D)": "D",
    "E) A plot of the expected lookup cost": "E",  # option text starting with the word "A"
    "A) a plot of the loss over training steps": "A",
    "answer: d": "D",
    "the answer is a plot of the loss": None,  # no letter, only part of an option's text: left to the judge
    "ANSWER: D": "D",
    "Final answer - C": "C",
    "The answer is B because the figure shows layers.": "B",
    "<answer>E</answer>": "E",
    "\\boxed{C}": "C",
    "\\boxed{\\text{B}}": "B",
    "I would pick option B.": "B",
    "Image D best matches the caption.": "D",
    "The correct caption is C": "C",
    "Looking at the axes, the curves show flow duration... Therefore, the answer is D.": "D",
    "<think>Maybe A? Or B? Let me check. Option C fits.</think>\nAnswer: E": "E",
    "comparison of runtime on three datasets": "C",  # the text of exactly one option
    "Answer: A comparison of runtime on three datasets": "C",  # the article "A", quoting option C
    "Answer: A plot of the loss": "A",  # article or letter, both mean A
    "Answer: A because the curve decreases": "A",
}

REFUSED = {
    "": "empty",
    "   ": "empty",
    "[LMMS_EVAL_REQUEST_FAILED after 5 retries] timeout": "request_failed",
    "\n".join(OPTIONS): "several options echoed",
    "B or C": "alternatives",
    "It is either (B) or (C).": "alternatives",
    "Answer: B\nAnswer: C": "conflicting answers ['B', 'C']",
    "I cannot determine which caption matches.": "no option named",
    "Sorry, I can't help with that.": "no option named",
}


@pytest.mark.parametrize("output", sorted(RESOLVED))
def test_resolves_outputs_that_state_one_answer(output: str) -> None:
    resolution = resolve_by_rules(output, OPTIONS)
    assert resolution.letter == RESOLVED[output], resolution
    assert resolution.method == ("rule" if RESOLVED[output] else "unresolved")


@pytest.mark.parametrize("output", sorted(REFUSED))
def test_refuses_outputs_without_a_single_answer(output: str) -> None:
    resolution = resolve_by_rules(output, OPTIONS)
    assert (resolution.letter, resolution.method, resolution.reason) == (None, "unresolved", REFUSED[output])


def test_none_output_is_refused() -> None:
    assert resolve_by_rules(None, OPTIONS).reason == "empty"


def test_letters_beyond_the_options_are_not_answers() -> None:
    assert resolve_by_rules("Answer: E", OPTIONS[:4]).letter is None
    assert resolve_by_rules("Answer: D", OPTIONS[:4]).letter == "D"


def test_judge_prompt_is_the_papers_and_its_reply_is_parsed_strictly() -> None:
    prompt = judge_prompt("I think B", 5)
    assert prompt == (
        "Here is the output from a generative model:\nI think B\nThe output contains the answer to a multiple "
        "choice question with options A) - E). Return only the letter of the answer. If no answer is found, "
        "return None."
    )
    assert parse_judge_reply("B", 5) == "B"
    assert parse_judge_reply(" C)", 5) == "C"
    assert parse_judge_reply("None", 5) is None
    assert parse_judge_reply("B or C", 5) is None
    assert parse_judge_reply("F", 5) is None
    assert parse_judge_reply(None, 5) is None


class RecordingJudge:
    """Stands in for JudgeClient: records prompts, replies from a fixed text (None = the call failed)."""

    def __init__(self, reply: str | None) -> None:
        self.reply, self.prompts = reply, []

    def complete(self, prompt: str, *, max_tokens: int | None = None):
        from scifig_tasks.core.judge import JudgeResult

        self.prompts.append((prompt, max_tokens))
        if self.reply is None:
            return JudgeResult(status="judge_failed", text=None, error="HTTP 500")
        return JudgeResult(status="judged", text=self.reply)


def test_judge_is_asked_only_for_refused_outputs() -> None:
    from scifig_tasks.core.mcq import resolve

    judge = RecordingJudge("C")
    assert resolve("Answer: B", OPTIONS, judge).method == "rule"
    assert resolve("", OPTIONS, judge).reason == "empty"
    assert resolve("[LMMS_EVAL_REQUEST_FAILED after 1 retries] x", OPTIONS, judge).letter is None
    assert judge.prompts == []
    judged = resolve("B or C", OPTIONS, judge)
    assert (judged.letter, judged.method) == ("C", "judge")
    assert judge.prompts == [(judge_prompt("B or C", 5), 3)]


@pytest.mark.parametrize("reply", [None, "None", "B or C"])
def test_a_failed_or_empty_judgement_stays_unresolved(reply: str | None) -> None:
    from scifig_tasks.core.mcq import resolve

    resolution = resolve("B or C", OPTIONS, RecordingJudge(reply))
    assert (resolution.letter, resolution.method) == (None, "unresolved")


def test_every_corpus_style_is_resolved_or_refused_as_written() -> None:
    from tests.harness.mcq_corpus import STYLES
    from tests.harness.scifibench_data import options_for

    for qid in range(5):
        options = options_for(qid)
        for index, letter in enumerate("ABCDE"):
            other = "ABCDE"[(index + 1) % 5]
            for style in STYLES:
                output = style.render(letter, options[index][3:].strip(), other, options)
                expected = letter if style.states_answer else None
                assert resolve_by_rules(output, options).letter == expected, (style.name, output)


@pytest.mark.parametrize(
    ("output", "expected"),
    [("2", None), ("-2", "A"), ("about 0.45", None), ("0.4", "B"), ("The answer is 0.4 I think", "B"), ("2.0", None)],
)
def test_numeric_option_text_needs_the_exact_number(output: str, expected: str | None) -> None:
    options = ["A) -2", "B) 0.4", "C) 3", "D) 5.5", "E) 7"]
    assert resolve_by_rules(output, options).letter == expected
