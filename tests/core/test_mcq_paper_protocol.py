"""The papers' own answer parsing, one switch away (the ``_paper`` task): every SciFIBench output reaches the
judge with the paper's prompt verbatim; MMSci sends every output that is not a bare label to the judge with the
authors' messages and reads the reply with their rule. The protocol that ran is recorded in the results."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.core import deprecation
from scifig_tasks.core import multiple_choice_paper as mcq_paper
from scifig_tasks.core import scoring_protocol as protocol
from scifig_tasks.core.judge import JudgeResult, replies
from scifig_tasks.core.judged_hooks import JudgeRequired
from tests.harness.mmsci_data import Caption, Mcq, row_of_request, write
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.scifibench_data import Question, build, options_for, write_splits
from tests.harness.scifibench_run import image_colours

# ---- the switch --------------------------------------------------------------------------------------------------


def test_the_task_name_is_the_switch() -> None:
    assert [protocol.protocol_of(name) for name in ("scifibench", "scifibench_paper", "mmsci_fig2cap_paper")] == [
        "default",
        "paper",
        "paper",
    ]
    assert protocol.in_force("scifibench", "paper", {}) == "paper"
    assert protocol.in_force("scifibench", "default", {}) == "default"
    assert protocol.in_force("scifibench", "paper", {"SCIFIG_PROTOCOL": "default"}) == "paper"  # the name wins
    with protocol.rescoring_as("paper"):  # scifig rescore --protocol paper
        assert protocol.in_force("scifibench", "default", {}) == "paper"
    assert protocol.in_force("scifibench", "default", {}) == "default"


def test_the_deprecated_variables_still_switch_plain_tasks_with_one_warning_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(deprecation, "_warned", set())
    environ = {"SCIFIG_PROTOCOL": "paper", "SCIFIG_SCIFIBENCH_PROTOCOL": "default"}
    assert protocol.in_force("scifibench", "default", environ) == "default"  # the benchmark's variable first
    assert protocol.in_force("mmsci", "default", {"SCIFIG_MMSCI_PROTOCOL": " Paper "}) == "paper"
    assert protocol.in_force("mmsci", "default", {"SCIFIG_MMSCI_PROTOCOL": "paper"}) == "paper"
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "scifig: SCIFIG_SCIFIBENCH_PROTOCOL is deprecated and goes in 0.3.0 — run the scifibench task (the task "
        "name chooses the protocol)",
        "scifig: SCIFIG_MMSCI_PROTOCOL is deprecated and goes in 0.3.0 — run the mmsci_paper task (the task name "
        "chooses the protocol)",
    ]
    with pytest.raises(ValueError, match="SCIFIG_PROTOCOL='papers'.*one of default, paper"):
        protocol.in_force("grab", "default", {"SCIFIG_PROTOCOL": "papers"})


# ---- the parsers -------------------------------------------------------------------------------------------------


class FixedJudge:
    def __init__(self, reply: str) -> None:
        self.reply, self.calls = reply, []

    def complete(self, prompt: str, **settings: object) -> JudgeResult:
        self.calls.append((prompt, settings))
        return JudgeResult(status="judged", text=self.reply)


@pytest.mark.parametrize(
    ("reply", "letter"), [("C", "C"), (" D\n", "D"), ("(B)", None), ("None", None), ("F", None), ("C.", None)]
)
def test_scifibench_paper_parse_compares_the_reply_itself(reply: str, letter: str | None) -> None:
    resolution = mcq_paper.resolve_scifibench("C", options_for(0), FixedJudge(reply))
    assert (resolution.letter, resolution.protocol) == (letter, "paper")


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("B", "B"),
        ("**Answer**: c", "C"),
        ("The answer is B. ", "B"),  # " B " and " B." both read B
        ("sub-figure (d)", "D"),
        ("The answer is option", None),
        ("I think A", None),  # no rule of theirs reads a final bare "A" after a space
        ("B: the second caption", "B"),
        ("This is D and A ", "A"),  # checked from A to Z: " A " wins, as in their loop
    ],
)
def test_mmsci_authors_reply_rule(reply: str, label: str | None) -> None:
    assert mcq_paper.authors_reply_label(reply) == label


def test_mmsci_bare_labels_skip_the_judge_and_the_rest_reach_it_with_the_authors_messages() -> None:
    judge = FixedJudge("C")
    assert mcq_paper.resolve_mmsci("B", "Q?\nA: x\nB: y", judge).letter == "B"
    assert mcq_paper.resolve_mmsci("F", "Q?\nA: x\nB: y", judge).letter == "F"  # a label, scored wrong
    assert judge.calls == []
    resolution = mcq_paper.resolve_mmsci(" B\n", "Q?\nA: x\nB: y", judge)  # not exactly a label: judged
    assert (resolution.letter, resolution.method) == ("C", "judge")
    assert judge.calls == [
        (
            "The question is: Q?\nA: x\nB: y.\nThe anaylysis is: B\nWhat is the correct answer mentioned in this "
            "analysis? Return only the final choice (A, B, C, D, ...)",
            {
                "system": "The user will provide an analysis of a multiple-choice question with a few options. "
                "Based on the analysis, infer the correct answer.",
                "temperature": 0.7,
                "max_tokens": 1024,
                "accept": replies.says_something,  # the authors' reader decides; non-answers asked again
            },
        )
    ]


def test_the_paper_protocol_without_a_judge_says_what_to_set() -> None:
    with pytest.raises(JudgeRequired, match="SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL"):
        mcq_paper.resolve_scifibench("C", options_for(0), None)


# ---- SciFIBench through the lmms-eval CLI ------------------------------------------------------------------------

OUTPUTS = [  # (model output, judge reply, answer)
    ("C", "C", "C"),
    ("The answer is B.", "B", "B"),
    ("B or C", "C", "C"),
    ("I cannot tell.", "None", "A"),
    ("Answer: D", "(D)", "D"),  # the paper compares the reply with the answer: "(D)" is not "D"
    ("E\nCaption A is unrelated.", "E", "A"),
]
PAPER_PROMPT = (
    "Here is the output from a generative model:\n{output}\nThe output contains the answer to a multiple choice "
    "question with options A) - E). Return only the letter of the answer. If no answer is found, return None."
)


def test_scifibench_paper_protocol_through_the_cli(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    questions = [Question("f2c", answer) for _, _, answer in OUTPUTS]
    data = write_splits({"CS_Figure2Caption": build(questions)}, tmp_path / "scifibench")

    def model_policy(request: ChatRequest) -> str:
        return OUTPUTS[image_colours(request)[0][0]][0]  # the image's red channel is the question ID

    replies = {PAPER_PROMPT.format(output=output): reply for output, reply, _ in OUTPUTS}
    judge = openai_server(lambda request: Reply(text=replies[request.text]))
    model = openai_server(model_policy)
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(data),
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-gemini",
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    args = [
        "--model",
        "openai",
        "--model_args",
        "model_version=fake-vlm",
        "--tasks",
        "scifibench_cs_figure2caption_paper",
    ]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]

    assert sorted(request.text for request in judge.requests) == sorted(replies)  # every output, prompt verbatim
    assert all(request.body["max_tokens"] == 3 and request.body["temperature"] == 0 for request in judge.requests)
    result = run.results()["results"]["scifibench_cs_figure2caption_paper"]
    assert result["accuracy,none"] == pytest.approx(3 / 6)  # C, B, C right; None, "(D)" and E wrong
    assert result["breakdown,none"]["flags"]["protocol"] == {"paper": 6}
    assert result["breakdown,none"]["flags"]["resolution"] == {"judge": 4, "unresolved": 2}


# ---- MMSci through the lmms-eval CLI ------------------------------------------------------------------------------

MMSCI_ROWS = [  # (question, model output, judge reply or None when the judge must not be asked, counted correct)
    (Mcq("fig2cap", "A"), "A", None, True),  # a bare label: taken as it is
    (Mcq("fig2cap", "B"), "B.", "B", True),  # not exactly a label: the authors' code asks the judge
    (Mcq("fig2cap", "C"), "Caption C matches; A does not.", "**Answer**: c", True),
    (Mcq("fig2cap", "D"), "I cannot tell.", "Unknown", False),  # no label: dropped from the paper denominator
    (Mcq("fig2cap", "A"), "", None, False),  # empty: never sent
]


def test_mmsci_paper_protocol_through_the_cli(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    data = write(tmp_path / "mmsci", [question for question, *_ in MMSCI_ROWS], [Caption("A caption.")])
    model = openai_server(lambda request: MMSCI_ROWS[row_of_request(request.body)][1])
    replies = {
        f"The anaylysis is: {output.strip()}\n": reply for _, output, reply, _ in MMSCI_ROWS if reply is not None
    }

    def judge_policy(request: ChatRequest) -> Reply:
        (reply,) = [reply for marker, reply in replies.items() if marker in request.text]
        return Reply(text=reply)

    judge = openai_server(judge_policy)
    env = {
        **lmms_env,
        "SCIFIG_MMSCI_DATA": str(data),
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-gpt-4o-mini",
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm", "--tasks", "mmsci_fig2cap_paper"]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]

    assert len(judge.requests) == 3
    first = next(request for request in judge.requests if "The anaylysis is: B.\n" in request.text)
    assert first.body["messages"] == [
        {
            "role": "system",
            "content": "The user will provide an analysis of a multiple-choice question with a few options. Based "
            "on the analysis, infer the correct answer.",
        },
        {
            "role": "user",
            "content": "The question is: Which of the following captions best describes the whole figure?\n"
            "A: Row 1 caption a: spectra of sample 0.\nB: Row 1 caption b: spectra of sample 1.\n"
            "C: Row 1 caption c: spectra of sample 2.\nD: Row 1 caption d: spectra of sample 3..\n"
            "The anaylysis is: B.\nWhat is the correct answer mentioned in this analysis? Return only the final "
            "choice (A, B, C, D, ...)",
        },
    ]
    assert (first.body["temperature"], first.body["max_tokens"]) == (0.7, 1024)
    result = run.results()["results"]["mmsci_fig2cap_paper"]
    assert result["accuracy,none"] == pytest.approx(3 / 5)
    table = result["breakdown,none"]
    assert table["flags"]["protocol"] == {"paper": 5}
    assert table["paper_denominator"]["overall"]["all"]["accuracy"] == round(3 / 3, 4)  # 2 without a label dropped
