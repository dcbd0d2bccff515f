"""No file scifig writes holds a secret: every byte of every file written is searched for each key and each URL
credential, through the real command lines, with a model server that echoes the caller's credentials into every reply
(``echoing_key``: a key reaches the model's output and everything built from it). The judge replies in the shape its
prompt asks for (the answer alone): a judge reply carrying anything else is not an answer and is asked again
(``tests/core/test_judge_reply_shape.py``), and what is sent to it is masked (``test_credentials_never_leave``).

* ``scifig eval``: the model's URL carries ``user:password@`` in ``--model_args`` (lmms-eval stores the model
  arguments in its results file) and the judge's in ``SCIFIG_JUDGE_BASE_URL``; the HTTP clients send them as HTTP
  Basic credentials, which the model server echoes.
* plain ``lmms-eval`` (nothing masked), then ``scifig report``: the report files hold none of the environment's
  secrets although the sample logs do.
* ``scifig vlmeval``: the model key of the ``--config`` file, the judge key and a URL's credentials of the
  environment are in no file of the work dir (predictions TSV, ``_scifig_records.jsonl``, scores, logs, ...).

The judge cache is pointed outside the searched folders (its entries are written by the judge client, tested with it).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import offline_env, scifig
from tests.harness.openai_server import ChatRequest, echoing_key
from tests.harness.vlmeval import KEY as CONFIG_KEY
from tests.harness.vlmeval import run_vlmeval

ROWS = [Row("properties", "15"), Row("function", "2"), Row("series", "6"), Row("transform", "-1")]
MODEL_KEY = "sk-model-echoed-0123456789"
JUDGE_KEY = "sk-judge-echoed-9876543210"
MODEL_USER, MODEL_PASSWORD = "model-user", "model-pass-5f3a9c1e"
JUDGE_USER, JUDGE_PASSWORD = "judge-user", "judge-pass-77e01b2d"
MODEL_ARGS = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"


def basic(user: str, password: str) -> str:
    """The HTTP Basic credential a client sends for ``http://user:password@host``."""
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def url_secrets(user: str, password: str) -> dict[str, str]:
    return {f"{user} password": password, f"{user} Basic": basic(user, password)}


def answer(request: ChatRequest) -> str:
    """The model answers every GRAB question right; the judge extracts the number the model gave."""
    for pid, row in enumerate(ROWS):
        if question_text(pid, row) in request.text:
            return row.answer
    return "15"


def leaks(roots: Iterable[Path], secrets: Mapping[str, str], skip: Iterable[Path] = ()) -> dict[str, list[str]]:
    """``name -> files`` holding the secret's bytes, under ``roots`` (files under ``skip`` are not searched)."""
    skipped = [path.resolve() for path in skip]
    found: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or any(path.resolve().is_relative_to(other) for other in skipped):
                continue
            data = path.read_bytes()
            for name, secret in secrets.items():
                if secret.encode() in data:
                    found.setdefault(name, []).append(str(path.relative_to(root.parent)))
    return found


def grab_env(tmp_path: Path, judge_url: str) -> dict[str, str]:
    return {
        **offline_env(tmp_path),
        "SCIFIG_GRAB_DATA": str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")),
        "SCIFIG_JUDGE_BASE_URL": judge_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": JUDGE_KEY,
        "SCIFIG_JUDGE_CACHE": str(tmp_path / "judge-cache"),
    }


def test_scifig_eval_stores_no_url_credentials(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    model, judge = openai_server(echoing_key(answer)), openai_server(answer)
    env = {**grab_env(tmp_path, f"http://{JUDGE_USER}:{JUDGE_PASSWORD}@127.0.0.1:{judge.port}/v1")}
    env["OPENAI_API_KEY"] = MODEL_KEY
    model_url = f"http://{MODEL_USER}:{MODEL_PASSWORD}@127.0.0.1:{model.port}/v1"
    args = ["eval", "--model", "openai", "--model_args", f"{MODEL_ARGS},base_url={model_url}"]
    args += ["--tasks", "grab_llm_extract", "--log_samples"]

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    # the clients sent the URLs' credentials (HTTP Basic) and the servers echoed them into the replies
    assert model.requests[0].headers["authorization"] == f"Basic {basic(MODEL_USER, MODEL_PASSWORD)}"
    assert judge.requests[0].headers["authorization"] == f"Basic {basic(JUDGE_USER, JUDGE_PASSWORD)}"
    secrets = {**url_secrets(MODEL_USER, MODEL_PASSWORD), **url_secrets(JUDGE_USER, JUDGE_PASSWORD)}
    assert not [name for name, secret in secrets.items() if secret in run.output]
    assert leaks([run.output_path], secrets) == {}
    (results,) = run.output_path.rglob("*_results.json")
    model_args = json.loads(results.read_text())["config"]["model_args"]
    assert "base_url=http://<url credentials>@127.0.0.1:" in model_args  # the URL is kept, its credentials masked
    (sample, *_) = run.samples("grab_properties_llm_extract")
    assert sample["filtered_resps"] == "15 (session Basic <url credentials>)"
    assert sample["breakdown"]["extracted"] == "15"  # the judge read the answer, not the masked credential


def run_scifig(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``scifig ARGS``; its exit status and output."""
    completed = scifig(args, env)
    return completed.returncode, completed.stdout + completed.stderr


def test_scifig_report_and_rescore_of_a_plain_lmms_eval_run_hold_no_secret(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    model, judge = openai_server(echoing_key(answer)), openai_server(answer)
    env = {**grab_env(tmp_path, f"http://{JUDGE_USER}:{JUDGE_PASSWORD}@127.0.0.1:{judge.port}/v1")}
    env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": MODEL_KEY}
    args = ["--model", "openai", "--model_args", MODEL_ARGS, "--tasks", "grab_llm_extract", "--log_samples"]
    lmms = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert lmms.returncode == 0, lmms.output[-4000:]
    secrets = {"model key": MODEL_KEY, **url_secrets(JUDGE_USER, JUDGE_PASSWORD)}
    # plain lmms-eval masks nothing it writes: its sample logs hold the echoed model key
    assert set(leaks([lmms.output_path], secrets)) == {"model key"}

    out = tmp_path / "report"
    returncode, output = run_scifig(["report", str(lmms.output_path), "--out", str(out)], env)
    assert returncode == 0, output[-4000:]
    assert {path.name for path in out.iterdir()} >= {"report.md", "report.html", "samples.html"}
    assert leaks([out], secrets) == {}
    assert not [name for name, secret in secrets.items() if secret in output]
    page = (out / "samples.html").read_text()
    assert "15 (session <OPENAI_API_KEY>)" in page

    rescored = tmp_path / "rescored"  # scifig rescore copies the logs it scores: masked as it writes them
    returncode, output = run_scifig(["rescore", str(lmms.output_path), "--out", str(rescored)], env)
    assert returncode == 0, output[-4000:]
    assert list(rescored.rglob("*_samples_*.jsonl"))
    assert leaks([rescored], secrets) == {}
    assert not [name for name, secret in secrets.items() if secret in output]


def test_scifig_vlmeval_work_dir_holds_no_secret(tmp_path: Path, openai_server, lmms_env) -> None:
    model, judge = openai_server(echoing_key(answer)), openai_server(answer)
    env = grab_env(tmp_path, judge.base_url)
    env["OPENAI_API_BASE"] = f"http://{MODEL_USER}:{MODEL_PASSWORD}@127.0.0.1:9/v1"  # credentials of an unused URL
    data = {"grab": "SciFigGRAB", "grab_llm_extract": "SciFigGRAB"}
    completed, out = run_vlmeval(tmp_path, model.base_url, env, data)

    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    assert model.requests[0].headers["authorization"] == f"Bearer {CONFIG_KEY}"
    assert judge.requests[0].headers["authorization"] == f"Bearer {JUDGE_KEY}"
    secrets = {"model key": CONFIG_KEY, "judge key": JUDGE_KEY, **url_secrets(MODEL_USER, MODEL_PASSWORD)}
    assert not [name for name, secret in secrets.items() if secret in output]
    assert leaks([out.parent, tmp_path / "LMUData"], secrets) == {}
    (predictions,) = out.rglob("fake-vlm_grab.tsv")
    assert "15 (session <secret>)" in predictions.read_text()
    (records,) = out.rglob("fake-vlm_grab_llm_extract_scifig_records.jsonl")
    record = json.loads(records.read_text().splitlines()[0])
    assert record["prediction"] == "15 (session <secret>)"
    assert record["extracted"] == "15"
