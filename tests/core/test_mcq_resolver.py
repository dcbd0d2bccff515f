"""The multiple-choice resolver: a letter only where the output commits to it; hedges, negations, mentions and
judge replies that name no single letter are never credited; resolution is linear in the output's length."""

from __future__ import annotations

import signal

import pytest

from scifig_tasks.core.judge import JudgeResult
from scifig_tasks.core.multiple_choice import (
    judge_prompt,
    lower_case_labels_free,
    parse_judge_reply,
    resolve_by_rules,
    resolve_choice,
)
from tests.harness.mcq_corpus import CHATTY

OPTIONS = [
    "A) a plot of the loss over training steps .",
    "B)  the architecture of the proposed network .",
    "C) comparison of runtime on three datasets .",
    "D) north-south flow duration curves for the basin .",
    "E) expected lookup cost as a function of load factor .",
]

RESOLVED = {
    "D) north-south flow duration curves for the basin .</s>": "D",  # worked examples
    "The correct caption that best describes the image is: E) expected lookup cost": "E",
    "**C**": "C",
    "Answer: (B)": "B",
    "C": "C",
    "C.": "C",
    "(D)": "D",
    "E) A plot of the expected lookup cost": "E",  # option text starting with the word "A"
    "A) a plot of the loss over training steps": "A",
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
    "the answer is a plot of the loss": "A",  # a truncated quote of option A only
    "The answer is A. Caption D is wrong.": "A",  # the answer opens the output: later mentions do not matter
    "Answer: B. Answer: C. Final answer: C": "C",  # a closing final answer settles an earlier one
    # plain statements
    "Caption D describes the figure best, because the axes match.": "D",
    "It is D.": "D",
    "Comparing the captions, the right option would be A.": "A",
    "C C": "C",
    "Question: Which caption? Choices: (A) a plot (B) the architecture (C) runtime (D) flow (E) cost Answer: A": "A",
    "Question: Which caption?\nChoices:\n(A) a plot\n(B) the architecture\n(C) runtime\nAnswer: A": "A",
    "The answer is closest to option (E): expected lookup cost": "E",
    "A is the right angle of the triangle, so the answer is D.": "D",  # "right angle" is no verdict
    "Let E = I / d^2, so E = 3. The answer is (C).": "C",  # a letter before an operator is a variable
    "Answer: \\( \\text{E} \\)": "E",
    "So, the final answer is $\\boxed{\\textbf{(A)}\\ 70^{\\circ}}.$": "A",
    # reasoning wrappers and invisible characters
    "<think>A or B? Caption D fits the axes. <answer>D</answer>": "D",  # the tag is outside completed reasoning
    "C</think>\n": "C",
    "\u200bC": "C",
    "\ufeffB) the architecture of the proposed network": "B",
    # the answer, then a walk through the other options
    "The figure shows layers. The correct answer is 'B': the architecture.\n\nOption 'A' is incorrect: no loss."
    "\nOption 'C' is incorrect: no runtime.": "B",
    "Caption D describes the figure best.\n\n'A': a loss curve, not shown.\n'C': runtimes, not shown.": "D",
    "Option A, a plot of the loss over training steps, is the best choice.": "A",
    "Answer: B\nOption A: a loss curve, not shown.\nOption C: runtimes, not shown.": "B",
    "Therefore, Option E (expected lookup cost as a function of load factor) is the correct answer.": "E",
    "The caption is most likely describing layers, so Option B (the architecture of the proposed network) is the "
    "most likely.": "B",
    # an echoed option list, then the answer
    "Therefore, the caption is:\n(A) a plot\n(B) the architecture\n(C) runtime\n\nThe correct answer is (B).": "B",
    # a passive verdict, and a phrase between the answer noun and its copula
    "The figure is best described by caption B, since it plots the layers of the network.": "B",
    "Looking at the pattern, the correct choice to replace the question mark would be B.": "B",
    # the answer, then options echoed word for word: a repeat of the question, not a second answer
    "Caption A shows a loss curve and caption C runtimes, and the answer is D.\n\nE) expected lookup cost as a "
    "function of load factor .": "D",
    "Caption A fits the axes. The answer is D.\n"
    + "\n".join(option for option in OPTIONS if not option.startswith("D")): "D",
    # Chinese answer lines
    "选项A中，错误。选项B中，正确。【答案】B <eoa>": "B",
    "所以选C。": "C",
}

REFUSED = {
    "": "empty",
    "   ": "empty",
    "<think>A long derivation that never ends": "reasoning only",
    "[LMMS_EVAL_REQUEST_FAILED after 5 retries] timeout": "request_failed",
    "\n".join(OPTIONS): "several options echoed",
    "B or C": "alternatives",
    "It is either (B) or (C).": "alternatives",
    "Answer: B or C": "alternatives",
    "Answer: B\nAnswer: C": "conflicting answers ['B', 'C']",
    "I cannot determine which caption matches.": "no answer stated",
    "Sorry, I can't help with that.": "no answer stated",
    "answer: d": "no answer stated",  # a lower-case letter is not read (in MMSci "(d)" names a sub-figure)
    "Caption A fits the axes. The answer is D. Caption B fits the legend.": "answer amid other options",
    "Answer: A. " * 80: "repetitive output",
    # enumerations and walks through the options state no single answer
    "So the matching captions are:\nB) the architecture\nC) comparison of runtime\nD) flow curves": "alternatives",
    "Answer: B) the architecture of the proposed network .\nC) comparison of runtime on three datasets .": (
        "alternatives"
    ),
    "The matching captions are B) the architecture of the proposed network, C) comparison of runtime": ("alternatives"),
    "Option C: shows the runtime. Option D: shows the flow duration.": "several options echoed",
    "Option C: shows the runtime.\nOption D: shows the flow duration.": "several options echoed",
    "I think the answer is C because of the axes.\nSo C.</think>": "reasoning only",  # no label opens it
    "So, the correct answer is 'A': 'expected lookup cost as a function of load factor'.": (
        "conflicting answers ['A', 'E']"  # the label of one option with the text of another
    ),
    "A seems plausible. The answer is B.\n\nOption C: wrong.\nOption D: wrong.": "answer amid other options",
    "The answer is B.\n\nOption A: wrong.\nOption C: also correct.": "conflicting answers ['B', 'C']",
    "The figure shows layers. The answer is B.\n\nOption A: wrong.\nOption C: also plausible.\nOption D: wrong.": (
        "answer amid other options"
    ),
    # near-misses of the passive verdict, the answer noun's phrase and the echoed options
    "The figure is best described by caption B or C.": "alternatives",
    "Is it caption B? No, the axes differ.": "no answer stated",
    "Is the figure best described by caption B? The legend differs.": "no answer stated",
    "The correct choice to replace the question mark would be B if the pattern repeated, but it does not.": (
        "no answer stated"
    ),
    "The answer would be B, but the axes are not linear.": "no answer stated",
    "Caption A shows a loss curve, and the answer is D.\n\nE) expected lookup cost as a function of load factor .: "
    "also plausible.": "answer amid other options",  # more than the option's text: a second opinion
    "A) a loss curve: no.\nB) layers: maybe.\nC) runtimes: no.\nD) flow curves: maybe.\nE) lookup cost: no.": (
        "several options echoed"  # a walk through every option that never concludes
    ),
}


@pytest.mark.parametrize("output", sorted(RESOLVED))
def test_resolves_outputs_that_commit_to_one_answer(output: str) -> None:
    resolution = resolve_by_rules(output, OPTIONS)
    assert (resolution.letter, resolution.method) == (RESOLVED[output], "rule"), resolution


@pytest.mark.parametrize("output", sorted(REFUSED))
def test_refuses_outputs_without_a_single_answer(output: str) -> None:
    resolution = resolve_by_rules(output, OPTIONS)
    assert (resolution.letter, resolution.method, resolution.reason) == (None, "unresolved", REFUSED[output])


TEN_OPTIONS = [f"{letter}) the value {index + 1}.5 m" for index, letter in enumerate("ABCDEFGHIJ")]


@pytest.mark.parametrize("item", ["{L}. {T}", "({L}) {T}", "{L}) {T}", "{L}: {T}"])
def test_a_list_of_every_option_is_no_answer_whatever_its_line_format(item: str) -> None:
    """Repeating the question and all its options states nothing; an answer after the list still counts."""
    listed = "The options are:\n" + "\n".join(item.format(L=option[0], T=option[3:]) for option in TEN_OPTIONS)
    resolution = resolve_by_rules(listed, TEN_OPTIONS)
    assert (resolution.letter, resolution.reason) == (None, "alternatives")
    assert resolve_by_rules(f"{listed}\n\nThe answer is (C).", TEN_OPTIONS).letter == "C"
    assert resolve_by_rules(f"{listed}\nSo the answer is J.", TEN_OPTIONS).letter == "J"


def test_a_label_followed_by_its_own_text_is_that_option_whatever_letters_the_text_names() -> None:
    options = ["A) Option C in the figure", "B) Option D in the figure", "C) none", "D) both"]
    assert resolve_by_rules("(B) Option D in the figure", options).letter == "B"
    assert resolve_by_rules("The answer is (B) Option D in the figure.", options).letter == "B"
    assert resolve_by_rules("(B) Option D", options).letter is None  # the text is not B's: D is mentioned


LOWER_CASE = {
    "(d) north-south flow duration curves for the basin": "D",  # confirmed by the option's own text
    "answer: b": "B",  # the whole first line
    "b": "B",
    "(a)\n\nThe curve decreases over training.": "A",
    "The answer is (c) comparison of runtime on three datasets.": "C",
    "(b) shows the layers of the network.": None,  # a panel of the figure, not the option's text
    "The curve is a plot of the loss over training steps, but the answer is (b).": None,  # "a" is the article
    "The answer is (b).": None,  # neither opening the output nor confirmed by its text
    "a plot of the loss": "A",  # the quoted text of option A, as before
}


@pytest.mark.parametrize("output", sorted(LOWER_CASE))
def test_lower_case_labels_name_options_only_where_the_question_uses_none(output: str) -> None:
    question = "Which caption best matches the image?"
    assert resolve_by_rules(output, OPTIONS, question=question).letter == LOWER_CASE[output]
    if output in ("answer: b", "b", "(a)\n\nThe curve decreases over training."):  # the label alone decides
        assert resolve_by_rules(output, OPTIONS).letter is None  # the question unknown: upper case only
        assert resolve_by_rules(output, OPTIONS, question="Panels (a) and (b) show the loss.").letter is None
        assert resolve_by_rules(output, [*OPTIONS[:4], "E) (c) runtime"], question=question).letter is None


def test_lower_case_labels_free() -> None:
    assert lower_case_labels_free("Which caption best matches the image?", OPTIONS)
    assert not lower_case_labels_free("Which option describes sub-figure (c)?", OPTIONS)
    assert not lower_case_labels_free("Pick one.", ["A) b) the second panel", "B) x"])
    assert not lower_case_labels_free("Pick one:\na. first\nb. second", [])


@pytest.mark.parametrize(("output", "stated"), CHATTY, ids=[output[:40] for output, _ in CHATTY])
def test_chatty_outputs_resolve_to_the_letter_they_state_or_to_none(output: str, stated: str | None) -> None:
    """The answer wins over discussed, rejected and compared letters; mentions, point names, hedges and negations
    never decide (the issue's real failure cases among them)."""
    assert resolve_by_rules(output, OPTIONS).letter == stated


def test_the_judge_off_never_credits_a_hedge_or_a_negation() -> None:
    for output in ("Answer: B or C", "The answer is not option A", "Option A is incorrect.", "Not option D."):
        resolution = resolve_choice(output, OPTIONS, judge=None)
        assert (resolution.letter, resolution.method) == (None, "unresolved"), output


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
    assert parse_judge_reply("Answer: D", 5) == "D"
    for reply in ("None", "N/A", "None of these; A", "B or C", "F", "", None):
        assert parse_judge_reply(reply, 5) is None, reply


class RecordingJudge:
    """Stands in for JudgeClient: records prompts, replies from a fixed text (None = the call failed)."""

    def __init__(self, reply: str | None) -> None:
        self.reply, self.prompts = reply, []

    def complete(self, prompt: str, *, max_tokens: int | None = None, **settings: object) -> JudgeResult:
        self.prompts.append((prompt, max_tokens))
        if self.reply is None:
            return JudgeResult(status="judge_failed", text=None, error="HTTP 500")
        return JudgeResult(status="judged", text=self.reply)


def test_judge_is_asked_only_for_refused_outputs() -> None:
    judge = RecordingJudge("C")
    assert resolve_choice("Answer: B", OPTIONS, judge).method == "rule"
    assert resolve_choice("", OPTIONS, judge).reason == "empty"
    assert resolve_choice("[LMMS_EVAL_REQUEST_FAILED after 1 retries] x", OPTIONS, judge).letter is None
    assert judge.prompts == []
    judged = resolve_choice("B or C", OPTIONS, judge)
    assert (judged.letter, judged.method) == ("C", "judge")
    assert judge.prompts == [(judge_prompt("B or C", 5), 3)]


@pytest.mark.parametrize("reply", [None, "None", "N/A", "None of these; A", "B or C"])
def test_a_failed_or_empty_judgement_stays_unresolved(reply: str | None) -> None:
    resolution = resolve_choice("B or C", OPTIONS, RecordingJudge(reply))
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
    [("2", None), ("-2", "A"), ("about 0.45", None), ("0.4", "B"), ("The answer is 0.4.", "B"), ("2.0", None)],
)
def test_numeric_option_text_needs_the_exact_number(output: str, expected: str | None) -> None:
    options = ["A) -2", "B) 0.4", "C) 3", "D) 5.5", "E) 7"]
    assert resolve_by_rules(output, options).letter == expected


MEGABYTE = 1_000_000
ADVERSARIAL = {
    "nested think tags": "<think>" * (MEGABYTE // 7),
    "unclosed think blocks": "<think> maybe A or B " * (MEGABYTE // 21),
    "repeated think blocks": "<think>A</think>" * (MEGABYTE // 16),
    "answer statements": "The answer is A. " * (MEGABYTE // 17),
    "near-miss verdicts": "Option A is not correct. " * (MEGABYTE // 25),
    "bare letters": "A " * (MEGABYTE // 2),
    "markup": "*" * MEGABYTE,
    "labels in markup": "**A** " * (MEGABYTE // 6),
    "unclosed boxes": "\\boxed{" * (MEGABYTE // 7),
    "quoted option": "a plot of the loss over training steps " * (MEGABYTE // 39),
    "prose": "The curve rises steeply and then flattens, matching the caption's description. " * (MEGABYTE // 80),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_megabyte_of_adversarial_output_never_hangs_the_resolver(name: str) -> None:
    """Every pattern repeats a bounded number of times, so no output makes a rule backtrack without end: a megabyte of
    each adversarial shape is resolved (to whatever it states). A hang guard, not a speed figure: the seconds it takes
    are printed by ``python -m tests.perf.bench_mcq_resolver``."""
    output = ADVERSARIAL[name]
    assert len(output) > 0.9 * MEGABYTE

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"{name}: the resolver was still running after 60 s (catastrophic backtracking)")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        resolution = resolve_by_rules(output, OPTIONS)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert resolution.letter in (None, *"ABCDE")
