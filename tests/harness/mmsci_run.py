"""The MMSci run several test modules check: 12 multiple-choice questions over the three settings and 3 captions,
answered by a local model with replies whose letters and n-gram counts are worked out by hand below, scored with a
local judge and a tiny local BERTScore model through the real ``lmms-eval`` CLI.

:func:`mmsci_judged_run` is that run (``mmsci``, ``mmsci_dev``, ``mmsci_captioning`` and ``mmsci_captioning_paper``),
made once per test session (per pytest-xdist worker) and shared by the MMSci CLI tests and the rescore tests, which
only read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA, RATING_DEFINITION
from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.mmsci_data import Caption, Mcq, row_of_request, tiny_bert, write
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply

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

# the paper setting: the model samples 3 captions per figure at temperature 0.7 (the n-th identical request gets the
# n-th caption). 13a tokens and n-gram precisions against REFERENCES, counted by hand:
# "The figure shows spectra of the sample under pressure ." p2 8/9, p4 6/7 | "The figure shows spectra ." p2 3/4,
# p4 1/2 | "spectra under pressure" p2 1/2, p4 0 (no 4-gram) | row 1 "Schematic ... the current ." p2 6/9, p4 2/7 |
# row 2 "Cells in the plot show growth ." p2 5/6, p4 3/4
PAPER_CAPTIONS = [
    [CAPTION_REPLIES[0], "The figure shows spectra.", "spectra under pressure"],
    [CAPTION_REPLIES[1]] * 3,
    ["Cells in the plot show growth."] * 3,
]
PAPER_P2 = (8 / 9 + 3 / 4 + 1 / 2 + 3 * (6 / 9) + 3 * (5 / 6)) / 9
PAPER_P4 = (6 / 7 + 1 / 2 + 0 + 3 * (2 / 7) + 3 * (3 / 4)) / 9
# the judge's split reply in the paper setting: 6 pieces on "-" ("", " state", "of", "the", "art fact\n",
# " second fact"), 5 rated; each rating reply "5, not 3" is read as 3 by the authors' rule -> 0.6 * exp(1 - 10/6)
PAPER_SPLIT = "- state-of-the-art fact\n- second fact"
PAPER_FACTSCORE = 0.6 * math.exp(1 - 10 / 6)


def mcq_model(request: ChatRequest) -> str | Reply:
    row = row_of_request(request.body)
    if "detailed description" in request.text:
        if request.body.get("temperature") == 0.7:
            return PAPER_CAPTIONS[row][request.attempt - 1]
        return CAPTION_REPLIES[row]
    return MCQ[row][1]


OUTPUT_IN_JUDGE_PROMPT = re.compile(
    r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL
)


def judge_policy(request: ChatRequest) -> Reply:
    text = request.text
    if request.body["messages"][0]["role"] == "system":  # the paper setting's messages, sampled
        system = request.body["messages"][0]["content"]
        if system == FACTS_INSTRUCTION:
            return Reply(text=PAPER_SPLIT)
        if system == RATING_DEFINITION:
            return Reply(text="5, not 3")
        assert system == GEVAL_RELEVANCE_CRITERIA, system[:80]
        return Reply(text="Relevance: 4/5" if request.attempt % 2 else "3")  # the first bare integer decides: 3
    if text.startswith(FACTS_INSTRUCTION):
        return Reply(text="\n".join(f"- description {index}" for index in range(N_FACTS)))
    if text.startswith(RATING_DEFINITION):
        return Reply(text="5")
    if text.startswith(GEVAL_RELEVANCE_CRITERIA):
        return Reply(text="4")
    output = OUTPUT_IN_JUDGE_PROMPT.search(text)
    assert output, f"unexpected judge prompt {text[:120]!r}"
    return Reply(text=JUDGE_LETTERS[output.group(1)])


def run_mmsci(
    workdir: Path, judge_policy_: Any, extra_env: dict[str, str] | None = None, extra_tasks: str = ""
) -> tuple[CliRun, Any, Any]:
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
    args += ["--tasks", f"mmsci,mmsci_dev,mmsci_captioning{extra_tasks}", "--log_samples"]
    result = run("lmms-eval", args, env, workdir / "out")
    return result, model, judge


@pytest.fixture(scope="session")
def mmsci_judged_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CliRun, Any, Any]]:
    """:func:`run_mmsci` with the healthy judge, the paper's captioning task too: (run, model server, judge server)."""
    result, model, judge = run_mmsci(
        tmp_path_factory.mktemp("mmsci-judged"), judge_policy, extra_tasks=",mmsci_captioning_paper"
    )
    yield result, model, judge
    model.stop()
    judge.stop()
    assert not model.errors and not judge.errors, (model.errors, judge.errors)
