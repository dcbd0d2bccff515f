"""``scifig vlmeval --model scifig_chance``: VLMEvalKit's runner with scifig's chance model, offline, no API.

It runs on the GRAB set the session's ``scifig demo`` generated and scored with lmms-eval's ``scifig_chance`` (same
seed, 0): VLMEvalKit's ``grab`` dataset must give every question the answer lmms-eval logged for it, hence the same
accuracy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.demo_run import DemoRun
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env

pytestmark = [pytest.mark.slow, pytest.mark.cli]


def lmms_eval_answers(demo: DemoRun) -> tuple[dict[int, str], float]:
    """The demo's logged answers by GRAB question id, and its ``grab`` accuracy."""
    answers = {}
    for path in (demo.out / "results").rglob("*_samples_grab_*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            answers[sample["breakdown"]["pid"]] = sample["filtered_resps"]
    (results,) = (demo.out / "results").rglob("*_results.json")
    return answers, json.loads(results.read_text())["results"]["grab"]["accuracy,none"]


def test_vlmeval_chance_answers_as_lmms_eval_does(demo_run: DemoRun, tmp_path: Path) -> None:
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    (data,) = (demo_run.out / "data").glob("*.parquet")
    env = offline_env(tmp_path) | {"SCIFIG_GRAB_DATA": str(data), "LMUData": str(tmp_path / "LMUData")}
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "vlmeval", "--model", "scifig_chance"]
    command += ["--data", "grab", "--work-dir", str(tmp_path / "out")]

    completed = warm_start.run(command, env, cwd=tmp_path, timeout=CLI_TIMEOUT_S)

    assert completed.returncode == 0, completed.stderr[-4000:]
    out = tmp_path / "out" / "scifig_chance"
    records = (out / "scifig_chance_grab_scifig_records.jsonl").read_text(encoding="utf-8").splitlines()
    answers = {record["pid"]: record["prediction"] for record in map(json.loads, records)}
    expected, accuracy = lmms_eval_answers(demo_run)
    assert len(answers) == 40 and answers == expected
    scores = json.loads((out / "scifig_chance_grab_scifig_scores.json").read_text())
    assert scores["metrics"]["accuracy"] == accuracy
