"""MMSci captioning metrics are computed once per distinct set of records: each lmms-eval metric's aggregation asks
:func:`scifig_tasks.benchmarks.mmsci.captioning_metrics.evaluate` for its own value, and only the first call asks the
judge;
other records or another judge are computed afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import captioning_metrics as captioning
from scifig_tasks.core.judge import JudgeConfig, JudgeResult


class Recording:
    """A judge that counts the prompts it is asked (a fact list for FActScore prompts, a 5 for G-Eval's)."""

    def __init__(self, model: str) -> None:
        self.config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model=model)
        self.prompts: list[str] = []

    def complete_many(self, prompts: list[str], **settings: object) -> list[JudgeResult]:
        self.prompts += prompts
        return [JudgeResult(status="judged", text="- a fact" if "fact" in p.lower() else "5") for p in prompts]


def test_the_same_records_are_scored_once_and_other_records_or_judges_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(captioning.shutil, "which", lambda name: None)  # no java: METEOR and CIDEr unavailable
    env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "absent"), "SCIFIG_JUDGE": "off"}
    records = [{"uid": "a", "figure_index": 0, "prediction": "a caption of a plot", "reference": "a plot"}]
    judge = Recording("first")
    first = captioning.evaluate(records, env, judge=judge)
    asked = len(judge.prompts)
    assert asked and first["values"]["geval_relevance"] is not None
    again = captioning.evaluate([dict(record) for record in records], env, judge=judge)
    assert again == first and len(judge.prompts) == asked  # equal records: the first result, no judge call
    other = [{**records[0], "prediction": "another caption"}]
    captioning.evaluate(other, env, judge=judge)
    assert len(judge.prompts) > asked  # other records: computed again
    second = Recording("second")
    captioning.evaluate(other, env, judge=second)
    assert second.prompts  # another judge: another cache entry
