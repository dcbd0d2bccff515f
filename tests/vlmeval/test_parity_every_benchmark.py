"""lmms-eval and VLMEvalKit give the same numbers on every registered benchmark.

For each registered benchmark, its datasets the report shows (a test-set dataset under the default protocol, named as
the lmms-eval task or group asking the same questions) run through both frameworks on the same small data
(``tests/harness/<benchmark>_data.py``: ``sample(root)``) against one reply policy, with no judge: every reply is a
function of the request's text alone, so equal prompts get equal replies. Each dataset's VLMEvalKit ``breakdown`` must
equal its lmms-eval ``breakdown`` (the counts every number is computed from). Datasets whose details are corpus metrics
(MMSci captioning: BERTScore, CIDEr, the judged FActScore) are compared by ``tests/vlmeval/test_vlmeval_mmsci.py``; the
hand-derived counts of each benchmark by ``test_vlmeval_runner.py``.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.core import registry
from tests.harness.openai_server import ChatRequest
from tests.harness.vlmeval import run_vlmeval, vlmeval_scores

REPLIES = (
    "A",
    "The answer is 3. I hope the answer is correct.",
    "B) is the best match.",
    "I cannot tell from the figure.",
    "3",
    "[2, 4]",
)
"""Replies the model gives, one chosen per request by its text."""


def model_reply(request: ChatRequest) -> str:
    """One of :data:`REPLIES`, chosen by the request's text."""
    return REPLIES[hashlib.sha256(request.text.encode()).digest()[0] % len(REPLIES)]


def judge_reply(request: ChatRequest) -> str:
    """The judge answers in the form its prompt asks for: the answer sentence when the prompt's worked examples show
    it (``Extracted Answer: The answer is ...``, a reformatting), else "None" (no answer found: a multiple-choice or
    extraction prompt's own word)."""
    asked_for_sentence = "Extracted Answer: The answer is" in request.text
    return "The answer is 3. I hope the answer is correct." if asked_for_sentence else "None"


def counts(table: Any) -> Any:
    """A breakdown without the judge's cache hits (how many of its replies a process found cached: run history, not
    a count a number is computed from)."""
    if isinstance(table, dict):
        return {key: counts(value) for key, value in table.items() if key != "cache_hits"}
    return [counts(value) for value in table] if isinstance(table, list) else table


def compared() -> dict[str, str]:
    """Dataset name -> the registered benchmark owning it: every shown dataset whose details are counts."""
    return {
        dataset.name: described.name
        for described in registry.benchmarks().values()
        for dataset in (described.vlmeval.datasets if described.vlmeval else ())
        if dataset.shown and dataset.detail_metric == "breakdown"
    }


@pytest.mark.slow
@pytest.mark.cli
def test_both_frameworks_count_the_same_on_every_benchmark(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    from scifig_tasks.vlmeval import dataset_classes

    names = compared()
    assert set(names.values()) == {name for name, b in registry.benchmarks().items() if b.vlmeval}
    data: dict[str, str] = {}
    for benchmark in sorted(set(names.values())):
        data |= importlib.import_module(f"tests.harness.{benchmark}_data").sample(tmp_path / "data" / benchmark)
    classes = {name: cls.__name__ for cls in dataset_classes() for name in cls.NAMES if name in names}

    judge = {"SCIFIG_JUDGE_MODEL": "fake-judge", "SCIFIG_JUDGE_BASE_URL": openai_server(judge_reply).base_url}
    vlm_env = {**lmms_env, **data, **judge, "SCIFIG_JUDGE_CACHE": str(tmp_path / "judge-cache-vlmeval")}
    completed, out = run_vlmeval(tmp_path, openai_server(model_reply).base_url, vlm_env, classes)
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-6000:]

    model = openai_server(model_reply)
    judge = {"SCIFIG_JUDGE_MODEL": "fake-judge", "SCIFIG_JUDGE_BASE_URL": openai_server(judge_reply).base_url}
    env = {**lmms_env, **data, **judge, "OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    lmms = run_cli("lmms-eval", [*args, "--tasks", ",".join(names)], env, tmp_path / "lmms-out")
    assert lmms.returncode == 0, lmms.output[-4000:]
    results = lmms.results()

    scored: dict[str, int] = {}
    for name, benchmark in names.items():
        entry = results["groups"].get(name) or results["results"][name]
        scores = vlmeval_scores(out, name)
        assert counts(scores["breakdown"]) == counts(entry["breakdown,none"]), (benchmark, name)
        assert scores["breakdown"]["overall"], name
        scored[benchmark] = scored.get(benchmark, 0) + (scores["metrics"].get("correct") or 0)
    assert sum(scored.values()) > 0, scored  # the replies score somewhere: the equal counts are not all zero
