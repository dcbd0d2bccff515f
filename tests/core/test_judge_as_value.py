"""The judge is a value the scorers take, not process state: two judges in one process, no environment variables.

The core scorers (``scifibench.rules.resolve_answer``, ``grab.rules.score_doc``, ``mmsci.rules.resolve_answer``,
``captioning_metrics.evaluate``) take the judge as an argument; only the framework hooks ask ``get_judge()`` for the
one the settings configure. Here each of two local judges answers a different letter for the same refused output, and
each scorer call follows the judge it was handed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.benchmarks.scifibench import rules as scifibench
from scifig_tasks.core import settings
from scifig_tasks.core.judge import JudgeClient, JudgeConfig
from scifig_tasks.core.judged_hooks import JudgeRequired, refuse_without_judge

DOC = {
    "Question": "Which caption best matches the image?",
    "Options": ["A) a bar chart", "B) a line plot", "C) a pie chart", "D) a scatter plot", "E) a map"],
    "Answer": "B",
}
UNREADABLE = "Either the second or the third looks right to me."
"""An output the rules refuse (it commits to no letter), so it goes to the judge."""


def judge_for(server_url: str, cache: Path) -> JudgeClient:
    return JudgeClient(JudgeConfig(base_url=server_url, model="judge", cache_dir=cache, max_retries=0))


@pytest.fixture
def judging_off_in_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCIFIG_JUDGE", "off")
    settings.reset()
    assert settings.current().get("SCIFIG_JUDGE") == "off"


@pytest.mark.usefixtures("judging_off_in_the_settings")
def test_two_judges_in_one_process_each_decide_their_own_call(openai_server, tmp_path: Path) -> None:
    says_b = openai_server(lambda request: "B")
    says_c = openai_server(lambda request: "C")
    first = judge_for(says_b.base_url, tmp_path / "b")
    second = judge_for(says_c.base_url, tmp_path / "c")

    assert scifibench.resolve_answer(DOC, UNREADABLE, first).letter == "B"
    assert scifibench.resolve_answer(DOC, UNREADABLE, second).letter == "C"
    assert scifibench.resolve_answer(DOC, UNREADABLE, None).letter is None  # no judge: unresolved, never guessed
    assert len(says_b.requests) == 1 and len(says_c.requests) == 1


def test_a_required_judge_is_refused_only_when_absent() -> None:
    with pytest.raises(JudgeRequired, match="grab_properties_llm_extract cannot be scored without an LLM judge"):
        refuse_without_judge(["grab_properties_llm_extract"], available=False)
    refuse_without_judge(["grab_properties_llm_extract"], available=True)
