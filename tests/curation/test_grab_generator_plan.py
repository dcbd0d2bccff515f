"""The full default plan of the GRAB generator (2,170 questions, no rendering): the published composition, exact
wording and answer formats, answer ranges, uniqueness, and ground truth recomputable from the metadata alone."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from curation.grab.affine import Operation
from curation.grab.plan import PlanItem, answer_of, cached_plan, content_key, plan_type, select
from curation.grab.questions import QUESTION_TYPES, question_text
from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.answers import matches_format

# Counts of the published set, written out again here (not read from the generator's table).
TASKS = {"properties": 660, "function": 710, "series": 490, "transform": 310}
CATEGORIES = {
    ("properties", "Area Bounded"): 30,
    ("properties", "Correlation"): 30,
    ("properties", "Counting"): 60,
    ("properties", "Extrema"): 60,
    ("properties", "Functions"): 30,
    ("properties", "Intercepts and Gradients"): 90,
    ("properties", "Measures of Spread"): 120,
    ("properties", "Range"): 60,
    ("properties", "Stationary Points"): 60,
    ("properties", "Trigonometric"): 120,
    ("function", "Area Bounded"): 60,
    ("function", "Extrema"): 100,
    ("function", "Intercepts and Gradients"): 150,
    ("function", "Measures of Spread"): 50,
    ("function", "Range"): 100,
    ("function", "Stationary Points"): 100,
    ("function", "Trigonometric"): 150,
    ("series", "Correlation"): 90,
    ("series", "Extrema"): 100,
    ("series", "Measures of Spread"): 200,
    ("series", "Range"): 100,
    ("transform", "Area Bounded"): 60,
    ("transform", "Extrema"): 100,
    ("transform", "Intercepts and Gradients"): 50,
    ("transform", "Range"): 100,
}
PER_LEVEL = {"function": 71, "series": 49, "transform": 31}
# (task, property wording) -> {precision: count} for a sample of the mixed-precision rows of the table
MIXED = {
    ("function", "maximum value"): {"integer": 37, "1dp": 13},
    ("function", "minimum value"): {"integer": 26, "1dp": 24},
    ("function", "stationary point x-coordinate"): {"integer": 39, "1dp": 11},
    ("series", "median"): {"integer": 38, "1dp": 12},
    ("transform", "maximum value"): {"integer": 26, "1dp": 24},
    ("transform", "gradient"): {"integer": 36, "1dp": 14},
}


@pytest.fixture(scope="module")
def plan() -> tuple[PlanItem, ...]:
    return cached_plan(0)


def test_published_composition(plan: tuple[PlanItem, ...]) -> None:
    assert len(plan) == 2170
    assert [item.pid for item in plan] == list(range(2170))
    assert Counter(item.task for item in plan) == TASKS
    assert Counter((item.task, item.category) for item in plan) == CATEGORIES
    assert {item.complexity for item in plan if item.task == "properties"} == {0}
    for task, per_level in PER_LEVEL.items():
        assert Counter(item.complexity for item in plan if item.task == task) == dict.fromkeys(range(10), per_level)
    for qtype in QUESTION_TYPES:
        items = [item for item in plan if item.type_key == qtype.key]
        assert len(items) == qtype.count
        assert Counter(item.precision for item in items) == dict(qtype.precisions)
        assert {item.category for item in items} == {qtype.category}


def test_precision_counts_of_the_spec_table(plan: tuple[PlanItem, ...]) -> None:
    for (task, wording), counts in MIXED.items():
        stem = "Estimate the mean " if task != "transform" else "Estimate the "
        items = [item for item in plan if item.task == task and item.question.startswith(f"{stem}{wording} of the")]
        assert Counter(grab.precision_of(item.question) for item in items) == counts, (task, wording)
    equations = Counter(
        re.search(r"in the form (y = [^.]*)\.", item.question).group(1)  # type: ignore[union-attr]
        for item in plan
        if item.precision == "equation"
    )
    assert equations == {
        "y = <m>x + <c>": 9,
        "y = <a>x^2 + <b>x + <c>": 2,
        "y = <a>x^3 + <b>x^2 + <c>x + <d>": 7,
        "y = <a>x^4 + <b>x^3 + <c>x^2 + <d>x + <e>": 4,
        "y = <a>sin(<b>x + <c>) + <d>": 8,
    }


def test_every_answer_matches_its_precision_format(plan: tuple[PlanItem, ...]) -> None:
    for item in plan:
        assert grab.precision_of(item.question) == item.precision
        assert matches_format(item.answer, item.question), (item.pid, item.question, item.answer)
        if "correlation coefficient" in item.question:
            assert -1 <= float(item.answer) <= 1


def test_question_wording_is_exact(plan: tuple[PlanItem, ...]) -> None:
    texts = {item.question for item in plan}
    assert "What is the value of the gradient of the function? Give your answer as an integer." in texts
    assert "What is the net area bounded by the function and x-axis? Give your answer to the nearest 10." in texts
    assert (
        "What are the x-values of the two stationary points of the function? Write your answer in the form "
        "[x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2. Give your answer as an integer."
    ) in texts
    assert (
        "Estimate the mean function mean of the functions shown in the plot. Give your answer as an integer." in texts
    )
    assert (
        "Estimate the mean Pearson correlation coefficient of the data series shown in the plot. "
        "Give your answer to 1 decimal place."
    ) in texts
    assert "What is the Pearson's correlation coefficient of the data? Give your answer to 1 decimal place." in texts
    assert "Estimate the gradient of the function shown in the plot.\nGive your answer as an integer." in texts
    for item in plan:
        if item.task != "transform":
            continue
        steps = re.findall(r"^\d+\. (.*);$", item.question, re.MULTILINE)
        assert len(steps) == item.complexity == len(item.params["operations"])
        assert steps == [Operation.from_params(step).text() for step in item.params["operations"]]
        if steps:
            assert "after it has been transformed by the following operations:\n1. " in item.question
        assert item.question.endswith(("\nGive your answer as an integer.", "\nGive your answer to 1 decimal place."))


def test_every_question_has_its_own_graph(plan: tuple[PlanItem, ...]) -> None:
    keys = [content_key(item.params) for item in plan]
    assert len(set(keys)) == len(keys)
    function_graphs = [item for item in plan if item.task in ("function", "series")]
    assert all(len(item.params["elements"]) == item.complexity + 1 for item in function_graphs)


def test_ground_truth_is_recomputed_from_the_metadata_alone(plan: tuple[PlanItem, ...]) -> None:
    for item in plan:
        metadata = json.loads(item.metadata(seed=0))
        assert metadata["type"] == item.type_key and metadata["version"]
        value, answer = answer_of(metadata["type"], metadata["precision"], metadata["params"])
        assert answer == item.answer, item.pid
        steps = [Operation.from_params(step).text() for step in metadata["params"].get("operations", [])]
        qtype = next(q for q in QUESTION_TYPES if q.key == item.type_key)
        assert question_text(qtype, metadata["precision"], steps, metadata["params"].get("equation")) == item.question


def _answers(plan: tuple[PlanItem, ...], key: str) -> list[str]:
    return [item.answer for item in plan if item.type_key == key]


def test_answers_cover_the_real_sets_ranges(plan: tuple[PlanItem, ...]) -> None:
    as_ints = lambda key: {int(answer) for answer in _answers(plan, key)}  # noqa: E731
    assert as_ints("properties/x_intercept") == set(range(-9, 10))
    assert as_ints("properties/gradient") == set(range(-5, 6))
    assert as_ints("properties/period") == set(range(1, 11))
    assert as_ints("properties/amplitude") == set(range(1, 11))
    assert as_ints("properties/count_series") == set(range(1, 11))
    assert as_ints("properties/count_points") == set(range(5, 31))
    assert as_ints("properties/phase_shift") == set(range(-5, 6))
    assert as_ints("properties/function_variance") >= set(range(1, 26))
    for key in ("properties/pearson", "function/gradient", "series/iqr", "transform/max"):
        values = [float(answer) for answer in _answers(plan, key)]
        assert len(set(values)) >= len(values) // 3, key  # spread, not clustered
    correlations = [float(answer) for answer in _answers(plan, "series/pearson")]
    assert min(correlations) <= -0.5 and max(correlations) >= 0.5
    areas = [int(answer) for answer in _answers(plan, "properties/net_area")]
    assert min(areas) < 0 < max(areas) and all(-200 <= area <= 200 for area in areas)


def test_plan_is_seeded(plan: tuple[PlanItem, ...]) -> None:
    qtype = next(q for q in QUESTION_TYPES if q.key == "series/median")
    again = plan_type(qtype, 0, set())
    first = [item for item in plan if item.type_key == qtype.key]
    assert [params for params, *_ in again] == [item.params for item in first]
    other = plan_type(qtype, 1, set())
    assert [params for params, *_ in other] != [params for params, *_ in again]


def test_limited_subset_is_balanced(plan: tuple[PlanItem, ...]) -> None:
    subset = select(plan, None, 40)
    assert Counter(item.task for item in subset) == dict.fromkeys(TASKS, 10)
    for task in ("function", "series", "transform"):
        chosen = [item for item in subset if item.task == task]
        types = {qtype.key for qtype in QUESTION_TYPES if qtype.task == task}
        assert len({item.type_key for item in chosen}) == min(10, len(types))
        assert sorted(item.complexity for item in chosen) == list(range(10))
    assert all(plan[item.pid] is item for item in subset)  # the same questions as the full build
    assert [item.task for item in select(plan, ["series"], 5)] == ["series"] * 5


# Operation families of the real set (grab.json, 1,395 listed operations): rotation 348, scale 357, translation 344,
# reflection 346 — about a quarter each, not two thirds reflections; the six reflection lines 55-63 each.


def test_transform_families_are_a_quarter_each(plan: tuple[PlanItem, ...]) -> None:
    steps = [
        step for item in plan if item.task == "transform" for step in re.findall(r"^\d+\. (.*);$", item.question, re.M)
    ]
    assert len(steps) == 31 * sum(range(10))  # 1,395: 31 questions per complexity level, level = number of steps
    families = Counter(step.split(" ", 1)[0] for step in steps)
    assert set(families) == {"rotation", "scale", "translation", "reflection"}
    assert all(abs(count / len(steps) - 0.25) <= 0.03 for count in families.values()), families
    lines = Counter(re.sub(r"-?\d+$", "k", step) for step in steps if step.startswith("reflection"))
    assert set(lines) == {
        "reflection in the x-axis",
        "reflection in the y-axis",
        "reflection in the line y=x",
        "reflection in the line y=-x",
        "reflection in the line x=k",
        "reflection in the line y=k",
    }
    assert all(count >= families["reflection"] / 6 / 2 for count in lines.values()), lines


def test_precision_classes_are_table_1s(plan: tuple[PlanItem, ...]) -> None:
    # Table 1: integer 1,575 (the list and equation questions ask for integers), 1 d.p. 565, nearest 10: 30.
    classes = Counter(grab.precision_class(item.question) for item in plan)
    assert classes == {"integer": 1575, "1dp": 565, "nearest10": 30}
    docs = [
        {"pid": item.pid, "question": item.question, "answer": item.answer, "task": item.task,
         "category": item.category, "complexity": item.complexity}
        for item in plan
    ]  # fmt: skip
    table = grab.breakdown(grab.sample_record(doc, grab.score_exact(doc["answer"], doc["answer"])) for doc in docs)
    assert {key: cell["n"] for key, cell in table["precision"].items()} == {
        "integer": 1575,
        "1dp": 565,
        "nearest10": 30,
    }
    assert {key: cell["n"] for key, cell in table["answer_format"].items()} == {
        "integer": 1515,
        "list": 30,
        "equation": 30,
        "1dp": 565,
        "nearest10": 30,
    }
