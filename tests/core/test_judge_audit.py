"""The judge audit: a seeded share of rule-resolved answers also goes to the judge; agreement (Wilson interval),
every disagreement and the judge's description are in the breakdown and the report. Hand-counted through the real
lmms-eval CLI with a judge that disagrees on known items."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scifig_tasks.core.audit import PROMPT_VERSION, audit_share
from scifig_tasks.core.stats import wilson_interval
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.scifibench_data import Question, build, write_splits
from tests.harness.scifibench_run import image_colours

LETTERS = "ABCDE"
# question ID -> (model output, what the test's judge answers about it); every output is resolved by the rules
CASES = {qid: (f"Answer: {LETTERS[qid % 5]}\nFigure {qid} read.", LETTERS[qid % 5]) for qid in range(30)}
CASES[3] = ("Answer: D\nFigure 3 read.", "E")  # the judge disagrees
CASES[11] = ("Answer: B\nFigure 11 read.", "None")  # the judge finds no answer where the rules read B
CASES[17] = ("The correct caption is C. Figure 17 read.", "A")  # the judge disagrees
CASES[22] = ("Answer: C\nFigure 22 read.", Reply(status=500))  # the judge fails: not compared
JUDGE_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)


def test_audit_share_is_read_and_checked() -> None:
    assert audit_share({}) == 0.05
    assert audit_share({"SCIFIG_JUDGE_AUDIT": "0"}) == 0.0
    with pytest.raises(ValueError, match="SCIFIG_JUDGE_AUDIT='1.5': set a share between 0 and 1"):
        audit_share({"SCIFIG_JUDGE_AUDIT": "1.5"})


def run_audited(tmp_path: Path, openai_server, lmms_env, run_cli, share: str):
    questions = [Question("f2c", LETTERS[qid % 5]) for qid in CASES]
    data = write_splits({"CS_Figure2Caption": build(questions)}, tmp_path / "scifibench")
    by_output = {output: reply for output, reply in CASES.values()}

    def judge_policy(request: ChatRequest) -> Reply:
        reply = by_output[JUDGE_OUTPUT.search(request.text).group(1)]
        return reply if isinstance(reply, Reply) else Reply(text=reply)

    judge = openai_server(judge_policy)
    model = openai_server(lambda request: CASES[image_colours(request)[0][0]][0])
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(data),
        "SCIFIG_JUDGE_AUDIT": share,
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_MAX_RETRIES": "0",
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm", "--tasks", "scifibench_cs_figure2caption"]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]
    return run, judge


def test_every_rule_resolved_answer_audited_agreement_and_disagreements_by_hand(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    run, judge = run_audited(tmp_path, openai_server, lmms_env, run_cli, share="1")
    table = run.results()["results"]["scifibench_cs_figure2caption"]["breakdown,none"]
    section = table["judge_audit"]
    # 30 answers audited; 1 judge failure; of 29 compared, 26 agree (3, 11, 17 do not)
    low, high = wilson_interval(26, 29)
    assert section["agreement"] == {
        "n": 29,
        "correct": 26,
        "accuracy": round(26 / 29, 4),
        "ci95": [round(low, 4), round(high, 4)],
    }
    assert section["judge_failed"] == 1
    assert section["disagreements"] == [
        {"id": "11", "rules": "B", "judge": None},
        {"id": "17", "rules": "C", "judge": "A"},
        {"id": "3", "rules": "D", "judge": "E"},
    ]
    assert section["judge"] == {
        "model": "fake-judge",
        "host": "127.0.0.1",
        "prompt_version": PROMPT_VERSION,
        "cache_hits": 0,
    }
    assert table["flags"]["resolution"] == {"rule": 30}  # the audit reports; it never changes a score
    assert run.results()["results"]["scifibench_cs_figure2caption"]["accuracy,none"] == 1.0  # every answer is right
    assert len(judge.requests) == 30


def test_the_default_share_audits_at_least_twenty(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    run, judge = run_audited(tmp_path, openai_server, lmms_env, run_cli, share="0.05")
    section = run.results()["results"]["scifibench_cs_figure2caption"]["breakdown,none"]["judge_audit"]
    assert len(judge.requests) == 20  # 5% of 30 is 2: the minimum of 20 applies
    assert section["agreement"]["n"] + section["judge_failed"] == 20


def test_the_report_shows_the_audit(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    from scifig_tasks.report.audit import audit_table

    run, _ = run_audited(tmp_path, openai_server, lmms_env, run_cli, share="1")
    table = audit_table(
        "SciFIBench", [("fake-vlm", run.results()["results"]["scifibench_cs_figure2caption"]["breakdown,none"])]
    )
    assert table is not None and table.header[:4] == ["model", "audited", "agreement", "judge failed"]
    low, high = wilson_interval(26, 29)
    assert table.rows[0][:4] == ["fake-vlm", "29", f"89.7 ({100 * low:.1f}-{100 * high:.1f})", "1"]
    assert table.rows[0][4] == "11: rules B, judge none; 17: rules C, judge A; 3: rules D, judge E"
