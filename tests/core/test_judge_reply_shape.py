"""Every reader of a judge reply against replies that are no answer: an error text, a refusal, a bare status code, a
sentence where a bare letter is asked, an HTML error page. A reply is an answer only in the shape its prompt asked
for (or, for the readers of free text, when it is not plainly something else); the real replies nearby stay answers.

The judge client asks again for a reply its caller's check refuses and never caches it
(``tests/core/test_judge_reliability.py``); these tests pin the checks themselves.
"""

from __future__ import annotations

import pytest

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.mmsci import judged_metrics as judged
from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.core import multiple_choice as mcq
from scifig_tasks.core import multiple_choice_paper as mcq_paper
from scifig_tasks.core.judge import replies
from scifig_tasks.core.judge.replies import JudgeResult
from tests.harness.grab_data import EQUATION_QUESTION as EQUATION
from tests.harness.grab_data import LIST_QUESTION as LIST

HTML_PAGE = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
    "<hr><center>nginx</center>\r\n</body>\r\n</html>"
)
HTML_SNIPPET = "<html><body><h1>Service Unavailable</h1></body></html>"
HOSTILE = (
    "Error 503: upstream overloaded",
    "I cannot help with that.",
    "500",
    "Answer: B",
    HTML_PAGE,
    HTML_SNIPPET,
)
"""Hostile judge replies: none is an answer to any judge prompt here (``500`` aside, see the GRAB tests)."""

INTEGER = "What is the value of the y-intercept of the function? Give your answer as an integer."
ONE_DP = "Estimate the mean variance of the functions shown in the plot. Give your answer to 1 decimal place."
NEAREST_10 = "What is the net area bounded by the function and x-axis? Give your answer to the nearest 10."
QUESTIONS = {"integer": INTEGER, "1dp": ONE_DP, "nearest10": NEAREST_10, "list": LIST, "equation": EQUATION}


def grab_readable(reply: str, question: str) -> bool:
    return grab.extraction_reply_readable(reply, grab.precision_of(question))


# ---- GRAB's extraction -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer_format", list(QUESTIONS))
@pytest.mark.parametrize(
    "reply",
    [
        *(reply for reply in HOSTILE if reply != "500"),
        "Error 404",
        "I'm sorry, but I can't help with that.",
        "The answer is 15",
        "approximately 15",
        "15 cm",
        "x = 3",
        "N/A",
        "",
    ],
)
def test_grab_refuses_replies_that_are_not_the_answer_alone(reply: str, answer_format: str) -> None:
    assert not grab_readable(reply, QUESTIONS[answer_format])  # before: any reply holding a digit was an answer


@pytest.mark.parametrize(
    ("answer_format", "accepted", "refused"),
    [
        ("integer", ["15", "-3", "3.14", " 15 ", '"15"', "15.", "1,575", "500"], ["[1, 2]", "y = 2x + 1", "15 15"]),
        ("1dp", ["2.5", "-0.3", "3.14", "2", "'2.5'."], ["[2.5, 3]", "2.5 units"]),
        ("nearest10", ["30", "-40", "35"], ["30s", "about 30"]),
        ("list", ["[1, 2, 3]", "[-2, 3]", "[-2,3]", "-2, 3", "[2]", '"[1, 2]".'], ["500", "3.14", "[1, two]", "y = 2"]),
        (
            "equation",
            ["y = 2x + 1", "y = -3x^2 + 1x - 3", "y = 2sin(-9x + 7) + 6", "y=2x+1", "y = 0.5x - 2.", "y = 2x\u00b2"],
            ["500", "2x + 1", "[1, 2]", "y = Error 503", "y ="],
        ),
    ],
)
def test_grab_reads_the_answer_in_the_format_the_question_asks_for(
    answer_format: str, accepted: list[str], refused: list[str]
) -> None:
    question = QUESTIONS[answer_format]
    assert grab.precision_of(question) == answer_format
    assert [reply for reply in accepted if not grab_readable(reply, question)] == []
    assert [reply for reply in refused if grab_readable(reply, question)] == []


@pytest.mark.parametrize("reply", ["None", " None ", '"None"', "None.", "none"])
@pytest.mark.parametrize("answer_format", list(QUESTIONS))
def test_grab_none_stays_the_prompts_no_answer(reply: str, answer_format: str) -> None:
    assert grab_readable(reply, QUESTIONS[answer_format])
    assert grab.score_extracted("no idea", "15", "judged", reply).correct is False


def test_grab_scores_an_accepted_reply_as_the_authors_code_does() -> None:
    """Quotes and a final period make a reply no less an answer, but the ablation scores the reply as the authors'
    code does (leading white space stripped, truncated to the answer's length, compared): ``15.`` and `` 15 `` are
    right, a quoted ``"15"`` is not."""
    for reply in ('"15"', "15.", "'15'.", " 15 "):
        assert grab_readable(reply, QUESTIONS["integer"]), reply
    replies = ('"15"', "15.", " 15 ")
    right = {reply: grab.score_extracted("about 15", "15", "judged", reply).correct for reply in replies}
    assert right == {'"15"': False, "15.": True, " 15 ": True}
    assert grab.score_extracted("y = 2x + 1", "y = 2x + 1", "judged", "y = 2x + 1.").correct is True


def test_grab_a_pathological_reply_is_refused_quickly() -> None:
    assert not grab_readable("y = " + "1x" * 50_000 + "!", EQUATION)
    assert not grab_readable("[" + "1, " * 50_000 + "x]", LIST)


# ---- multiple choice: the parsing prompt (SciFIBench, MMSci, GRAB's ablation, the audit) ---------------------------


@pytest.mark.parametrize("n_options", [5, 26])
@pytest.mark.parametrize(
    "reply",
    [
        *HOSTILE,
        "E: upstream overloaded",  # before: read as E
        "I'm sorry, I can't help with that.",  # before: read as I among 26 letters (the audit)
        "The answer is B",
        "Option B",
        "B or C",
        "N/A",
        "b",
        "",
    ],
)
def test_multiple_choice_refuses_replies_that_are_not_a_letter_alone(reply: str, n_options: int) -> None:
    assert not mcq.judge_reply_readable(reply, n_options)


@pytest.mark.parametrize(
    "reply", ["B", " C)", "(B)", "**B**", "B.", "'B'", "`B`", "[B]", "B\n", "None", "none.", "NONE"]
)
def test_multiple_choice_reads_a_letter_alone(reply: str) -> None:
    assert mcq.judge_reply_readable(reply, 5)
    expected = None if "none" in reply.lower() else reply.strip(" \n()[]*'`.")
    assert mcq.parse_judge_reply(reply, 5) == expected  # what the check accepts, the reader reads


def test_multiple_choice_letters_beyond_the_options_are_refused() -> None:
    assert not mcq.judge_reply_readable("F", 5)
    assert mcq.judge_reply_readable("I", 26)


class FixedJudge:
    """Stands in for JudgeClient: one reply, kept only when the caller's check accepts it (as the client does)."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def complete(self, prompt: str, *, accept, **settings: object) -> JudgeResult:
        if not accept(self.reply):
            return JudgeResult(status="judge_failed", text=None, error="not the answer asked for")
        return JudgeResult(status="judged", text=self.reply)


@pytest.mark.parametrize("reply", [*HOSTILE, "E: upstream overloaded"])
def test_multiple_choice_hostile_replies_leave_the_answer_unresolved_and_flagged(reply: str) -> None:
    options = ["A) x", "B) y", "C) z", "D) w", "E) v"]
    resolution = mcq.resolve_choice("It could be A or B.", options, FixedJudge(reply))
    assert (resolution.letter, mcq.judge_use(resolution.method, resolution.reason)) == (None, "judge_failed")
    paper = mcq_paper.resolve_scifibench("It could be A or B.", options, FixedJudge(reply))
    assert (paper.letter, paper.reason) == (None, "judge failed")


# ---- MMSci's paper protocol (the authors' reader of a free reply) ---------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        *(reply for reply in HOSTILE if reply != "Answer: B"),
        "ERROR: B",  # before: the authors' reader took "R:" -> R
        "I'm sorry, I can't help with that.",  # before: " I " -> I
        "Sorry, I cannot determine that.",
        "E: upstream overloaded",  # before: "E:" -> E
        "<h2>Too Many Requests</h2>",
    ],
)
def test_mmsci_paper_refuses_replies_that_are_plainly_not_answers(reply: str) -> None:
    assert not replies.says_something(reply)
    resolution = mcq_paper.resolve_mmsci("It could be A or B.", "Q?\nA: x\nB: y", FixedJudge(reply))
    assert (resolution.letter, resolution.reason) == (None, "judge failed")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("B", "B"),
        ("The correct answer is B.", "B"),
        ("**Answer**: c", "C"),
        ("Answer: B", None),  # a real reply the authors' reader reads as no label: their reading is kept
        ("The analysis does not state a final choice.", None),
        ("I cannot determine the answer from the analysis.", None),
    ],
)
def test_mmsci_paper_keeps_the_authors_reading_of_real_replies(reply: str, label: str | None) -> None:
    assert replies.says_something(reply)
    resolution = mcq_paper.resolve_mmsci("It could be A or B.", "Q?\nA: x\nB: y", FixedJudge(reply))
    assert resolution.letter == label
    assert resolution.reason == ("paper parse" if label else "judge reply names no label")


# ---- Plot Twist's reformatting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [*HOSTILE, "The answer is 5", "I hope the answer is correct."])
def test_plot_twist_reformat_needs_the_answer_sentence(reply: str) -> None:
    """Already refused before this change: the reformat reply must hold the whole answer sentence."""
    assert not plot_twist.has_answer_sentence(reply)
    assert plot_twist.extract_answer(reply) is None


def test_plot_twist_reads_the_answer_sentence() -> None:
    assert plot_twist.has_answer_sentence("The answer is 5. I hope the answer is correct.")
    assert plot_twist.extract_answer("The answer is 5. I hope the answer is correct.") == "5"


# ---- MMSci's judged captioning metrics ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        *HOSTILE,
        "Error 503:\n- upstream overloaded\n- retry later",  # before: two atomic descriptions
        "I'm sorry, I can't help with that.\n- no facts",
    ],
)
def test_factscore_split_refuses_replies_that_are_not_items(reply: str) -> None:
    assert judged.parse_facts(reply) == []


def test_factscore_split_reads_real_items() -> None:
    reply = "- Error bars show the standard deviation.\n- p<0.05 in panel a.\n- 500 nm scale bar."
    assert judged.parse_facts(reply) == [
        "Error bars show the standard deviation.",
        "p<0.05 in panel a.",
        "500 nm scale bar.",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        *HOSTILE,
        "<html><body><h1>Bad Gateway</h1></body></html>",  # before: h1 -> a rating of 1
        "<h2>Service Unavailable</h2>",  # before: 2
        "Error 4",  # before: 4
    ],
)
@pytest.mark.parametrize("scale", [judged.RATING_SCALE, judged.GEVAL_SCALE])
def test_ratings_refuse_replies_that_are_not_a_score(reply: str, scale: tuple[int, int]) -> None:
    assert judged.parse_rating(reply, scale) is None
    assert not judged._reads_rating(scale)(reply)


def test_ratings_read_real_scores() -> None:
    scale = judged.GEVAL_SCALE
    assert [judged.parse_rating(reply, scale) for reply in ("4", "Score: 4", "4/5", "**3**", "Relevance: 5.")] == [
        4,
        4,
        4,
        3,
        5,
    ]


@pytest.mark.parametrize("reply", [*(reply for reply in HOSTILE if reply != "Answer: B"), "E: upstream overloaded"])
def test_the_paper_settings_sampled_replies_refuse_plain_non_answers(reply: str) -> None:
    """The authors' readers take a digit from anything (G-Eval read ``Error 503`` as 3): such a reply is asked again."""
    assert not replies.says_something(reply)


@pytest.mark.parametrize("reply", ["4", "Relevance: 4", "- one fact\n- another-fact", "The caption is relevant."])
def test_the_paper_settings_keep_real_replies(reply: str) -> None:
    assert replies.says_something(reply)
