"""CLIP weights that cannot be had end a command at once, in one line naming them, the cache looked in and what to
do, instead of a minute of Hugging Face Hub retries: ``scifig curate scifibench`` (its default model, the paper's
DFN5B ViT-H/14, is never in the test's empty Hub cache) under ``HF_HUB_OFFLINE=1``, and with the Hub unreachable
(:mod:`tests.harness.hub`: ``HF_ENDPOINT`` at a closed local port, no name looked up, nothing leaving the machine).
A command that waited on the Hub would show huggingface_hub's retry lines, which the tests look for. ``scifig_clip``
(lmms-eval) shares the check (:func:`scifig_tasks.core.clip_baseline.check_weights`, the rule of
:mod:`scifig_tasks.core.hub_cache` every model scifig fetches at run time follows) and says its own option.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.curation.test_curate_workers import _pairs
from tests.harness import hub, warm_start
from tests.harness.hub import RETRY_LINE, empty_cache, endpoint, unreachable_hub
from tests.harness.lmms import offline_env

pytestmark = [pytest.mark.slow, pytest.mark.cli]
closed_port = hub.closed_port

TIMEOUT_S = 120
"""A bound on a command that hangs; one that retries is caught by its retry lines."""
WEIGHTS = "open_clip weights ViT-H-14-378-quickgelu / dfn5b (Hugging Face Hub: apple/DFN5B-CLIP-ViT-H-14-378)"


def curate(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``scifig curate scifibench`` with the default CLIP on a few pairs, in ``env``."""
    pairs = _pairs(tmp_path / "pairs.parquet", 6)
    scifig = Path(sys.executable).parent / "scifig"
    command = [str(scifig), "curate", "scifibench", "--pairs", str(pairs), "--out", str(tmp_path / "out")]
    return warm_start.run([*command, "--device", "cpu"], env, timeout=TIMEOUT_S)


def last_line(completed: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in completed.stderr and RETRY_LINE not in completed.stderr, completed.stderr[-3000:]
    return completed.stderr.strip().splitlines()[-1]


def test_curate_offline_without_the_weights_says_so_at_once(tmp_path: Path) -> None:
    completed = curate(tmp_path, empty_cache(offline_env(tmp_path), tmp_path))

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert last_line(completed) == (
        f"scifig curate scifibench: {WEIGHTS}: not in the Hugging Face cache ({tmp_path / 'hub'}) and HF_HUB_OFFLINE "
        "is set — download once with network (HF_HUB_OFFLINE unset: hf download apple/DFN5B-CLIP-ViT-H-14-378), or "
        "pass a checkpoint file (--pretrained PATH), or try the shipped tiny model, random weights (--pretrained tiny)"
    )


def test_curate_with_the_hub_unreachable_says_so_at_once(tmp_path: Path, closed_port: int) -> None:
    completed = curate(tmp_path, unreachable_hub(offline_env(tmp_path), tmp_path, closed_port))

    assert completed.returncode == 1, completed.stderr[-3000:]
    line = last_line(completed)
    assert line.startswith(
        f"scifig curate scifibench: {WEIGHTS}: not in the Hugging Face cache ({tmp_path / 'hub'}) and the Hugging "
        f"Face Hub cannot be reached ({endpoint(closed_port)}: "
    ), line
    assert line.endswith(
        "— download once with network (hf download apple/DFN5B-CLIP-ViT-H-14-378), or pass a checkpoint file "
        "(--pretrained PATH), or try the shipped tiny model, random weights (--pretrained tiny); without network, set "
        "HF_HUB_OFFLINE=1"
    ), line


def test_scifig_clip_names_its_own_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The check ``scifig_clip`` makes before building anything, its remedy in ``--model_args`` terms (a model named
    by its Hub repository: open_clip is not imported)."""
    from huggingface_hub import constants

    from scifig_tasks.core.clip_baseline import WeightsUnavailable, check_weights, clip_model

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(WeightsUnavailable) as raised:
        check_weights(clip_model("hf-hub:apple/DFN5B-CLIP-ViT-H-14-378", "none"))
    assert raised.value.what == (
        "open_clip weights hf-hub:apple/DFN5B-CLIP-ViT-H-14-378 (Hugging Face Hub: apple/DFN5B-CLIP-ViT-H-14-378): "
        f"not in the Hugging Face cache ({tmp_path / 'hub'}) and HF_HUB_OFFLINE is set"
    )
    assert raised.value.todo == (
        "download once with network (HF_HUB_OFFLINE unset: hf download apple/DFN5B-CLIP-ViT-H-14-378), or pass a "
        "checkpoint file (--model_args pretrained=PATH), or try the shipped tiny model, random weights (--model_args "
        "pretrained=tiny)"
    )
    check_weights(clip_model("ViT-H-14-378-quickgelu", "tiny"))  # the shipped model needs nothing from the Hub
