"""``scifig eval`` reliability through the real command lines, against local servers on 127.0.0.1.

* A task of the user's ``--include_path`` named like one of ours keeps precedence, and one warning names both
  YAML files (``lmms-eval --include_path DIR``, ``scifig eval --include_path DIR`` and ``--include_path=DIR``).
* A model server that echoes the API key in its 401 error: the key reaches neither stream nor any output file, and
  the run fails (exit status 1) with one line naming the failed request and its error, masked.
* A judge answering HTTP 500: ``scifig eval`` exits 1 and its summary line counts the unjudged samples per task.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.core.judge import judge_failures
from scifig_tasks.lmms_eval import TASKS_DIR
from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.openai_server import ChatRequest, Reply, by_question

OURS = TASKS_DIR / "grab" / "tasks" / "grab_properties.yaml"
ROWS = [
    Row("properties", "15"),
    Row("function", "2.5", precision_sentence=ONE_DP),
    Row("series", "6"),
    Row("transform", "-1"),
]
REPLIES = ["I believe the intercept is 15.", "roughly 2.4", "six, or 6 in digits", ""]  # the last is never judged
MODEL_ARGS = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"


@pytest.mark.parametrize(
    ("command", "include"),
    [("lmms-eval", "separate"), ("scifig", "separate"), ("scifig", "equals")],
)
def test_a_user_task_shadowing_ours_keeps_precedence_with_one_warning(
    tmp_path: Path, lmms_env, run_cli, command: str, include: str
) -> None:
    user_dir = tmp_path / "my_tasks"
    user_dir.mkdir()
    theirs = user_dir / "grab_properties.yaml"
    theirs.write_text(f"task: grab_properties\ninclude: {OURS}\ntask_alias: my_grab_properties\n")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet"))}
    paths = ["--include_path", str(user_dir)] if include == "separate" else [f"--include_path={user_dir}"]
    args = [*(["eval"] if command == "scifig" else []), *paths]
    args += ["--model", "scifig_chance", "--tasks", "grab"]

    run = run_cli(command, args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    warning = (
        f"scifig: 'grab_properties' from {theirs} replaces scifig's {OURS} (tasks of lmms-eval and of "
        "--include_path folders take precedence; rename yours to keep ours)"
    )
    assert run.output.count(warning) == 1, run.output[-4000:]
    assert run.output.count("replaces scifig's") == 1
    results = run.results()
    assert results["configs"]["grab_properties"]["task_alias"] == "my_grab_properties"  # the user's YAML ran
    assert results["groups"]["grab"]["breakdown,none"]["overall"]["all"]["n"] == 4  # inside our group


def test_scifig_eval_masks_an_api_key_echoed_by_the_model_server(tmp_path: Path, openai_server, lmms_env, run_cli):
    key = "sk-test-0123456789abcdef"

    def unauthorised(request: ChatRequest) -> Reply:
        return Reply(status=401, text=f"Incorrect API key provided: {request.headers['authorization']}")

    model = openai_server(unauthorised)
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": key,
    }
    args = ["eval", "--model", "openai", "--model_args", MODEL_ARGS, "--tasks", "grab_properties", "--log_samples"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]  # its one model request failed: a failed run
    failed = (
        f"scifig eval: FAILED: 1 of 1 model requests failed (endpoint {model.base_url}; first error: Error code: "
        "401 - Incorrect API key provided: Bearer <OPENAI_API_KEY>) — "
    )
    assert run.output.rstrip().splitlines()[-1].startswith(failed), run.output[-4000:]
    assert model.count == 1 and model.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in run.output
    assert "Bearer <OPENAI_API_KEY>" in run.output  # the error was printed, masked
    files = [path for path in run.output_path.rglob("*") if path.is_file()]
    kept = [path for path in files if ".scifig-cache" not in path.parts and path.name != ".scifig-run.lock"]
    assert len(kept) == 2  # results and samples (+ the cache and the run lock)
    assert not [path for path in files if key.encode() in path.read_bytes()]
    (sample,) = run.samples("grab_properties")
    assert sample["filtered_resps"] == (  # lmms-eval stored the error text (with the key, unmasked), masked
        "[LMMS_EVAL_REQUEST_FAILED after 1 retries] Error code: 401 - "
        "Incorrect API key provided: Bearer <OPENAI_API_KEY>"
    )


def test_scifig_eval_fails_when_samples_could_not_be_judged(tmp_path: Path, openai_server, lmms_env, run_cli):
    model = openai_server(by_question({question_text(pid, row) + "\n": REPLIES[pid] for pid, row in enumerate(ROWS)}))
    judge = openai_server(lambda request: Reply(status=500))
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_MAX_RETRIES": "0",
    }
    args = ["eval", "--model", "openai", "--model_args", MODEL_ARGS, "--tasks", "grab_llm_extract"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert (
        "scifig eval: 3 samples could not be judged (judge_failed: grab_functions_llm_extract 1, "
        "grab_properties_llm_extract 1, grab_series_llm_extract 1) — the scores that need the judge are incomplete;"
    ) in run.output, run.output[-6000:]
    assert run.returncode == 1
    assert judge.count == 3  # one call per non-empty reply, no retry
    flags = run.results()["groups"]["grab_llm_extract"]["breakdown,none"]["flags"]["judge"]
    assert flags == {"judge_failed": 3, "not_used": 1}


def test_judge_failures_counts_tasks_not_groups_and_mmsci_caption_reports() -> None:
    results = {
        "results": {
            "grab_llm_extract": {"breakdown,none": {"flags": {"judge": {"judge_failed": 5, "judged": 1}}}},
            "grab_series_llm_extract": {"breakdown,none": {"flags": {"judge": {"judge_failed": 5, "judged": 1}}}},
            "grab_series": {"breakdown,none": {"flags": {"judge": {"not_used": 9}}}, "accuracy,none": 0.5},
            "plot_twist_bar": {"breakdown,none": {"overall": {}}},
            "mmsci_caption_image_only": {
                "caption_report,none": {
                    "judged": {
                        "subset": "all",
                        "seed": 0,
                        "factscore": {"status": {"scored": 3, "judge_failed": 2}},
                        "geval_relevance": {"status": {"scored": 1, "judge_failed": 4, "unparsable": 1}},
                    }
                }
            },
        },
        "groups": {"grab_llm_extract": {}},
    }
    assert judge_failures(results) == {"grab_series_llm_extract": 5, "mmsci_caption_image_only": 4}
