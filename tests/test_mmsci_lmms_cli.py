"""MMSci through the real ``lmms-eval`` CLI (``--model openai`` against the local server, data in the
``SCIFIG_MMSCI_DATA`` layout): the authors' prompts, accuracies per setting and the paper's unweighted group mean,
every captioning metric reported (BERTScore from a tiny local model, FActScore and G-Eval from a local judge), and a
judge failing 30% of its calls losing no sample.

Expected values are derived by hand from the replies below, not from the package's scorer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.core import mmsci
from scifig_tasks.core.mmsci_judged import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA, RATING_DEFINITION
from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.mmsci_data import Caption, Mcq, row_of_request, tiny_bert, write
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, faulty

# row: (question, model reply, letter the reply resolves to or None) -- rows 0-5 Physical, 6-11 Biological sciences
MCQ: list[tuple[Mcq, str | Reply, str | None]] = [
    (Mcq("fig2cap", "A"), "A", "A"),
    (Mcq("fig2cap", "B"), "The final answer is **B**.", "B"),
    (Mcq("fig2cap", "C"), "A", "A"),
    (Mcq("fig2cap", "D"), "", None),  # empty: wrong, never judged
    (Mcq("subfig2cap", "A"), "Answer: A", "A"),
    (Mcq("subfig2cap", "B"), "B or C", "B"),  # ambiguous: the judge says B
    (Mcq("subfig2cap", "C", "Biological sciences", "Genetics"), Reply(status=400), None),  # request failed
    (Mcq("subcap2fig", "A", "Biological sciences", "Genetics"), "sub-figure (a)", "A"),
    (Mcq("subcap2fig", "B", "Biological sciences", "Genetics"), "(b)", None),  # the judge finds no letter
    (Mcq("subcap2fig", "C", "Biological sciences", "Ecology"), "C", "C"),
    (Mcq("subcap2fig", "D", "Biological sciences", "Ecology"), "A", "A"),
    (Mcq("subcap2fig", "A", "Biological sciences", "Ecology"), "D", "D"),
]
JUDGE_LETTERS = {"B or C": "B", "(b)": "None"}

REFERENCES = [
    "The figure shows spectra of the sample under pressure with a scale bar of one micron in each panel.",
    "Schematic of the device with two electrodes and the measured current under bias in every panel shown.",
    "Cells in the plot show growth over time for the wild type and the mutant strains in culture.",
]
CAPTION_REPLIES = [
    "The figure shows spectra of the sample under pressure.",
    "Schematic of the device with electrodes and the current.",
    "",  # empty output: every metric scores it 0 (G-Eval 1), it is never sent to the judge
]
ABSTRACT = "We report a stable material. Its spectra change under pressure."
N_FACTS = 5  # the judge splits every caption into 5 descriptions rated 5 -> FActScore e^-1 per caption


def mcq_model(request: ChatRequest) -> str | Reply:
    row = row_of_request(request.body)
    if "detailed description" in request.text:
        return CAPTION_REPLIES[row]
    return MCQ[row][1]


OUTPUT_IN_JUDGE_PROMPT = re.compile(
    r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL
)


def judge_policy(request: ChatRequest) -> Reply:
    text = request.text
    if text.startswith(FACTS_INSTRUCTION):
        return Reply(text="\n".join(f"- description {index}" for index in range(N_FACTS)))
    if text.startswith(RATING_DEFINITION):
        return Reply(text="5")
    if text.startswith(GEVAL_RELEVANCE_CRITERIA):
        return Reply(text="4")
    output = OUTPUT_IN_JUDGE_PROMPT.search(text)
    assert output, f"unexpected judge prompt {text[:120]!r}"
    return Reply(text=JUDGE_LETTERS[output.group(1)])


def _run(workdir: Path, judge_policy_: Any, extra_env: dict[str, str] | None = None) -> tuple[CliRun, Any, Any]:
    data = write(
        workdir / "mmsci",
        [question for question, _, _ in MCQ],
        [Caption(reference, abstract=f"{ABSTRACT} Row {row}.") for row, reference in enumerate(REFERENCES)],
    )
    write(data, [question for question, _, _ in MCQ], split="dev")  # the split public copies provide
    model = FakeOpenAIServer(mcq_model).start()
    judge = FakeOpenAIServer(judge_policy_).start()
    env = {
        **offline_env(workdir),
        "SCIFIG_MMSCI_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge-secret-9191",
        "SCIFIG_MMSCI_BERTSCORE_MODEL": str(tiny_bert(workdir / "tiny-bert")),
        **(extra_env or {}),
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "mmsci,mmsci_dev,mmsci_captioning", "--log_samples"]
    result = run("lmms-eval", args, env, workdir / "out")
    return result, model, judge


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CliRun, Any, Any]]:
    result, model, judge = _run(tmp_path_factory.mktemp("mmsci-healthy"), judge_policy)
    yield result, model, judge
    model.stop()
    judge.stop()
    assert not model.errors and not judge.errors, (model.errors, judge.errors)


def test_mcq_accuracies_per_setting_and_the_unweighted_group_mean(healthy) -> None:
    result, model, _ = healthy
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
    assert group["accuracy,none"] == pytest.approx((1 / 2 + 2 / 3 + 2 / 5) / 3, abs=1e-12)  # unweighted mean
    assert groups["mmsci_dev"]["accuracy,none"] == pytest.approx((1 / 2 + 2 / 3 + 2 / 5) / 3, abs=1e-12)
    table = group["breakdown,none"]
    assert table["setting_mean"]["accuracy"] == round((1 / 2 + 2 / 3 + 2 / 5) / 3, 4)
    assert table["overall"]["all"]["correct"] == 6 and table["overall"]["all"]["n"] == 12  # pooled: 0.5
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


def test_every_captioning_metric_is_reported(healthy) -> None:
    result, model, _ = healthy
    assert result.returncode == 0, result.output[-4000:]
    results = result.results()["results"]
    for task in ("mmsci_caption_image_only", "mmsci_caption_with_abstract"):
        values = results[task]
        names = ("bleu2", "bleu4", "rouge1", "rouge2", "rougeL", "meteor", "bertscore_f1", "cider")
        for name in (*names, "factscore", "geval_relevance"):
            assert isinstance(values[f"{name},none"], float), (task, name, values[f"{name},none"])
        assert values["cider,none"] > 0
        assert values["factscore,none"] == pytest.approx(2 * math.exp(1 - 10 / N_FACTS) / 3)
        assert values["geval_relevance,none"] == pytest.approx((4 + 4 + 1) / 3)
        report = values["caption_report,none"]
        assert report["n"] == 3 and report["outputs"] == {"ok": 2, "empty": 1, "request_failed": 0}
        assert all(metric["available"] for metric in report["metrics"].values())
        assert report["judged"]["factscore"]["status"] == {"scored": 2, "empty_output": 1}
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


def test_a_judge_failing_30_percent_of_calls_loses_no_sample(tmp_path: Path) -> None:
    def flaky(request: ChatRequest) -> Reply:
        return Reply(status=500) if NEVER_JUDGED in request.text else judge_policy(request)

    CAPTION_REPLIES.append(f"{NEVER_JUDGED} The figure shows cells.")  # a fourth caption the judge always fails on
    REFERENCES.append("Cells in the figure under the microscope with a scale bar of one micron shown.")
    try:
        env = {"SCIFIG_JUDGE_TIMEOUT_S": "1", "SCIFIG_JUDGE_MAX_RETRIES": "2"}
        result, model, judge = _run(tmp_path, faulty(flaky, rate=0.3, seed=11, timeout_s=1.5), env)
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
