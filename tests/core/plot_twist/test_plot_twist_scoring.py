"""Plot Twist scoring: the authors' extraction and the three accuracies on edge cases, judge reformatting, collective
accuracy and repeats.

Every expected value below is written by hand from the paper's rules (and the behaviour of the authors' public
evaluation code), not computed with the package.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pytest

from scifig_tasks.benchmarks.plot_twist import rules as pt
from scifig_tasks.core.judge import JudgeResult
from tests.harness.plot_twist_prompts import API, COGVLM_REFORMAT, PALI_REFORMAT

SENTENCE = "The answer is {}. I hope the answer is correct."


def doc(chart: str, kind: str, answer: str, x_range: float = 10.0, y_range: float = 10.0, **extra) -> dict:
    return {
        "q_id": f"{chart}_{kind}",
        "figure_id": extra.pop("figure_id", f"{chart}_000"),
        "chart_type": chart,
        "question_type": kind,
        "question": extra.pop("question", "What is the maximum value among the set of bars plotted in the figure?"),
        "answer": answer,
        "x_range": x_range,
        "y_range": y_range,
        "variant": extra.pop("variant", "base"),
    }


def triple(score: pt.OutputScore) -> tuple[bool, bool, bool]:
    c = score.correctness
    return (c.standard, c.relaxed, c.range)


# ---- extraction ----------------------------------------------------------------------------------------------------

EXTRACTION = [
    ("The answer is 42. I hope the answer is correct.", "42"),
    ("Let me look. The answer is  -3.5 . I hope the answer is correct. Thanks", "-3.5"),
    ("The answer is 35%. I hope the answer is correct.", "35"),
    ("The answer is approximately 120. I hope the answer is correct.", "120"),
    ("The answer is Approximately 120. I hope the answer is correct.", "Approximately 120"),  # case-sensitive
    ("The answer is $1,200. I hope the answer is correct.", "1,200"),
    ("The answer is five. I hope the answer is correct.", "five"),
    ("The answer is 7. The answer is 8. I hope the answer is correct.", "7. The answer is 8"),  # first phrases
    ("No. I hope the answer is correct. The answer is 5", ""),  # closing phrase first: empty answer
    ("The answer is 42.", None),  # no closing phrase
    ("I hope the answer is correct: 42", None),
    ("the answer is 42. I hope the answer is correct.", None),  # case-sensitive opening
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), EXTRACTION)
def test_extraction_follows_the_authors_slicing(text: str, expected: str | None) -> None:
    assert pt.extract_answer(text) == expected


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ("12", 12.0),
        ("-12", -12.0),
        ("12.5", 12.5),
        ("0", 0.0),
        ("zero", 0.0),
        ("five", 5.0),
        ("Twenty-five", 25.0),
        ("one hundred and twenty", 120.0),
        ("three point five", 3.5),
        ("minus five", 5.0),  # word2number drops the sign, as in the authors' pipeline
        ("1,200", None),
        ("5 bars", None),
        ("thousand hundred", None),  # word2number crashes (IndexError): not a number
        ("Blue", None),
        ("", None),
    ],
)
def test_number_words_become_numbers(answer: str, value: float | None) -> None:
    assert pt.to_number(answer) == value


# ---- the three accuracies ------------------------------------------------------------------------------------------

# (document, reply, (standard, relaxed, range)) -- margins by hand: bar count 5% of x_range, other bar and scatter-y
# 5% of y_range, scatter-x 5% of x_range, pie 5 absolute; relaxed [0.95 g, 1.05 g] sorted; all bounds inclusive.
CASES = [
    # exact, and the same value written differently
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("20"), (True, True, True)),
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("20.0"), (True, True, True)),
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("twenty"), (True, True, True)),
    # relaxed bounds inclusive: 19 and 21 in, 18.9 out (range margin 5 still takes it)
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("21"), (False, True, True)),
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("19"), (False, True, True)),
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("18.9"), (False, False, True)),
    # range bounds inclusive: margin 0.05 * 100 = 5 -> [15, 25]
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("25"), (False, False, True)),
    (doc("bar", "max_bar", "20", y_range=100), SENTENCE.format("25.01"), (False, False, False)),
    # negative gold: bounds sorted -> relaxed [-105, -95], range (margin 0.05 * 200 = 10) [-110, -90]
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-100"), (True, True, True)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-96"), (False, True, True)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-105"), (False, True, True)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-94"), (False, False, True)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-110"), (False, False, True)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("-89"), (False, False, False)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("100"), (False, False, False)),
    (doc("bar", "min_bar", "-100", y_range=200), SENTENCE.format("minus one hundred"), (False, False, False)),
    (doc("bar", "min_bar", "-100", y_range=40), SENTENCE.format("-96"), (False, True, False)),  # margin 2
    # gold 0: relaxed band is [0, 0]; the range margin (0.05 * 10 = 0.5) still applies
    (doc("bar", "y_min_axis", "0", y_range=10), SENTENCE.format("0"), (True, True, True)),
    (doc("bar", "y_min_axis", "0", y_range=10), SENTENCE.format("zero"), (True, True, True)),
    (doc("bar", "y_min_axis", "0", y_range=10), SENTENCE.format("0.5"), (False, False, True)),
    (doc("bar", "y_min_axis", "0", y_range=10), SENTENCE.format("-0.6"), (False, False, False)),
    # bar count: margin from x_range (0.05 * 20 = 1), never from y_range (0.05 * 1000 = 50)
    (doc("bar", "count_bars", "3", x_range=20, y_range=1000), SENTENCE.format("4"), (False, False, True)),
    (doc("bar", "count_bars", "3", x_range=20, y_range=1000), SENTENCE.format("5"), (False, False, False)),
    (doc("bar", "count_bars", "3", x_range=20, y_range=1000), SENTENCE.format("three"), (True, True, True)),
    # pie: +/-5 absolute whatever the spans; "%" removed
    (doc("pie", "max_category", "40", x_range=2.5, y_range=2.5), SENTENCE.format("45%"), (False, False, True)),
    (doc("pie", "max_category", "40", x_range=2.5, y_range=2.5), SENTENCE.format("45.5%"), (False, False, False)),
    (doc("pie", "max_category", "40", x_range=2.5, y_range=2.5), SENTENCE.format("42%"), (False, True, True)),
    (doc("pie", "count_categories", "7", x_range=2.5, y_range=2.5), SENTENCE.format("12"), (False, False, True)),
    # scatter: x questions use x_range, y questions y_range (y_max_point contains "x_" inside "max_")
    (doc("scatter", "x_max_point", "20", x_range=200, y_range=10), SENTENCE.format("30"), (False, False, True)),
    (doc("scatter", "y_max_point", "20", x_range=200, y_range=10), SENTENCE.format("30"), (False, False, False)),
    (doc("scatter", "y_max_point", "20", x_range=200, y_range=10), SENTENCE.format("20.5"), (False, True, True)),
    (
        doc("scatter", "y_max_axis", "20", x_range=10, y_range=200),
        SENTENCE.format("approximately 30"),
        (False, False, True),
    ),
    # "$" and "approximately" removed, "Approximately" is not
    (doc("bar", "max_bar", "120", y_range=10), SENTENCE.format("$120"), (True, True, True)),
    (doc("bar", "max_bar", "120", y_range=10), SENTENCE.format("Approximately 120"), (False, False, False)),
    # not numeric: case-insensitive equality counts for all three, else wrong
    (doc("bar", "max_bar", "Blue"), SENTENCE.format("blue"), (True, True, True)),
    (doc("bar", "max_bar", "Blue"), SENTENCE.format("5"), (False, False, False)),
    (doc("bar", "max_bar", "five"), SENTENCE.format("five"), (False, False, False)),  # numeric answer, gold not
    (doc("bar", "max_bar", "20"), SENTENCE.format("1,200"), (False, False, False)),
    # empty answer between the phrases
    (doc("bar", "max_bar", "20"), "No. I hope the answer is correct. The answer is 20", (False, False, False)),
]


@pytest.mark.parametrize(("document", "reply", "expected"), CASES)
def test_three_accuracies_on_edge_cases(document: dict, reply: str, expected: tuple[bool, bool, bool]) -> None:
    score = pt.score_output(document, reply, judge=None)
    assert triple(score) == expected
    assert score.answer_source == "rule"


def test_chartqa_rule_has_no_range_margin() -> None:
    document = doc("bar", "max_bar", "20", y_range=100)
    assert pt.range_margin("bar", "max_bar", 10, 100, "chartqa") is None
    assert triple(pt.score_output(document, SENTENCE.format("25"), None, rule="chartqa")) == (False, False, False)
    assert triple(pt.score_output(document, SENTENCE.format("21"), None, rule="chartqa")) == (False, True, True)


def test_margins() -> None:
    assert pt.range_margin("bar", "count_bars", 20, 1000) == 1.0
    assert pt.range_margin("bar", "y_max_axis", 20, 1000) == 50.0
    assert pt.range_margin("pie", "min_category", 2.5, 2.5) == 5
    assert pt.range_margin("scatter", "x_min_axis", 40, 1000) == 2.0
    assert pt.range_margin("scatter", "y_max_point", 40, 1000) == 50.0


# ---- outputs without the sentence: judge or not provided ----------------------------------------------------------


@dataclass
class FakeJudge:
    replies: dict[str, JudgeResult]
    prompts: list[str] = field(default_factory=list)
    max_tokens: list[int | None] = field(default_factory=list)

    def complete(self, prompt: str, *, max_tokens: int | None = None, **settings: object) -> JudgeResult:
        self.prompts.append(prompt)
        self.max_tokens.append(max_tokens)
        output = prompt.rsplit('Model Answer: "', 1)[1].rsplit('"\n        Extracted Answer:', 1)[0]
        return self.replies[output]


def test_without_the_sentence_the_judge_reformats() -> None:
    judge = FakeJudge(
        {
            "About twenty, I think.": JudgeResult("judged", "The answer is twenty. I hope the answer is correct."),
            "Cannot tell.": JudgeResult("judged", "The answer is None. I hope the answer is correct."),
            "Roughly 19": JudgeResult("judged", "19"),  # the judge did not follow the format
            "Something else": JudgeResult("judge_failed", None, error="HTTP 500"),
        }
    )
    document = doc("bar", "max_bar", "20", y_range=100)
    reformatted = pt.score_output(document, "About twenty, I think.", judge)
    assert triple(reformatted) == (True, True, True)
    assert (reformatted.answer_source, reformatted.judge, reformatted.extracted) == ("judge", "judged", "twenty")
    assert judge.prompts[0] == COGVLM_REFORMAT.format(question=document["question"], output="About twenty, I think.")
    assert judge.max_tokens == [64]
    for output, judge_status in (
        ("Cannot tell.", "judged"),
        ("Roughly 19", "judged"),
        ("Something else", "judge_failed"),
    ):
        score = pt.score_output(document, output, judge)
        assert triple(score) == (False, False, False)
        assert (score.answer_source, score.judge) == ("not_provided", judge_status)
    # an output with the sentence never reaches the judge; nor do empty outputs and request failures
    asked = len(judge.prompts)
    pt.score_output(document, SENTENCE.format("20"), judge)
    empty = pt.score_output(document, "", judge)
    failed = pt.score_output(document, "[LMMS_EVAL_REQUEST_FAILED after 1 retries] boom", judge)
    assert len(judge.prompts) == asked
    assert (empty.output_status, failed.output_status) == ("empty", "request_failed")
    assert triple(empty) == triple(failed) == (False, False, False)


def test_without_a_judge_the_answer_is_not_provided() -> None:
    score = pt.score_output(doc("bar", "max_bar", "20"), "It is 20.", judge=None)
    assert triple(score) == (False, False, False)
    assert (score.answer_source, score.judge) == ("not_provided", "judge_off")


# ---- prompt --------------------------------------------------------------------------------------------------------


def test_prompt_text() -> None:
    """Paper Fig. 2 (API models) and App. B.3 (open models; "only based on the figure" for the title test), each
    followed by one space and the question."""
    question = "How many bars are in the figure?"
    assert pt.build_prompt(question) == f"{API} How many bars are in the figure?"
    for variant in ("base", "title_none", "title_correct", "title_misleading", "grid", "vegalite"):
        assert pt.build_prompt(question, variant, "api") == f"{API} How many bars are in the figure?"
    assert pt.build_prompt(question, "base", "open") == (
        "Answer the question based on the Figure How many bars are in the figure?"
    )
    assert pt.build_prompt(question, "marker_x", "open") == (
        "Answer the question based on the Figure How many bars are in the figure?"
    )
    for variant in ("title_none", "title_correct", "title_misleading"):
        assert pt.build_prompt(question, variant, "open") == (
            "Answer the question only based on the figure How many bars are in the figure?"
        )
    with pytest.raises(ValueError, match="prompt style"):
        pt.build_prompt(question, "base", "chat")  # type: ignore[arg-type]


def test_reformat_prompts_are_the_authors_text() -> None:
    question = "How many bars are in the figure?"
    filled = pt.reformat_prompt(question, "There are {4} bars.</s>", "cogvlm")
    assert filled == COGVLM_REFORMAT.format(question=question, output="There are {4} bars.</s>")
    assert pt.reformat_prompt(question, "<extra_id_0> 4", "pali") == PALI_REFORMAT.format(
        question=question, output="<extra_id_0> 4"
    )
    assert pt.reformat_prompt(question, "x") == COGVLM_REFORMAT.format(question=question, output="x")


def test_open_protocols_reformat_every_output_with_their_examples() -> None:
    reply = JudgeResult("judged", " The answer is 20. I hope the answer is correct.\n")
    document = doc("bar", "max_bar", "20", y_range=100)
    with_sentence = SENTENCE.format("19")  # the open protocols send it to the judge all the same
    for protocol, template in (("open", COGVLM_REFORMAT), ("open_pali", PALI_REFORMAT)):
        judge = FakeJudge({"It is 20.": reply, with_sentence: reply})
        score = pt.score_output(document, "It is 20.", judge, protocol=protocol)
        assert (triple(score), score.answer_source, score.judge) == ((True, True, True), "judge", "judged")
        assert judge.prompts == [template.format(question=document["question"], output="It is 20.")]
        score = pt.score_output(document, with_sentence, judge, protocol=protocol)
        assert (score.extracted, score.answer_source) == ("20", "judge")
        # without a judge the rule reads the raw output
        score = pt.score_output(document, with_sentence, None, protocol=protocol)
        assert (score.extracted, score.answer_source, score.judge) == ("19", "rule", "judge_off")
    # the default protocol (api) sends only outputs without the sentence
    judge = FakeJudge({})
    assert pt.score_output(document, with_sentence, judge).answer_source == "rule" and judge.prompts == []
    with pytest.raises(ValueError, match="unknown Plot Twist protocol"):
        pt.score_output(document, with_sentence, judge, protocol="gpt")


def test_records_and_breakdowns_name_their_protocol() -> None:
    document = doc("bar", "max_bar", "20")
    score = pt.score_output(document, SENTENCE.format("20"), None, protocol="open_pali")
    record = pt.sample_record(document, [score], "open_pali")
    assert record["protocol"] == "open_pali"
    table = pt.breakdown([record])
    assert table["protocol"] == {"name": "open_pali", "prompt": "open", "reformat": "pali", "reformat_all": True}
    assert pt.breakdown([pt.sample_record(document, [score])])["protocol"] == {
        "name": "api",
        "prompt": "api",
        "reformat": "cogvlm",
        "reformat_all": False,
    }
    assert pt.merge_breakdowns([table, table])["protocol"]["name"] == "open_pali"
    with pytest.raises(ValueError, match="mix protocols"):
        pt.breakdown([record, {**record, "protocol": "api"}])


# ---- aggregation: collective, repeats, breakdown ------------------------------------------------------------------


def record(figure: str, chart: str, kind: str, standard: list[int], relaxed: list[int], range_: list[int]) -> dict:
    n = len(standard)
    return {
        "q_id": f"{figure}_{kind}",
        "figure_id": figure,
        "chart_type": chart,
        "question_type": kind,
        "variant": "base",
        "standard": standard,
        "relaxed": relaxed,
        "range": range_,
        "extracted": ["x"] * n,
        "answer_source": ["rule"] * n,
        "output_status": ["ok"] * n,
        "judge": ["not_used"] * n,
    }


# two repeats; figure p0 has 2 questions, p1 has 1 (pie), b0 has 2 (bar)
RECORDS = [
    record("p0", "pie", "max_category", [1, 1], [1, 1], [1, 1]),
    record("p0", "pie", "min_category", [0, 1], [1, 1], [1, 1]),
    record("p1", "pie", "max_category", [0, 0], [0, 1], [1, 1]),
]
BAR_RECORDS = [
    record("b0", "bar", "max_bar", [1, 0], [1, 0], [1, 1]),
    record("b0", "bar", "count_bars", [1, 1], [1, 1], [1, 1]),
]


def test_accuracy_and_collective_average_over_repeats() -> None:
    # standard per repeat: 1/3, 2/3 -> 0.5; relaxed 2/3, 3/3 -> 5/6; range 1
    assert pt.accuracy(RECORDS, "standard") == pytest.approx(0.5)
    assert pt.accuracy(RECORDS, "relaxed") == pytest.approx(5 / 6)
    # collective standard: repeat 1 -> p0 no, p1 no = 0/2; repeat 2 -> p0 yes, p1 no = 1/2; mean 0.25
    assert pt.collective(RECORDS, "standard") == pytest.approx(0.25)
    assert pt.collective(RECORDS, "relaxed") == pytest.approx((1 / 2 + 2 / 2) / 2)
    assert pt.collective(RECORDS, "range") == pytest.approx(1.0)

    rate = pt.collective(RECORDS, "standard")
    assert (rate.hits, rate.figures) == ((0, 1), 2)
    assert pickle.loads(pickle.dumps(rate)) == rate and pickle.loads(pickle.dumps(rate)).hits == (0, 1)
    # a group recomputes over all figures: repeat 1 -> 0 + 1 of 3, repeat 2 -> 1 + 0 of 3
    merged = pt.merge_collective([rate, pt.collective(BAR_RECORDS, "standard")])
    assert merged == pytest.approx((1 / 3 + 1 / 3) / 2)
    with pytest.raises(TypeError, match="figure counts"):
        pt.merge_collective([0.5, 0.25])


def test_breakdown_reports_mean_and_std_over_repeats_and_merges_exactly() -> None:
    part = pt.breakdown(RECORDS)
    assert part["repeats"] == 2
    overall = part["overall"]
    assert (overall["questions"], overall["figures"]) == (3, 2)
    assert overall["hits"]["standard"] == [1, 2]
    assert overall["standard_acc"] == {"mean": 0.5, "std": round(((1 / 3 - 0.5) ** 2 * 2) ** 0.5, 4)}
    assert overall["collective_standard"] == {"mean": 0.25, "std": round(((0 - 0.25) ** 2 * 2) ** 0.5, 4)}
    assert part["question_type"]["pie"]["max_category"]["relaxed_acc"]["mean"] == 0.75
    assert "collective_standard" not in part["question_type"]["pie"]["max_category"]
    assert part["flags"]["answer_source"] == {"rule": 6}

    group = pt.merge_breakdowns([part, pt.breakdown(BAR_RECORDS)])
    assert group["overall"]["questions"] == 5 and group["overall"]["figures"] == 3
    assert group["overall"]["hits"]["standard"] == [3, 3]
    assert group["chart_type"]["bar"]["standard_acc"]["mean"] == 0.75
    assert group["overall"]["collective_standard"]["mean"] == round(1 / 3, 4)

    single = pt.breakdown([record("p9", "pie", "max_category", [1], [1], [1])])
    assert single["overall"]["standard_acc"] == {"mean": 1.0, "std": None}
    with pytest.raises(ValueError, match="repeats"):
        pt.merge_breakdowns([part, single])


def test_robustness_deltas_against_base() -> None:
    variant = [{**r, "variant": "grid"} for r in RECORDS]
    for r in variant:
        r["standard"] = [1, 1]
    merged = pt.merge_breakdowns([pt.breakdown(RECORDS), pt.breakdown(variant)], with_deltas=True)
    assert merged["delta_vs_base"]["grid"]["standard_acc"] == 0.5  # 1.0 - 0.5
    assert merged["delta_vs_base"]["grid"]["collective_standard"] == 0.75  # 1.0 - 0.25
    assert set(merged["variant"]) == {"base", "grid"}


def test_metric_names_do_not_contain_each_other() -> None:
    names = [*pt.METRICS, "breakdown"]
    assert not [(a, b) for a in names for b in names if a != b and a in b]
