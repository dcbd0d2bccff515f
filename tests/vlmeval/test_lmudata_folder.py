"""``scifig vlmeval`` writes VLMEvalKit's data into the folder ``$LMUData`` names, also one that does not exist yet:
it creates it and says so in one line (VLMEvalKit reads ``$LMUData`` only when it exists, and otherwise writes its
TSV files to ``~/LMUData``). The child's ``HOME`` is a temporary folder, so a write to ``~/LMUData`` is seen."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.harness import warm_start
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env
from tests.harness.openai_server import ChatRequest
from tests.harness.vlmeval import KEY, MODEL

ROWS = [Row("properties", "15"), Row("function", "2")]


def answer(request: ChatRequest) -> str:
    return next((row.answer for pid, row in enumerate(ROWS) if question_text(pid, row) in request.text), "0")


def test_scifig_vlmeval_creates_the_lmudata_folder_it_is_given(tmp_path: Path, openai_server) -> None:
    model = openai_server(answer)
    home, lmu = tmp_path / "home", tmp_path / "data" / "LMUData"  # neither exists yet
    config = {
        "model": {MODEL: {"class": "GPT4V", "model": MODEL, "api_base": f"{model.base_url}/chat/completions"}},
        "data": {"grab": {"class": "SciFigGRAB", "dataset": "grab"}},
    }
    config["model"][MODEL] |= {"key": KEY, "retry": 1, "wait": 0, "temperature": 0, "max_tokens": 64}
    (tmp_path / "vlmeval.json").write_text(json.dumps(config))
    env = {**offline_env(tmp_path), "HOME": str(home), "LMUData": str(lmu)}
    env["SCIFIG_GRAB_DATA"] = str(write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet"))
    command = [
        sys.executable,
        "-m",
        "scifig_tasks.commands.main",
        "vlmeval",
        "--config",
        str(tmp_path / "vlmeval.json"),
    ]
    command += ["--work-dir", str(tmp_path / "vlmeval-out")]

    completed = warm_start.run(command, env, cwd=tmp_path, timeout=CLI_TIMEOUT_S)

    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    assert (lmu / "grab.tsv").is_file(), sorted(str(path) for path in tmp_path.rglob("*.tsv"))
    assert not (home / "LMUData").exists()
    assert f"created VLMEvalKit's data folder {lmu} (LMUData)" in output
    assert model.count == len(ROWS)
