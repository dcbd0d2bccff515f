"""GRAB's VLMEvalKit class builds the README message: the prompt text byte for byte, then the image (the README's
chat message puts the text first), the same text the lmms-eval task sends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.grab_data import Row, write_parquet
from tests.harness.lmms import offline_env
from tests.harness.paths import REPO

BUILD = """
import json
import vlmeval.dataset
from scifig_tasks.vlmeval import register

register()
dataset = vlmeval.dataset.build_dataset("grab")
message = dataset.build_prompt(dataset.data.iloc[0])
print("REPORT " + json.dumps([[part["type"], part["value"]] for part in message]))
"""


@pytest.mark.slow
def test_vlmeval_grab_message_is_text_then_image(tmp_path: Path) -> None:
    data = write_parquet([Row("properties", "15")], tmp_path / "grab" / "GRAB.parquet")
    (tmp_path / "lmu").mkdir()
    env = {**offline_env(tmp_path), "SCIFIG_GRAB_DATA": str(data), "LMUData": str(tmp_path / "lmu")}
    completed = warm_start.run([sys.executable, "-c", BUILD], env, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("REPORT ")]
    message = json.loads(line.removeprefix("REPORT "))
    assert [kind for kind, _ in message] == ["text", "image"]
    assert message[0][1] == (
        "\n[q0] What is the value of the y-intercept of the function? Give your answer as an integer.\n"
        " Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. Answer: \n\n"
    )
    assert Path(message[1][1]).read_bytes().startswith(b"\x89PNG")
