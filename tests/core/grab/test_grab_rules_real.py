"""GRAB's two rules on questions of the authors' published file (``tests/fixtures/grab_real``: 15 questions of
``grab.json``, every task and answer format, every equation form), with outputs written by hand.

Each row says what a reader would say of the output (``whole``: the answer as a whole, ``grab``) and what the authors'
rule says (``cut``: the output cut to the answer's length, ``grab_paper``). The rules differ on the prefix cases
(``"-97"`` against ``"-9"``) and, the other way, on answers stated after words or written in another spacing.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.grab import rules
from scifig_tasks.benchmarks.grab.scoring import score_doc
from scifig_tasks.benchmarks.grab.tasks import utils
from scifig_tasks.core import task_files
from scifig_tasks.core.task_options import for_task

FIXTURE = Path(__file__).parents[2] / "fixtures" / "grab_real" / "grab_subset.json"


@cache
def questions() -> dict[int, dict[str, Any]]:
    return {int(pid): row for pid, row in json.loads(FIXTURE.read_text(encoding="utf-8")).items()}


# (kind, pid, output, whole-answer verdict, truncation verdict); the answers: 0 "-9" (integer), 570 "-1.0" (1 d.p.),
# 662 "0.5", 1151 "7.1", 480 "-120" (nearest 10), 150 "[-10, -3]" (list), 330 "y = -1x - 3", 335
# "y = 2sin(-9x + 7) + 6", 332 "y = 0x^3 - 2x^2 + 5x + 2" (equations)
CASES: list[tuple[str, int, str, bool, bool]] = [
    ("whole", 0, "-9", True, True),
    ("whole", 0, " -9", True, True),
    ("whole", 0, "-9.", True, True),
    ("whole", 0, "-9\n", True, True),
    ("notation", 0, "\u22129", True, False),  # a typographic minus: the number -9
    ("whole", 570, "-1.0", True, True),
    ("notation", 570, "-1", True, False),  # -1 is -1.0 as a number
    ("whole", 662, "0.50", True, True),  # 0.50 is 0.5; its first three characters are too
    ("whole", 480, "-120", True, True),
    ("whole", 150, "[-10, -3]", True, True),
    ("whole", 330, "y = -1x - 3", True, True),
    ("whole", 335, "y = 2sin(-9x + 7) + 6", True, True),
    ("whole", 332, "y = 0x^3 - 2x^2 + 5x + 2", True, True),
    ("prefix", 0, "-97", False, True),
    ("prefix", 0, "-9.4", False, True),
    ("prefix", 1151, "7.14", False, True),
    ("prefix", 480, "-1205", False, True),
    ("prefix", 150, "[-10, -3] or [-10, -2]", False, True),  # two answers: unresolved, flagged
    ("prefix", 330, "y = -1x - 35", False, True),
    ("prefix", 335, "y = 2sin(-9x + 7) + 60", False, True),
    ("trailing", 0, "-9 (read at the crossing)", True, True),
    ("trailing", 570, "-1.0\nThe points slope down.", True, True),
    ("trailing", 150, "[-10, -3]\n", True, True),
    ("trailing", 330, "y = -1x - 3. The line falls.", True, True),
    ("prefix", 0, "-9 or -8", False, True),  # a second answer after the first: unresolved, never guessed
    ("wrong", 0, "-8", False, False),
    ("wrong", 480, "-100", False, False),
    ("wrong", 150, "[-10, -2]", False, False),
    ("wrong", 332, "y = 0x^3 - 2x^2 + 5x + 3", False, False),
    ("notation", 570, "-1.", True, False),  # the truncation reads "-1." against "-1.0"; the number -1 is -1.0
    ("short", 480, "-12", False, False),
    ("stated", 0, "The answer is -9.", True, False),
    ("stated", 150, "Answer: [-10, -3]", True, False),
    ("stated", 0, "The answer is -9. Final answer: -8", False, False),  # two answers: unresolved
    ("notation", 150, "[-10,-3]", True, False),
    ("notation", 330, "y = -x - 3", True, False),  # the coefficient 1 and the zero term left out
    ("notation", 332, "y = -2x^2 + 5x + 2", True, False),
    ("none", 0, "I cannot tell from the graph.", False, False),
]
"""Hand-written outputs; ``kind``: the whole answer, the answer as the prefix of a longer number or of a second
answer, the answer then text, a wrong or short answer, an answer stated after words, the answer in another notation."""


@pytest.mark.parametrize(("kind", "pid", "output", "whole", "cut"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_rule_gives_the_verdict_a_reader_would(kind: str, pid: int, output: str, whole: bool, cut: bool) -> None:
    doc = questions()[pid]
    default = score_doc(doc, output, protocol="default")
    paper = score_doc(doc, output, protocol="paper")
    assert (default.correct, paper.correct) == (whole, cut)
    assert (default.rule, paper.rule) == ("whole_answer", "truncation")
    # both verdicts are kept on either protocol's record, so a run counts where they differ
    assert (default.whole_answer_correct, default.truncation_correct) == (whole, cut)
    assert paper.truncation_correct == rules.exact_match(output, doc["answer"])  # the authors' rule, as before 2.5


def test_the_fixture_covers_every_task_and_answer_format() -> None:
    formats = {(row["task"], rules.precision_of(row["question"])) for row in questions().values()}
    assert {fmt for _, fmt in formats} == set(rules.PRECISIONS)
    assert {task for task, _ in formats} == set(rules.TASKS)
    assert {kind for kind, *_ in CASES} >= {"whole", "prefix", "trailing", "stated"}


def test_the_protocols_differ_on_the_prefix_cases_and_the_answers_read_past_notation() -> None:
    """On the whole answers, trailing text, lists and equations the two rules agree; on every prefix case only the
    truncation counts the output right; on answers stated after words or written in another notation only the
    whole-answer rule does."""
    differ = {kind: {(whole, cut) for k, _, _, whole, cut in CASES if k == kind} for kind, *_ in CASES}
    assert differ["prefix"] == {(False, True)}
    assert differ["stated"] >= {(True, False)} and differ["notation"] == {(True, False)}
    for kind in ("whole", "trailing", "wrong", "short", "none"):
        assert all(whole == cut for whole, cut in differ[kind]), kind


def test_the_breakdown_counts_the_outputs_the_rules_score_differently() -> None:
    records = [rules.sample_record(questions()[pid], score_doc(questions()[pid], out)) for _, pid, out, *_ in CASES]
    table = rules.breakdown(records)
    differ = table["flags"]["rules_differ"]
    assert differ.pop("agree") == sum(whole == cut for *_, whole, cut in CASES)
    expected: dict[str, int] = {}
    for _, pid, _, whole, cut in CASES:
        if whole != cut:
            key = f"{rules.precision_of(questions()[pid]['question'])}/{'truncation' if cut else 'whole_answer'}_only"
            expected[key] = expected.get(key, 0) + 1
    assert differ == expected
    assert table["flags"]["reading"] == {"whole": 29, "stated": 5, "unresolved": 4}


def test_the_task_hooks_score_as_their_protocol() -> None:
    """The lmms-eval hook bound with each task's YAML options (VLMEvalKit's datasets read the same options and call the
    same scorer: ``tests/vlmeval/test_parity_every_task.py`` compares them per question)."""
    tasks = task_files.scifig_tasks()
    for name, protocol in (("grab_properties", "default"), ("grab_properties_paper", "paper")):
        hook = for_task(utils.grab_process_results, tasks[name].options)
        for _, pid, output, whole, cut in CASES:
            record = hook(questions()[pid], [output])["breakdown"]
            assert record["correct"] == (whole if protocol == "default" else cut), (name, output)
