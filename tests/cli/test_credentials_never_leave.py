"""No credential leaves through the LLM judge or the terminal, through the real command lines, with a model server
that echoes the caller's credentials into every reply (so they reach the model's output and every judge prompt built
from it) and a judge server that records every request body.

* ``scifig eval``: the model's URL carries ``user:password@`` in ``--model_args`` (the HTTP client sends it as an
  HTTP Basic credential, which the server echoes) and ``--model_args`` names an ``api_key=`` (which the server also
  repeats): no judge request body holds either, the terminal never shows the key, and the score is the one the same
  replies without the echo get (the judge reads the first number of the model's output: a credential left in the
  prompt would be read instead of the answer, a mask that took more than the credential would lose the answer).
* ``scifig rescore`` of that run, and of the same run as plain ``lmms-eval`` writes it (its sample logs hold the echoed
  credentials in clear, and ``scifig rescore`` is given neither the URL nor the key: only their shape gives them
  away), sends no credential to the judge either, and scores as the run did.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness import warm_start
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer

ROWS = [Row("properties", "15"), Row("function", "2"), Row("series", "6"), Row("transform", "-1")]
TASKS = [f"grab_{name}_llm_extract" for name in ("properties", "functions", "series", "transforms")]
API_KEY = "sk-modelargs-4d1c7e90b2a6f3"
USER, PASSWORD = "model-user", "model-pass-3e9b1c7d"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = {"api key": API_KEY, "password": PASSWORD, "Basic credential": BASIC}
MODEL_ARGS = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"
MODEL_OUTPUT = re.compile(r'The output from the model answering the question is: "(.*)"')
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def echoing_answer(request: ChatRequest) -> str:
    """The right answer, after the request's Authorization header and the account's API key (a server that repeats
    the credentials it was sent, as a careless or hostile one might)."""
    answer = next((row.answer for pid, row in enumerate(ROWS) if question_text(pid, row) in request.text), "15")
    return f"(session {request.headers.get('authorization', '')}, key {API_KEY}) {answer}"


def first_number(request: ChatRequest) -> str:
    """The judge extracts the first number of the model output quoted in GRAB's extraction prompt."""
    output = MODEL_OUTPUT.search(request.text)
    number = NUMBER.search(output.group(1)) if output else None
    return number.group(0) if number else "None"


def leaked(judge: FakeOpenAIServer, text: str = "") -> dict[str, int]:
    """``secret name -> number of judge request bodies holding it`` (plus 1 when ``text`` holds it)."""
    bodies = [json.dumps(request.body) for request in judge.requests] + [text]
    counts = {name: sum(secret in body for body in bodies) for name, secret in SECRETS.items()}
    return {name: count for name, count in counts.items() if count}


def grab_env(tmp_path: Path, judge: FakeOpenAIServer, cache: str) -> dict[str, str]:
    return {
        **offline_env(tmp_path),
        "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")),
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge-key-0f9e8d7c6b",
        "SCIFIG_JUDGE_CACHE": str(tmp_path / cache),
    }


def rescore(runs: list[Path], out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``scifig rescore RUN... --out OUT``."""
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "rescore", *map(str, runs), "--out", str(out)]
    return warm_start.run(command, env, timeout=CLI_TIMEOUT_S)


def as_plain_lmms_eval_wrote_it(run: Path, copy: Path) -> Path:
    """A copy of the model folder of ``run`` whose sample logs hold the echoed credentials in clear, as plain
    ``lmms-eval`` (which masks nothing) writes them; returns the copy's folder."""
    (folder,) = [path for path in run.iterdir() if path.is_dir() and not path.name.startswith(".")]
    target = copy / f"{folder.name}-plain"
    shutil.copytree(folder, target)
    for log in target.glob("*_samples_*.jsonl"):
        log.write_text(log.read_text().replace("<url credentials>", BASIC).replace("<secret>", API_KEY))
    return target


def test_scifig_eval_and_rescore_send_no_credential_to_the_judge(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    model, judge = openai_server(echoing_answer), openai_server(first_number)
    env = grab_env(tmp_path, judge, "judge-cache")
    model_url = f"http://{USER}:{PASSWORD}@127.0.0.1:{model.port}/v1"
    args = ["eval", "--model", "openai", "--model_args", f"{MODEL_ARGS},base_url={model_url},api_key={API_KEY}"]
    args += ["--tasks", "grab_llm_extract", "--log_samples"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    # the client sent the URL's credentials, the server echoed them and the key into every reply
    assert model.requests[0].headers["authorization"] == f"Basic {BASIC}"
    assert judge.count == len(ROWS)
    assert leaked(judge, run.output) == {}
    # the score is the one without the echo: every answer extracted and right
    assert run.results()["groups"]["grab_llm_extract"]["accuracy,none"] == 1.0
    for task, row in zip(TASKS, ROWS, strict=True):
        (sample,) = run.samples(task)
        assert sample["breakdown"]["extracted"] == row.answer

    # scifig rescore of that run and of the same run as plain lmms-eval writes it, given neither the model's URL nor
    # its key (only their shape gives them away), with a fresh judge cache: every prompt is sent again
    plain = as_plain_lmms_eval_wrote_it(run.output_path, tmp_path / "plain")
    (sample,) = [json.loads(line) for line in next(plain.glob("*_samples_grab_properties_llm_extract.jsonl")).open()]
    assert sample["filtered_resps"] == f"(session Basic {BASIC}, key {API_KEY}) 15"
    judge.reset()
    rescored = rescore([run.output_path, plain], tmp_path / "rescored", grab_env(tmp_path, judge, "cache-rescore"))
    output = rescored.stdout + rescored.stderr
    assert rescored.returncode == 0, output[-4000:]
    assert judge.count == 2 * len(ROWS)
    assert leaked(judge, output) == {}
    for results in (tmp_path / "rescored").rglob("*_results.json"):  # the masks took the credentials only
        assert json.loads(results.read_text())["groups"]["grab_llm_extract"]["accuracy,none"] == 1.0, results
