"""MMSci captioning's judged passes ask the judge side by side: FActScore and each caption index's G-Eval are
independent, so none waits for another's last replies (before, FActScore then each G-Eval pass, one after the other);
every sampled call of the paper setting is charged to the task being scored (before: to no task). Counted by the judge
server (:func:`tests.harness.openai_server.gathering`); the values are the authors' reading of the replies."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import captioning_metrics as captioning
from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, RATING_DEFINITION
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, task_scope
from tests.harness.fixtures import openai_server  # noqa: F401 -- pytest fixture
from tests.harness.openai_server import ChatRequest, Reply, gathering

TASK = "mmsci_caption_image_only_paper"


def replies(request: ChatRequest) -> Reply:
    system = request.body["messages"][0]["content"]
    if system == FACTS_INSTRUCTION:
        return Reply(text="- a fact\n- another fact")  # 3 pieces on "-", 2 rated
    return Reply(text="4")  # a rating, or G-Eval's bare integer


def test_factscore_and_every_geval_pass_ask_at_once_charged_to_the_task(
    openai_server,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the reference metrics are not what is tested (and importing ROUGE's nltk and scipy takes seconds)
    unmeasured = {name: captioning.MetricResult.unavailable(name, "n/a") for name in captioning.REFERENCE_METRICS}
    monkeypatch.setattr(captioning, "reference_metrics", lambda *args: unmeasured)
    gathered = gathering(replies, size=4)  # the split and the three G-Eval passes' first samples

    def judge_policy(request: ChatRequest) -> Reply:
        rating = request.body["messages"][0]["content"] == RATING_DEFINITION
        return replies(request) if rating else gathered(request)

    server = openai_server(judge_policy)
    records = [
        {
            "uid": "ncomms1",
            "figure_index": 0,
            "predictions": ["caption one", "caption two", "caption three"],
            "reference": "the reference caption",
            "protocol": "paper",
        }
    ]
    env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "no-model"), "SCIFIG_JUDGE": "off"}
    config = JudgeConfig(base_url=server.base_url, model="judge", cache_dir=tmp_path / "cache")
    with JudgeClient(config) as judge, task_scope(TASK):
        values = captioning.evaluate(records, env, judge=judge)["values"]
        usage = judge.usage()
    assert server.max_in_flight == 4  # before: 1 (FActScore's split, then each caption index's G-Eval)
    assert server.count == 1 + 2 + 3  # the split, a rating per fact, a G-Eval sample per caption
    assert values["factscore"] == pytest.approx(0.8 * math.exp(1 - 10 / 3))
    assert values["geval_relevance"] == 4.0
    assert list(usage) == [TASK] and usage[TASK]["calls"] == 6  # before: the sampled calls charged to no task
