"""What the judge did and cost: requests, cache hits, failures, tokens (from the replies' ``usage``), wall time and
cost, charged to the task each call was made for; the bound said before a judged run; ``scifig rescore --dry-run``.

The judge is the local OpenAI-compatible server of ``tests/harness/openai_server.py``, whose replies carry ``usage``
(prompt tokens: the words of the request's text; completion tokens: the words of the reply).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scifig_tasks.core import judge as judge_module
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, dry_run, task_scope, usage_report, usage_words
from scifig_tasks.core.judge_presets import JudgePresetError, load_preset
from scifig_tasks.report.runs import Run
from scifig_tasks.report.summary import usage_text
from tests.harness import warm_start
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import _executable
from tests.harness.openai_server import ChatRequest, Reply, by_question

PRICE_IN, PRICE_OUT = 2.0, 8.0


def expected_cost(row: dict) -> float:
    return (row["prompt_tokens"] * PRICE_IN + row["completion_tokens"] * PRICE_OUT) / 1e6


def words(text: str | None) -> int:
    return len((text or "").split())


def reply_for(request: ChatRequest) -> Reply:
    """The judge: the first number of the request's text, or ``None``."""
    number = re.search(r"-?\d+(?:\.\d+)?", request.text)
    return Reply(text=f"{number.group(0)} is the answer" if number else "None")


def client(tmp_path: Path, base_url: str, **knobs: object) -> JudgeClient:
    config = JudgeConfig(base_url=base_url, model="fake-judge", cache_dir=tmp_path / "cache", **knobs)  # type: ignore[arg-type]
    return JudgeClient(config)


def test_usage_is_charged_to_each_task_with_the_servers_tokens(tmp_path: Path, openai_server) -> None:
    server = openai_server(reply_for)
    judge = client(tmp_path, server.base_url, price_per_million_input=PRICE_IN, price_per_million_output=PRICE_OUT)
    with task_scope("task_a"):
        judge.complete("value 1 here", accept=bool)
        judge.complete("value 1 here", accept=bool)  # cached
        judge.complete_many(["many 2", "many 3", "many 2"], accept=bool)  # its threads charge task_a too
    with task_scope("task_b"):
        judge.complete("other 4", accept=bool)
    judge.complete("outside 5", accept=bool)

    report = usage_report(clients=[judge])
    assert report is not None
    texts = {request.text: request for request in server.requests}
    expected_prompt = {
        "task_a": sum(words(t) for t in ("value 1 here", "many 2", "many 3")),
        "task_b": words("other 4"),
        judge_module.NO_TASK: words("outside 5"),
    }
    assert set(texts) == {"value 1 here", "many 2", "many 3", "other 4", "outside 5"}
    for task, prompt_tokens in expected_prompt.items():
        row = report["tasks"][task]
        assert row["prompt_tokens"] == prompt_tokens
    a = report["tasks"]["task_a"]
    assert (a["requests"], a["cache_hits"], a["judged"], a["failed"]) == (3, 1, 3, 0)
    assert a["calls"] == a["judged"] + a["cache_hits"] + a["shared"] + a["failed"] == 4
    assert a["completion_tokens"] == 3 * words("1 is the answer")
    assert a["wall_s"] > 0
    total = report["total"]
    assert total["requests"] == server.count == 5
    assert total["prompt_tokens"] == sum(words(r.text) for r in server.requests)
    assert total["cost"] == pytest.approx(
        (total["prompt_tokens"] * PRICE_IN + total["completion_tokens"] * PRICE_OUT) / 1e6
    )
    assert report["judges"] == [
        {
            "model": "fake-judge",
            "host": server.base_url.split("//")[1].split("/")[0],
            "price_per_million": {"input": PRICE_IN, "output": PRICE_OUT},
        }
    ]
    assert usage_report(clients=[judge]) is None  # drained: the next results file starts afresh
    assert usage_words(total) == (
        f"5 requests, 1 cache hit, {total['prompt_tokens']:,} prompt + {total['completion_tokens']:,} completion "
        f"tokens, cost {total['cost']:.4f}"
    )


def test_failures_and_no_price(tmp_path: Path, openai_server) -> None:
    server = openai_server(lambda request: Reply(status=500))
    judge = client(tmp_path, server.base_url, max_retries=1, backoff_initial_s=0.01, backoff_max_s=0.01)
    with task_scope("broken"):
        assert judge.complete("x", accept=bool).status == "judge_failed"
    row = usage_report(clients=[judge])["tasks"]["broken"]
    assert (row["requests"], row["failed"], row["prompt_tokens"], row["cost"]) == (2, 1, 0, None)
    assert usage_words(row).endswith("no price configured")


def test_dry_run_sends_nothing_and_counts_the_cache(tmp_path: Path, openai_server) -> None:
    server = openai_server(reply_for)
    client(tmp_path, server.base_url).complete("cached 1", accept=bool)
    assert server.count == 1
    with dry_run():
        dry = JudgeClient(JudgeConfig(base_url=server.base_url, model="fake-judge", cache_dir=tmp_path / "cache"))
    with task_scope("t"):
        assert dry.complete("cached 1", accept=bool).status == "judged"
        assert dry.complete("fresh 2", accept=bool).status == "judge_failed"
        dry.complete("fresh 2", accept=bool)  # the same request: counted once
        dry.sample([{"role": "user", "content": "s"}], temperature=1.0)  # never cached: always counted
    assert server.count == 1
    row = usage_report(clients=[dry])["tasks"]["t"]
    assert (row["would_send"], row["cache_hits"], row["requests"]) == (2, 1, 0)


def test_prices_are_validated(tmp_path: Path) -> None:
    base = "base_url: http://127.0.0.1:1/v1\nmodel: m\napi_key_env: NO_KEY\n"
    good = tmp_path / "good.yaml"
    good.write_text(base + "price_per_million_input: 0.15\nprice_per_million_output: 0\n")
    assert load_preset(str(good))["price_per_million_output"] == 0.0
    for extra, key in (
        ("price_per_million_input: 1\n", "price_per_million_output"),
        ("price_per_million_input: -1\nprice_per_million_output: 1\n", "price_per_million_input"),
        ("price_per_million_input: cheap\nprice_per_million_output: 1\n", "price_per_million_input"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(base + extra)
        with pytest.raises(JudgePresetError, match=key):
            load_preset(str(bad))
    config = JudgeConfig.from_env(
        {
            "SCIFIG_JUDGE": str(good),
            "SCIFIG_JUDGE_PRICE_PER_MILLION_OUTPUT": "0.6",
        }
    )
    assert config is not None and (config.price_per_million_input, config.price_per_million_output) == (0.15, 0.6)
    with pytest.raises(ValueError, match="both or neither"):
        JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", price_per_million_input=1.0)


def test_the_report_summary_shows_the_usage(tmp_path: Path) -> None:
    path = tmp_path / "x_results.json"
    run = Run("m", task_files={"grab_llm_extract": path})
    row = {"requests": 7, "cache_hits": 2, "failed": 0, "prompt_tokens": 1200, "completion_tokens": 30, "cost": None}
    run.environments[path] = {"judge_usage": {"priced": False, "tasks": {}, "groups": {"grab_llm_extract": row}}}
    assert usage_text(run, ["grab_llm_extract"]) == (
        "7 requests, 2 cache hits, 1,200 prompt + 30 completion tokens, no price configured"
    )
    priced = {**row, "cost": 0.0123}
    run.environments[path] = {"judge_usage": {"priced": True, "tasks": {"grab_llm_extract": priced}}}
    assert usage_text(run, ["grab_llm_extract"]).endswith("cost 0.0123")
    run.environments[path] = {}
    assert usage_text(run, ["grab_llm_extract"]) is None


CASES: list[tuple[Row, str]] = [
    (Row("properties", "15"), "I believe the intercept is 15."),
    (Row("function", "7"), "roughly 7 overall"),
    (Row("series", "3"), "three, or 3"),
    (Row("transform", "-1"), "It becomes -1."),
]
OUTPUT_IN_PROMPT = re.compile(r'The output from the model answering the question is: "(.*)"\n', re.DOTALL)


def extraction_reply(request: ChatRequest) -> Reply:
    match = OUTPUT_IN_PROMPT.search(request.text)
    number = re.search(r"-?\d+(?:\.\d+)?", match.group(1)) if match else None
    return Reply(text=number.group(0) if number else "None")


@pytest.mark.slow
def test_lmms_eval_results_record_the_judges_usage(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    data = write_parquet([row for row, _ in CASES], tmp_path / "grab" / "GRAB.parquet")
    model = openai_server(
        by_question({question_text(pid, row) + "\n": reply for pid, (row, reply) in enumerate(CASES)})
    )
    judge = openai_server(extraction_reply)
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge-secret-7171",
        "SCIFIG_JUDGE_PRICE_PER_MILLION_INPUT": str(PRICE_IN),
        "SCIFIG_JUDGE_PRICE_PER_MILLION_OUTPUT": str(PRICE_OUT),
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab_llm_extract", "--log_samples"]

    first = run_cli("lmms-eval", args, env, tmp_path / "first")

    assert first.returncode == 0, first.output[-4000:]
    assert "this run sends the LLM judge at most 4 requests" in first.output
    usage = first.results()["scifig_environment"]["judge_usage"]
    total = usage["total"]
    assert judge.count == len(CASES)
    assert total["requests"] == judge.count and total["judged"] == len(CASES) and total["cache_hits"] == 0
    assert total["prompt_tokens"] == sum(words(request.text) for request in judge.requests)
    assert total["completion_tokens"] == sum(words(extraction_reply(r).text) for r in judge.requests)
    assert total["cost"] == pytest.approx(
        (total["prompt_tokens"] * PRICE_IN + total["completion_tokens"] * PRICE_OUT) / 1e6
    )
    for task in ("properties", "functions", "series", "transforms"):
        assert usage["tasks"][f"grab_{task}_llm_extract"]["requests"] == 1
    assert usage["groups"]["grab_llm_extract"]["requests"] == len(CASES)
    assert usage["judges"][0]["price_per_million"] == {"input": PRICE_IN, "output": PRICE_OUT}

    judge.reset()
    second = run_cli("lmms-eval", args, env, tmp_path / "second")
    assert second.returncode == 0, second.output[-4000:]
    again = second.results()["scifig_environment"]["judge_usage"]["total"]
    assert judge.count == 0 and again["requests"] == 0 and again["cache_hits"] == len(CASES)
    assert again["cost"] == 0

    scifig = _executable("scifig")
    for cache, send, cached in ((env["SCIFIG_JUDGE_CACHE"], 0, len(CASES)), (str(tmp_path / "empty"), len(CASES), 0)):
        dry = warm_start.run(
            [scifig, "rescore", "--dry-run", str(tmp_path / "first")], {**env, "SCIFIG_JUDGE_CACHE": cache}, timeout=600
        )
        assert dry.returncode == 0, (dry.stdout + dry.stderr)[-4000:]
        assert f"would send {send} judge requests (retries aside); the judge cache answers {cached};" in dry.stdout
        assert judge.count == 0
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").rglob("*.json"))
    everything = first.output + second.output + dry.stdout + dry.stderr
    assert "sk-judge-secret-7171" not in everything
    assert not any("sk-judge-secret-7171" in p.read_text() for p in tmp_path.rglob("*.json"))
