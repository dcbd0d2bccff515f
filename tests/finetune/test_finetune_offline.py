"""``scifig finetune`` whose base model cannot be had stops before anything is loaded or trained, in one line naming
the model, the config that names it, the Hugging Face cache looked in and the ways out, instead of minutes of
huggingface_hub retries and transformers' ``OSError``: a packaged config (the paper's Qwen2-VL, never in the test's
empty cache) with the Hub unreachable and ``HF_HUB_OFFLINE`` unset, as a new user without network has it
(:mod:`tests.harness.hub`). The check is :func:`scifig_finetune.train.check_base_model`; offline mode and a cached
model going offline are held in process (``tests/core/test_hub_cache.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scifig_finetune.config import packaged_configs

from tests.harness import hub
from tests.harness.hub import RETRY_LINE, endpoint, unreachable_hub
from tests.harness.lmms import offline_env, scifig

pytestmark = [pytest.mark.slow, pytest.mark.cli]
closed_port = hub.closed_port

CONFIG = "qwen2_vl_2b_mmsci_lora"
MODEL = "Qwen/Qwen2-VL-2B-Instruct"


def test_a_base_model_that_cannot_come_stops_before_anything_is_loaded(tmp_path: Path, closed_port: int) -> None:
    env = unreachable_hub(offline_env(tmp_path), tmp_path, closed_port) | {"SCIFIG_MMSCI_DATA": str(tmp_path / "data")}

    completed = scifig(["finetune", "--config", CONFIG, "--output-dir", str(tmp_path / "run")], env, tmp_path)

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr and RETRY_LINE not in completed.stderr, completed.stderr[-3000:]
    (line,) = completed.stderr.strip().splitlines()
    config = packaged_configs()[CONFIG]
    assert line.startswith(
        f"scifig finetune: base model {MODEL} (model: of {config}): not in the Hugging Face cache ({tmp_path / 'hub'}) "
        f"and the Hugging Face Hub cannot be reached ({endpoint(closed_port)}: ConnectError"
    ), line
    assert line.endswith(
        f"— download once with network (hf download {MODEL}), or copy {config}, set its model: to a local model folder "
        "(a copy of the model) and run scifig finetune --config COPY; without network, set HF_HUB_OFFLINE=1"
    ), line
    assert not (tmp_path / "run").exists()  # stopped before the output folder, the data and the model
