"""CharXiv on real gradings (truth from outside): a third-party run of the authors' pipeline (gpt-4o-mini answers to
the 4,000 descriptive validation questions, graded by the authors' grading code; tests/fixtures/charxiv_real/README.md).
Where the default protocol's rules decide, they agree with the published grade but for a short list of grader
errors; the authors' batches rebuilt from the answers are the run's; the authors' figure reproduces its stats file."""

from __future__ import annotations

import itertools
import json
from typing import Any

from scifig_tasks.benchmarks.charxiv.grading import descriptive_grading_queries
from scifig_tasks.benchmarks.charxiv.rules import rule_verdict
from scifig_tasks.benchmarks.charxiv.scores import summary
from tests.harness.paths import FIXTURES

RUN = json.loads(
    (FIXTURES / "charxiv_real" / "gpt-4o-mini-2024-07-18-descriptive_val.json").read_text(encoding="utf-8")
)
STATS = json.loads(
    (FIXTURES / "charxiv_real" / "stats-gpt-4o-mini-2024-07-18-descriptive_val.json").read_text(encoding="utf-8")
)
QUESTIONS = json.loads((FIXTURES / "charxiv" / "descriptive_val.json").read_text(encoding="utf-8"))

GRADER_ERRORS = {
    # "Not Applicable" for "Not Applicable", graded 0 with an empty extracted answer; the same run grades the
    # other 806 such pairs 1, and every rubric says a "Not Applicable" truth needs a "Not Applicable" response
    **dict.fromkeys(("153_3", "908_3", "1342_3", "1845_3", "1954_3"), "Not Applicable for Not Applicable, graded 0"),
    # "Yes" for "yes" (template 11), graded 0; the same run grades the other 23 such pairs 1, and the bool
    # rubric's own example grades "No, there are no intersections." for "no" 1
    **dict.fromkeys(("173_1", "458_0", "591_2", "1007_2", "1102_0"), "Yes for yes, graded 0"),
    # a title with a final period, graded 0; the same run grades "Increases." for "increases" (391_1) and
    # "SBC w/o  multiple test adj." for "SBC w/o multiple test adj." (2346_1) 1
    "2338_2": "'Example of the spirals data.' for 'Example of the spirals data', graded 0",
}


def items() -> list[dict[str, Any]]:
    """The 4,000 questions with the run's answers (the gen file's ``response``)."""
    found = []
    for fid, chart in QUESTIONS.items():
        for i, (template, answer) in enumerate(zip(chart["qids"], chart["answers"], strict=True)):
            key = f"{fid}_{i}"
            found.append({"query_id": key, "template": template, "answer": answer, "response": RUN["responses"][key]})
    return found


def test_the_rules_agree_with_the_published_grades_where_they_decide() -> None:
    decided = {
        item["query_id"]: verdict
        for item in items()
        if (verdict := rule_verdict(item["response"], item["answer"])) is not None
    }
    published = {key: grade["score"] for key, grade in RUN["scores"].items()}
    disagree = {key for key, verdict in decided.items() if published[key] in (0, 1) and int(verdict) != published[key]}
    share = len(decided) / len(published)
    agreement = 1 - len(disagree) / len(decided)
    print(
        f"\nrules decide {len(decided)}/{len(published)} ({share:.1%}); "
        f"agree with the published grade on {agreement:.2%}"
    )
    assert disagree == set(GRADER_ERRORS)
    assert all(decided[key] is True for key in disagree)  # each a 0 for a response equal to the ground truth
    assert len(decided) == 1335 and sum(not verdict for verdict in decided.values()) == 133
    assert not any(published[key] == -1 for key in decided)  # the one failed batch is none of the rules' business


def test_the_authors_batches_rebuilt_from_the_answers_are_the_runs() -> None:
    queries = descriptive_grading_queries(items())
    order = list(RUN["scores"])  # the scores file lists the questions batch after batch, in the order graded
    ends = list(itertools.accumulate(len(query.query_ids) for query in queries))
    assert [list(q.query_ids) for q in queries] == [order[a:b] for a, b in itertools.pairwise([0, *ends])]
    failed = [key for key, grade in RUN["scores"].items() if grade["score"] == -1]
    assert [tuple(failed)] == [q.query_ids for q in queries if set(q.query_ids) & set(failed)]  # one batch failed


def test_the_authors_score_reproduces_the_published_stats() -> None:
    records = [
        {
            "query_id": item["query_id"],
            "kind": "descriptive",
            "template": item["template"],
            "verdict": None if (score := RUN["scores"][item["query_id"]]["score"]) == -1 else score,
            "graded_by": None if score == -1 else "judge",
        }
        for item in items()
    ]
    result = summary(records)["descriptive"]
    assert result["overall"]["authors_score"] == STATS["Overall Score"] == 72.6
    assert {name: cell["authors_score"] for name, cell in result["by_group"].items()} == STATS["By Category"]
    assert {f"Q{t}": cell["authors_score"] for t, cell in result["by_template"].items()} == STATS["By Question"]
    assert result["counts"]["ungraded"] == STATS["N_invalid"] == 5
    assert result["overall"]["questions"] == STATS["N_valid"]
    assert (
        result["overall"]["accuracy"] == 72.69
    )  # 2904 right of the 3995 graded: the failed batch left out, not counted 0
