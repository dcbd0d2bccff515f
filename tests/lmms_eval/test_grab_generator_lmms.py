"""A generated GRAB set through the real ``lmms-eval`` CLI via ``SCIFIG_GRAB_DATA``: the ``grab`` group scored by exact
match, and the standalone ``grab_properties_mc`` task (options built on the fly, resolved by rules, then a judge for
refused outputs). The model and the judge are local OpenAI-compatible servers; the multiple-choice replies below
have their outcome written by hand."""

from __future__ import annotations

import re
from pathlib import Path

import datasets

from curation.grab.build import build_grab
from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.multiple_choice import MC_INSTRUCTION
from tests.harness.openai_server import ChatRequest, Reply

JUDGED_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)
LIMIT = 28  # 7 questions per task


def _next(letter: str) -> str:
    return "ABCDE"[("ABCDE".index(letter) + 1) % 5]


# One reply per properties question (in pid order), as a function of its correct letter, and whether it scores.
MC_CASES = [
    (lambda letter: letter, True),  # the letter alone (rule)
    (lambda letter: f"Answer: ({letter})", True),  # an answer statement (rule)
    (lambda letter: _next(letter), False),  # a wrong letter (rule)
    (lambda letter: f"{letter} or {_next(letter)}", True),  # alternatives: refused by the rules, the judge picks it
    (lambda letter: "", False),  # empty: unresolved, never judged
    (lambda letter: "I cannot tell from the plot.", False),  # no option named: the judge finds none -> unresolved
    (lambda letter: f"The answer is {letter}.", True),  # an answer statement (rule)
]
EXPECTED_MC_ACCURACY = 4 / 7


def test_generated_set_runs_through_lmms_eval(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    built = build_grab(tmp_path / "grab", limit=LIMIT, workers=2, dpi=20, mc=True, progress=False)
    rows = datasets.Dataset.from_parquet(str(built.out / "GRAB.parquet")).remove_columns("decoded_image").to_list()
    mc_rows = datasets.Dataset.from_parquet(str(built.out / "properties_mc" / "GRAB.parquet"))
    mc_rows = mc_rows.remove_columns("decoded_image").to_list()
    assert len(rows) == LIMIT and len(mc_rows) == len(MC_CASES)
    assert len({row["question"] for row in rows}) == LIMIT  # so the model server can answer per question

    # GRAB: the true answer for even pids, a wrong one for odd pids.
    grab_replies = {grab.build_prompt(row["question"]): row["answer"] if row["pid"] % 2 == 0 else "x" for row in rows}
    mc_replies, judge_replies = {}, {}
    for row, (reply, _) in zip(mc_rows, MC_CASES, strict=True):
        prompt = row["question"] + "\n" + "\n".join(row["options"]) + "\n" + MC_INSTRUCTION
        mc_replies[prompt] = reply(row["mc_answer"])
        judge_replies[reply(row["mc_answer"])] = row["mc_answer"] if " or " in reply("A") else "None"

    def model(request: ChatRequest) -> Reply:
        for table in (mc_replies, grab_replies):
            for prompt, text in table.items():
                if prompt in request.text:
                    return Reply(text=text)
        return Reply(status=404)

    def judge_policy(request: ChatRequest) -> Reply:
        match = JUDGED_OUTPUT.search(request.text)
        assert match and match.group(1) in judge_replies, request.text[:300]
        return Reply(text=judge_replies[match.group(1)])

    server, judge = openai_server(model), openai_server(judge_policy)
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(built.out),
        "OPENAI_API_BASE": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab,grab_properties_mc", "--log_samples"]

    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    subtasks = {"properties": "grab_properties", "function": "grab_functions", "series": "grab_series"}
    subtasks["transform"] = "grab_transforms"
    for task, name in subtasks.items():
        pids = [row["pid"] for row in rows if row["task"] == task]
        assert results["results"][name]["accuracy,none"] == sum(pid % 2 == 0 for pid in pids) / len(pids), name
    group = results["groups"]["grab"]["breakdown,none"]["overall"]["all"]
    assert group["n"] == LIMIT and group["correct"] == sum(row["pid"] % 2 == 0 for row in rows)

    mc = results["results"]["grab_properties_mc"]
    assert mc["accuracy,none"] == EXPECTED_MC_ACCURACY
    assert mc["breakdown,none"]["flags"]["resolution"] == {"rule": 4, "judge": 1, "unresolved": 2}
    assert mc["breakdown,none"]["overall"]["all"]["n"] == len(MC_CASES)
    assert len(judge.requests) == 2  # only the two outputs the rules refused; never the empty one
    samples = {sample["breakdown"]["pid"]: sample["breakdown"] for sample in run.samples("grab_properties_mc")}
    for row, (_, correct) in zip(mc_rows, MC_CASES, strict=True):
        assert samples[row["pid"]]["mc_answer"] == row["mc_answer"]  # the task built the generator's options
        assert samples[row["pid"]]["correct"] == int(correct)
    assert "grab_properties_mc" not in results["group_subtasks"].get("grab", [])
