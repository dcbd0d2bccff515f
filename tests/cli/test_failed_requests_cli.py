"""A run whose model requests failed is a failed run, through the real ``scifig eval``.

The model's endpoint is a closed port on 127.0.0.1 (``OPENAI_API_BASE`` with a user and password in it): every request
fails. ``scifig eval`` exits 1 with one line saying how many requests failed of how many, the endpoint with its
credentials masked and the first error; the printed results table says it under the scores, and the results file
holds it in ``scifig_model_requests``. Before, the run exited 0 with accuracy 0 and only the breakdown's
``output_status`` said why. The rule that any failed request fails the run (not only all of them) is checked in
process, on counted requests (:func:`test_one_failed_request_of_many_fails_the_run`); ``scifig vlmeval``'s line is
checked by the VLMEvalKit runner test, whose run already holds a failed request.
"""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace

from tests.harness.grab_data import sample

PASSWORD = "dead-endpoint-pass-7c1f"


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_dead_endpoint_fails_scifig_eval_in_one_line(tmp_path: Path, lmms_env, run_cli) -> None:
    port = closed_port()
    env = {**lmms_env, **sample(tmp_path / "grab"), "OPENAI_API_KEY": "sk-dead-endpoint-0123456789"}
    env["OPENAI_API_BASE"] = f"http://user:{PASSWORD}@127.0.0.1:{port}/v1"
    model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=8"
    args = ["eval", "--model", "openai_compatible", "--model_args", model_args, "--tasks", "grab"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    endpoint = f"http://<OPENAI_API_BASE credentials>@127.0.0.1:{port}/v1"
    message = (
        f"8 of 8 model requests failed (endpoint {endpoint}; first error: Connection error.) — the scores count "
        "them as wrong answers; check that the model server is up, its address and its API key, then run the same "
        "command again"
    )
    assert run.returncode == 1, run.output[-4000:]
    assert run.output.rstrip().splitlines()[-1] == f"scifig eval: FAILED: {message}", run.output[-4000:]
    assert f"scifig: FAILED: {message}" in run.output  # under the printed results table
    assert PASSWORD not in run.output
    field = run.results()["scifig_model_requests"]
    tasks = {name: {"failed": 2, "total": 2} for name in ("properties", "functions", "series", "transforms")}
    assert field == {
        "status": "failed",
        "failed": 8,
        "total": 8,
        "endpoint": endpoint,
        "first_error": "Connection error.",
        "tasks": {f"grab_{name}": counts for name, counts in tasks.items()},
        "message": message,
    }


def _task(name: str, replies: list[str]) -> SimpleNamespace:
    """A built lmms-eval task as the count reads it: its name and each request's replies."""
    instances = [SimpleNamespace(resps=[reply]) for reply in replies]
    return SimpleNamespace(config=SimpleNamespace(task=name), instances=instances)


def test_one_failed_request_of_many_fails_the_run() -> None:
    from scifig_tasks.lmms_eval.output_folder import count_requests, failed_requests_line

    failed = "[LMMS_EVAL_REQUEST_FAILED after 3 retries] Error code: 500 - server down"
    counted = count_requests([_task("a", ["4", failed, ""]), _task("b", ["7", "[1, 2]"])])
    assert (counted.failed, counted.total, counted.first_error) == (1, 5, "Error code: 500 - server down")
    assert counted.tasks == {"a": {"failed": 1, "total": 3}, "b": {"failed": 0, "total": 2}}
    assert failed_requests_line(counted, None).startswith(
        "1 of 5 model requests failed (first error: Error code: 500 - server down) — "
    )
    assert count_requests([_task("a", ["4", ""])]).failed == 0  # an empty reply is the model's, not a failure
