"""A judge that answers some extraction prompts with an error text, through the real ``scifig eval`` CLI with local
model and judge servers on 127.0.0.1.

``Error 503: upstream overloaded`` holds digits, and GRAB's extraction check took any reply holding a digit for an
answer: the run exited 0 with those questions scored wrong, the samples recorded ``judge: judged`` with the error text
as the extracted answer, and the reply was cached, so a rerun against a healthy judge sent nothing and kept the wrong
score. Now the reply must be the answer alone, in the question's answer format: the error text is asked again, the
question is ``judge_failed`` (the run exits 1), nothing of it is cached, and a rerun asks again and scores 1.0.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.openai_server import ChatRequest, Reply
from tests.lmms_eval.test_judge_replies_cli import (
    N_GRAB,
    QUOTED_OUTPUT,
    cache_entries,
    extracting,
    grab_eval,
    grab_setup,
)

GARBAGE = "Error 503: upstream overloaded"
OVERLOADED = frozenset(pid for pid in range(N_GRAB) if pid % 3 == 0)
"""The questions whose extraction prompt the judge answers with the error text (4 of 12)."""
GRAB_TASKS = ("properties", "functions", "series", "transforms")


def test_an_error_text_from_the_judge_is_never_an_extracted_answer(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    env = grab_setup(tmp_path, openai_server, lmms_env)

    def overloaded(request: ChatRequest) -> Reply:
        pid = int(QUOTED_OUTPUT.search(request.text).group(1))
        return Reply(text=GARBAGE) if pid in OVERLOADED else extracting(request)

    judge = openai_server(overloaded)
    env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MAX_RETRIES": "1"}
    run, group = grab_eval(run_cli, env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]  # before: 0, accuracy 0.667
    assert f"scifig eval: {len(OVERLOADED)} samples could not be judged" in run.output
    records = [sample["breakdown"] for task in GRAB_TASKS for sample in run.samples(f"grab_{task}_llm_extract")]
    failed = {record["pid"]: record["extracted"] for record in records if record["judge"] == "judge_failed"}
    assert failed == dict.fromkeys(OVERLOADED)  # before: judged, extracted "Error 503: upstream overloaded"
    judged = N_GRAB - len(OVERLOADED)
    assert group["breakdown,none"]["flags"]["judge"] == {"judged": judged, "judge_failed": len(OVERLOADED)}
    assert abs(group["accuracy,none"] - judged / N_GRAB) < 1e-12
    cached = [json.loads(entry.read_text(encoding="utf-8"))["text"] for entry in cache_entries(env)]
    assert len(cached) == judged and GARBAGE not in cached
    asked = [int(QUOTED_OUTPUT.search(request.text).group(1)) for request in judge.requests]
    assert sorted(pid for pid in asked if pid in OVERLOADED) == sorted([*OVERLOADED] * 2)  # asked again once

    judge.policy = extracting  # the same cache, a healthy judge: only the failed prompts are sent again
    judge.reset()
    rerun, regroup = grab_eval(run_cli, env, tmp_path / "rerun")
    assert rerun.returncode == 0, rerun.output[-4000:]
    assert sorted(int(QUOTED_OUTPUT.search(request.text).group(1)) for request in judge.requests) == sorted(OVERLOADED)
    assert regroup["accuracy,none"] == 1.0  # before: 0 requests, still 0.667
    assert regroup["breakdown,none"]["flags"]["judge"] == {"judged": N_GRAB}
