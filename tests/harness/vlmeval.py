"""Run ``scifig vlmeval`` (VLMEvalKit's own runner with the scifig datasets registered) in a subprocess with
VLMEvalKit's ``GPT4V`` OpenAI-compatible model pointed at a local server, and read the scores it wrote.

VLMEvalKit logs errors and exits 0; ``scifig vlmeval`` exits non-zero when a dataset has no metrics, and the tests
read the ``*_scifig_scores.json`` files ``evaluate`` writes.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from PIL import Image

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S

KEY = "sk-vlmeval-secret-0123"
MODEL = "fake-vlm"


def vlmeval_config(base_url: str, data: dict[str, str]) -> dict[str, Any]:
    """A VLMEvalKit ``--config``: VLMEvalKit's ``GPT4V`` API model (:data:`MODEL`, key :data:`KEY`) asking the server
    at ``base_url`` (one try, no wait, greedy), and the datasets ``data`` (name -> class)."""
    return {
        "model": {
            MODEL: {
                "class": "GPT4V",
                "model": MODEL,
                "api_base": f"{base_url}/chat/completions",
                "key": KEY,
                "retry": 1,
                "wait": 0,
                "temperature": 0,
                "max_tokens": 1024,
            }
        },
        "data": {name: {"class": cls, "dataset": name} for name, cls in data.items()},
    }


def run_vlmeval(
    tmp_path: Path,
    base_url: str,
    env: dict[str, str],
    data: dict[str, str],
    scifig: list[str] | None = None,
    extra: list[str] | None = None,
) -> tuple[subprocess.CompletedProcess, Path]:
    """Run the datasets ``data`` (name -> class) through a ``--config`` file; return the process and the model's
    output folder. ``$LMUData`` is a fresh folder under ``tmp_path``. ``scifig``: the command that runs scifig
    (default: this interpreter's ``-m scifig_tasks.commands.main``); ``extra``: more ``scifig vlmeval`` options."""
    lmu = tmp_path / "LMUData"
    lmu.mkdir()
    config = vlmeval_config(base_url, data)
    (tmp_path / "vlmeval.json").write_text(json.dumps(config))
    work = tmp_path / "vlmeval-out"
    scifig = scifig or [sys.executable, "-m", "scifig_tasks.commands.main"]
    command = [*scifig, "vlmeval", "--config", str(tmp_path / "vlmeval.json")]
    command += ["--work-dir", str(work), "--api-nproc", "4", *(extra or [])]
    completed = warm_start.run(command, {**env, "LMUData": str(lmu)}, cwd=tmp_path, timeout=CLI_TIMEOUT_S)
    return completed, work / MODEL


def vlmeval_scores(out: Path, name: str) -> dict[str, Any]:
    """The ``{"dataset", "metrics", "breakdown"}`` file written by the dataset's ``evaluate``."""
    path = out / f"{MODEL}_{name}_scifig_scores.json"
    assert path.exists(), f"no scores for {name}: {sorted(p.name for p in out.iterdir())}"
    return json.loads(path.read_text())


def as_vlmeval_decodes(cell: str) -> bytes:
    """The RGB pixels VLMEvalKit reads from a TSV image cell (``vlmeval.smp.vlm.decode_base64_to_image``: base64
    decoded, opened, RGBA / P / LA converted to RGB, which drops the alpha channel without compositing)."""
    image = Image.open(io.BytesIO(base64.b64decode(cell)))
    if image.mode in ("RGBA", "P", "LA"):
        image = image.convert("RGB")
    return image.convert("RGB").tobytes()
