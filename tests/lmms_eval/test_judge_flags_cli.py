"""Judge failures are visible: SciFIBench through the real ``lmms-eval`` CLI with a judge answering HTTP 500 on known
items, and the ``flags.judge`` counts of GRAB's multiple-choice ablation, MMSci and Plot Twist with a local judge.

Every multiple-choice breakdown counts ``flags.judge`` as ``not_used`` (the rules decided, or nothing to read),
``judged`` (the judge replied, with a letter or with none) and ``judge_failed`` (no reply: the answer counts wrong
and is also counted ``unresolved``). The expected counts below are written by hand from the reply tables.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

from PIL import Image

from scifig_tasks.benchmarks.grab import multiple_choice as grab_mc
from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.benchmarks.plot_twist import rules as pt
from scifig_tasks.core.judge import JudgeClient, JudgeConfig
from tests.harness.lmms import served_env
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.scifibench_data import Question, build, write_splits

# qid -> (answer, model output, judge reply: a letter, "None", or Reply(status=500); None = never asked)
SCIFIBENCH: dict[int, tuple[str, str, str | Reply | None]] = {
    0: ("A", "Answer: A", None),  # rule, right
    1: ("B", "Answer: C", None),  # rule, wrong
    2: ("C", "The correct caption is C.", None),  # rule, right
    3: ("D", "It could be D or E (item 3).", "D"),  # judged, right
    4: ("E", "It could be A or E (item 4).", "A"),  # judged, wrong
    5: ("A", "It could be A or B (item 5).", "None"),  # judged: the judge found none
    6: ("B", "It could be B or C (item 6).", Reply(text="judge overloaded", status=500)),  # judge failed
    7: ("C", "Answer: C", None),  # rule, right
    8: ("D", "It could be D or A (item 8).", Reply(text="judge overloaded", status=500)),  # judge failed
    9: ("E", "", None),  # empty output: never sent
}
JUDGE_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)


def first_image_red(request: ChatRequest) -> int:
    for part in request.body["messages"][0]["content"]:
        if isinstance(part, dict) and part.get("type") == "image_url":
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            return Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0))[0]  # = qid (scifibench_data.colour)
    raise AssertionError("no image in the request")


def judge_policy(request: ChatRequest) -> Reply:
    output = JUDGE_OUTPUT.search(request.text).group(1)
    (reply,) = [judged for _, said, judged in SCIFIBENCH.values() if said == output]
    assert reply is not None, f"the judge was asked about {output!r}"
    return reply if isinstance(reply, Reply) else Reply(text=reply)


def test_scifibench_reports_judge_failures_apart_from_none_found(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    questions = [Question("f2c", answer) for answer, _, _ in SCIFIBENCH.values()]
    data = write_splits({"CS_Figure2Caption": build(questions)}, tmp_path / "scifibench")
    model = openai_server(lambda request: SCIFIBENCH[first_image_red(request)][1])
    judge = openai_server(judge_policy)
    env = served_env(
        lmms_env, model.base_url, judge.base_url, SCIFIG_SCIFIBENCH_DATA=str(data), SCIFIG_JUDGE_MAX_RETRIES="1"
    )
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "scifibench_cs_figure2caption", "--log_samples"]

    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    result = run.results()["results"]["scifibench_cs_figure2caption"]
    flags = result["breakdown,none"]["flags"]
    assert flags["judge"] == {"not_used": 5, "judged": 3, "judge_failed": 2}
    assert flags["resolution"] == {"rule": 4, "judge": 2, "unresolved": 4}
    assert result["accuracy,none"] == 0.4  # items 0, 2, 3 and 7
    samples = {s["breakdown"]["ID"]: s["breakdown"] for s in run.samples("scifibench_cs_figure2caption")}
    assert samples[6]["reason"] == "alternatives; judge failed" and samples[6]["correct"] == 0
    assert samples[5]["reason"] == "alternatives; judge found none"
    assert judge.count == 7  # items 3, 4, 5 once; items 6 and 8 twice (one retry each)


# ---- the other benchmarks' flags.judge, with a real client against a local judge ------------------------------------


def local_judge(server_url: str, tmp_path: Path) -> JudgeClient:
    config = JudgeConfig(
        base_url=server_url,
        model="fake-judge",
        max_retries=0,
        backoff_initial_s=0.01,
        cache_dir=tmp_path / "cache",
    )
    return JudgeClient(config)


def test_grab_mc_breakdown_counts_judge_use(openai_server, tmp_path: Path) -> None:
    judge_server = openai_server(lambda request: Reply(status=500) if "second" in request.text else Reply(text="None"))
    options = ["A) 1", "B) 2", "C) 3", "D) 4", "E) 5"]
    outputs = ["B", "first: A or B", "second: A or B", ""]
    with local_judge(judge_server.base_url, tmp_path) as judge:
        records = [
            grab_mc.sample_record(
                {"pid": pid, "category": "Counting", "mc_answer": "B"},
                grab_mc.score_mc(out, options, "B", judge, question="How many lines are there?"),
            )
            for pid, out in enumerate(outputs)
        ]
    flags = grab_mc.breakdown(records)["flags"]
    assert flags["judge"] == {"not_used": 2, "judged": 1, "judge_failed": 1}
    assert flags["resolution"] == {"rule": 1, "unresolved": 3}


def test_mmsci_breakdown_counts_judge_failures(openai_server, tmp_path: Path) -> None:
    judge_server = openai_server(lambda request: Reply(status=500) if "(b) or" in request.text else Reply(text="A"))
    doc = {
        "uid": "u",
        "figure_index": 0,
        "setting": "fig2cap",
        "subfigure": "",
        "category": "c",
        "subject": "s",
        "answer": "A",
        "question": "Which caption?",
        "options": ["A: first caption here", "B: second caption here"],
    }
    with local_judge(judge_server.base_url, tmp_path) as judge:
        records = [
            mmsci.sample_record({**doc, "uid": str(i)}, mmsci.resolve_answer(doc, output, judge))
            for i, output in enumerate(["A", "Maybe A or B.", "Maybe (b) or A."])
        ]
    assert mmsci.breakdown(records)["flags"]["judge"] == {"not_used": 1, "judged": 1, "judge_failed": 1}


def test_plot_twist_reformat_flags_judge_use(openai_server, tmp_path: Path) -> None:
    def reformat(request: ChatRequest) -> Reply:
        if "about twenty" in request.text:
            return Reply(text="The answer is 20. I hope the answer is correct.")
        if "no idea" in request.text:
            return Reply(text="The answer is None. I hope the answer is correct.")
        return Reply(text="overloaded", status=500)

    judge_server = openai_server(reformat)
    doc = {
        "q_id": "q",
        "figure_id": "f",
        "chart_type": "bar",
        "question_type": "max_bar",
        "question": "What is the highest bar?",
        "answer": "20",
        "x_range": 10,
        "y_range": 100,
    }
    outputs = ["The answer is 20. I hope the answer is correct.", "about twenty", "no idea", "it broke"]
    with local_judge(judge_server.base_url, tmp_path) as judge:
        records = [
            pt.sample_record({**doc, "q_id": f"q{i}"}, [pt.score_output(doc, output, judge)])
            for i, output in enumerate(outputs)
        ]
    assert [record["judge"] for record in records] == [["not_used"], ["judged"], ["judged"], ["judge_failed"]]
    assert pt.breakdown(records)["flags"]["judge"] == {"not_used": 1, "judged": 2, "judge_failed": 1}
