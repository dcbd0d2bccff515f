"""MMSci through the real ``lmms-eval`` CLI (``--model openai`` against the local server, data in the
``SCIFIG_MMSCI_DATA`` layout): the authors' prompts, accuracies per setting, the group's accuracy pooled over all
questions (the paper's "Avg."), the authors' denominator beside the strict one, every captioning metric reported
(BLEU-2/4 as the authors' n-gram precisions; BERTScore from a tiny local model, FActScore and G-Eval from a local
judge), the paper setting's 3 sampled captions and judge protocol (``mmsci_captioning_paper``), and a judge failing
30% of its calls losing no sample.

Expected values are derived by hand from the replies below, not from the package's scorer.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA, RATING_DEFINITION
from tests.harness.mmsci_data import row_of_request
from tests.harness.mmsci_run import (
    ABSTRACT,
    CAPTION_REPLIES,
    MCQ,
    N_FACTS,
    PAPER_FACTSCORE,
    PAPER_P2,
    PAPER_P4,
    REFERENCES,
    judge_policy,
    run_mmsci,
)
from tests.harness.openai_server import ChatRequest, Reply, faulty


def test_mcq_accuracies_per_setting_and_the_pooled_group_accuracy(mmsci_judged_run) -> None:
    result, model, _ = mmsci_judged_run
    assert result.returncode == 0, result.output[-4000:]
    results, groups = result.results()["results"], result.results()["groups"]
    expected: dict[str, list[int]] = {setting: [] for setting in mmsci.SETTINGS}
    for question, _, letter in MCQ:
        expected[question.setting].append(int(letter == question.answer))
    accuracy = {setting: sum(values) / len(values) for setting, values in expected.items()}
    assert accuracy == {"fig2cap": 2 / 4, "subfig2cap": 2 / 3, "subcap2fig": 2 / 5}  # hand count of the table
    for setting, value in accuracy.items():
        assert results[f"mmsci_{setting}"]["accuracy,none"] == pytest.approx(value, abs=1e-12)

    group = groups["mmsci"]
    # the paper's "Avg.": 6 correct of all 12 questions (2 + 2 + 2), not the settings' mean (0.5222)
    assert group["accuracy,none"] == pytest.approx(6 / 12, abs=1e-12)
    assert groups["mmsci_dev"]["accuracy,none"] == pytest.approx(6 / 12, abs=1e-12)
    table = group["breakdown,none"]
    assert table["setting_mean"]["accuracy"] == round((1 / 2 + 2 / 3 + 2 / 5) / 3, 4)
    assert table["overall"]["all"]["correct"] == 6 and table["overall"]["all"]["n"] == 12
    # the authors' denominator leaves out the 3 unresolved outputs (rows 3, 6, 8): 2/3, 2/2, 2/4, pooled 6/9
    answered = table["paper_denominator"]
    assert {key: (cell["correct"], cell["n"]) for key, cell in answered["setting"].items()} == {
        "fig2cap": (2, 3),
        "subcap2fig": (2, 4),
        "subfig2cap": (2, 2),
    }
    assert answered["overall"]["all"]["accuracy"] == round(6 / 9, 4)
    assert table["setting_mean"]["paper_denominator"] == round((2 / 3 + 1 + 1 / 2) / 3, 4)
    assert table["flags"]["resolution"] == {"rule": 8, "judge": 1, "unresolved": 3}
    assert table["flags"]["judge"] == {"not_used": 10, "judged": 2}
    assert {key: (cell["correct"], cell["n"]) for key, cell in table["category"].items()} == {
        "Biological sciences": (2, 6),
        "Physical sciences": (4, 6),
    }
    assert {key: (cell["correct"], cell["n"]) for key, cell in table["subject"].items()} == {
        "Ecology": (1, 3),
        "Genetics": (1, 3),
        "Materials science": (4, 6),
    }

    first = next(r for r in model.requests if "captions best describes" in r.text and row_of_request(r.body) == 0)
    options = [f"Row 0 caption {letter.lower()}: spectra of sample {index}." for index, letter in enumerate("ABCD")]
    assert first.text == mmsci.mcq_prompt(mmsci.FIG2CAP_QUESTION, options)
    assert first.n_images == 1
    samples = result.samples("mmsci_subcap2fig")
    assert sorted(s["breakdown"]["predicted"] or "-" for s in samples) == sorted(["A", "-", "C", "A", "D"])


def test_every_captioning_metric_is_reported(mmsci_judged_run) -> None:
    result, model, _ = mmsci_judged_run
    assert result.returncode == 0, result.output[-4000:]
    results = result.results()["results"]
    for task in ("mmsci_caption_image_only", "mmsci_caption_with_abstract"):
        values = results[task]
        names = ("bleu2", "bleu4", "cumulative_bleu_2", "cumulative_bleu_4", "rouge1", "rouge2", "rougeL", "meteor")
        names += ("bertscore_f1", "cider")
        for name in (*names, "factscore", "geval_relevance"):
            assert isinstance(values[f"{name},none"], float), (task, name, values[f"{name},none"])
        assert values["cider,none"] > 0
        assert values["factscore,none"] == pytest.approx(2 * math.exp(1 - 10 / N_FACTS) / 3)
        assert values["geval_relevance,none"] == pytest.approx((4 + 4 + 1) / 3)
        report = values["caption_report,none"]
        assert report["n"] == 3 and report["outputs"] == {"ok": 2, "empty": 1, "request_failed": 0}
        assert all(metric["available"] for metric in report["metrics"].values())
        assert report["judged"]["factscore"]["status"] == {"scored": 2, "empty_output": 1}
        assert report["protocol"] == {
            "name": "default",
            "captions_per_figure": 1,
            "empty_outputs": "scored 0 (G-Eval 1)",
        }
        # the authors' BLEU-2 / BLEU-4: n-gram precisions, by hand (13a tokens, "pressure ." and "current ." split):
        # reply 0: bigrams 8 of 9 and 4-grams 6 of 7 in the reference; reply 1: 6 of 9 and 2 of 7; the empty one 0
        assert values["bleu2,none"] == pytest.approx((8 / 9 + 6 / 9 + 0) / 3, rel=1e-12)
        assert values["bleu4,none"] == pytest.approx((6 / 7 + 2 / 7 + 0) / 3, rel=1e-12)
        # cumulative BLEU-2 of reply 0: p1 = 10/10, p2 = 8/9, 10 tokens against 20 -> BP = exp(1 - 20/10)
        assert values["cumulative_bleu_2,none"] > 0 and values["cumulative_bleu_2,none"] != values["bleu2,none"]
        # ROUGE-1 of reply 0: 9 shared words of 9 predicted and 19 reference words
        assert values["rouge1,none"] == pytest.approx((2 * 9 / 28 + _rouge1(1)) / 3)
        assert len(result.samples(task)) == 3

    prompts = {r.text for r in model.requests if "detailed description" in r.text}
    assert mmsci.CAPTION_IMAGE_ONLY_PROMPT in prompts
    assert mmsci.caption_prompt(f"{ABSTRACT} Row 1.") in prompts
    assert "sk-judge-secret-9191" not in result.output


def _rouge1(row: int) -> float:
    words = lambda text: re.findall(r"[a-z0-9]+", text.lower())  # noqa: E731
    prediction, reference = words(CAPTION_REPLIES[row]), words(REFERENCES[row])
    overlap = sum(min(prediction.count(w), reference.count(w)) for w in set(prediction))
    return 2 * overlap / (len(prediction) + len(reference))


NEVER_JUDGED = "ALWAYS-FAILS"


@pytest.mark.slow
@pytest.mark.cli
def test_a_judge_failing_30_percent_of_calls_loses_no_sample(tmp_path: Path) -> None:
    def flaky(request: ChatRequest) -> Reply:
        return Reply(status=500) if NEVER_JUDGED in request.text else judge_policy(request)

    CAPTION_REPLIES.append(f"{NEVER_JUDGED} The figure shows cells.")  # a fourth caption the judge always fails on
    REFERENCES.append("Cells in the figure under the microscope with a scale bar of one micron shown.")
    try:
        env = {"SCIFIG_JUDGE_TIMEOUT_S": "1", "SCIFIG_JUDGE_MAX_RETRIES": "2"}
        result, model, judge = run_mmsci(tmp_path, faulty(flaky, rate=0.3, seed=11, timeout_s=1.5), env)
        model.stop()
        judge.stop()
    finally:
        CAPTION_REPLIES.pop()
        REFERENCES.pop()
    assert result.returncode == 0, result.output[-4000:]
    results, groups = result.results()["results"], result.results()["groups"]

    for prefix in ("mmsci", "mmsci_dev"):
        assert sum(len(result.samples(f"{prefix}_{setting}")) for setting in mmsci.SETTINGS) == len(MCQ)
    flags = groups["mmsci"]["breakdown,none"]["flags"]
    assert sum(flags["resolution"].values()) == len(MCQ)
    assert flags["judge"]["not_used"] == 10  # "B or C" and "(b)" went to the judge, judged or failed and counted
    assert flags["judge"].get("judged", 0) + flags["judge"].get("judge_failed", 0) == 2

    for task in ("mmsci_caption_image_only", "mmsci_caption_with_abstract"):
        assert len(result.samples(task)) == 4  # no sample lost
        report = results[task]["caption_report,none"]
        for metric, per_caption in (("factscore", math.exp(-1)), ("geval_relevance", 4.0)):
            status = report["judged"][metric]["status"]
            assert sum(status.values()) == 4 and status["empty_output"] == 1
            assert status.get("judge_failed", 0) >= 1  # the always-failing caption, plus any run out of retries
            assert set(status) <= {"scored", "judge_failed", "empty_output"}
            scored = status.get("scored", 0)
            empty_score = 0.0 if metric == "factscore" else 1.0
            if scored:
                expected = (scored * per_caption + empty_score) / (scored + 1)
                assert results[task][f"{metric},none"] == pytest.approx(expected)
            else:  # nothing the judge scored: unavailable, not the empty output's 0
                assert results[task][f"{metric},none"] is None
    assert any(request.attempt > 1 for request in judge.requests)  # faults happened and were retried
    assert "sk-judge-secret-9191" not in result.output


def test_the_paper_setting_samples_three_captions_and_scores_them_as_the_authors(mmsci_judged_run) -> None:
    result, model, judge = mmsci_judged_run
    assert result.returncode == 0, result.output[-4000:]
    results = result.results()["results"]
    sampled = [r for r in model.requests if "detailed description" in r.text and r.body.get("temperature") == 0.7]
    assert len(sampled) == 2 * 3 * 3  # 2 prompts x 3 figures x 3 captions
    assert {r.body.get("top_p") for r in sampled} == {1.0}
    for task in ("mmsci_caption_image_only_paper", "mmsci_caption_with_abstract_paper"):
        values = results[task]
        report = values["caption_report,none"]
        assert report["protocol"] == {
            "name": "paper",
            "captions_per_figure": 3,
            "empty_outputs": "left out of every mean",
        }
        assert report["outputs"] == {"ok": 9, "empty": 0, "request_failed": 0}
        assert values["bleu2,none"] == pytest.approx(PAPER_P2, rel=1e-12)
        assert values["bleu4,none"] == pytest.approx(PAPER_P4, rel=1e-12)
        assert values["factscore,none"] == pytest.approx(PAPER_FACTSCORE, rel=1e-12)
        assert report["judged"]["factscore"]["mean_atomic_facts"] == 6.0
        assert values["geval_relevance,none"] == pytest.approx(3.0)
        assert report["judged"]["geval_relevance"]["per_caption_index"] == [3.0, 3.0, 3.0]
        samples = result.samples(task)
        assert len(samples) == 3
        assert all(len(sample["bleu2"]["predictions"]) == 3 for sample in samples)  # the logged record
    paper_judge = [r for r in judge.requests if r.body["messages"][0]["role"] == "system"]
    temperatures = {r.body["messages"][0]["content"]: r.body["temperature"] for r in paper_judge}
    # split and ratings at 0.7, G-Eval at 1
    assert temperatures == {FACTS_INSTRUCTION: 0.7, RATING_DEFINITION: 0.7, GEVAL_RELEVANCE_CRITERIA: 1.0}
