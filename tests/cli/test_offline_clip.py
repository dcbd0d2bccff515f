"""CLIP weights that cannot be had end a command at once, in one line naming them and what to do, instead of a minute
of Hugging Face Hub retries: ``scifig curate scifibench`` (its default model, the paper's DFN5B ViT-H/14, is never
in the test's empty Hub cache) under ``HF_HUB_OFFLINE=1``, and with the Hub unreachable (``HF_ENDPOINT`` at a closed
local port: no name is looked up, nothing leaves the machine). The subprocess timeout is far below the minute of
retries, so a command that waits for them fails the test. ``scifig_clip`` (lmms-eval) shares the check
(:func:`scifig_tasks.core.clip_baseline.check_weights`, the rule of :mod:`scifig_tasks.core.hub_cache` every model
scifig fetches at run time follows) and says its own option.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.curation.test_curate_workers import _pairs
from tests.harness import warm_start
from tests.harness.lmms import offline_env

pytestmark = [pytest.mark.slow, pytest.mark.cli]

TIMEOUT_S = 20
"""Far less than huggingface_hub's retries (about a minute)."""
WEIGHTS = "open_clip weights ViT-H-14-378-quickgelu / dfn5b (Hugging Face Hub: apple/DFN5B-CLIP-ViT-H-14-378)"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port bound but not listening: connecting to it is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def curate(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """``scifig curate scifibench`` with the default CLIP on a few pairs, an empty Hub cache and ``env``."""
    base = offline_env(tmp_path) | {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HOME": str(tmp_path / "hf")}
    base.pop("HF_HUB_OFFLINE")
    pairs = _pairs(tmp_path / "pairs.parquet", 6)
    scifig = Path(sys.executable).parent / "scifig"
    command = [str(scifig), "curate", "scifibench", "--pairs", str(pairs), "--out", str(tmp_path / "out")]
    return warm_start.run([*command, "--device", "cpu"], base | env, timeout=TIMEOUT_S)


def last_line(completed: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in completed.stderr, completed.stderr[-3000:]
    return completed.stderr.strip().splitlines()[-1]


def test_curate_offline_without_the_weights_says_so_at_once(tmp_path: Path) -> None:
    completed = curate(tmp_path, HF_HUB_OFFLINE="1")

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert last_line(completed) == (
        f"scifig curate scifibench: {WEIGHTS}: not in the Hugging Face cache ({tmp_path / 'hub'}) and HF_HUB_OFFLINE "
        "is set — download once with network (HF_HUB_OFFLINE unset: hf download apple/DFN5B-CLIP-ViT-H-14-378), or "
        "pass a checkpoint file (--pretrained PATH), or try the shipped tiny model, random weights (--pretrained tiny)"
    )


def test_curate_with_the_hub_unreachable_says_so_at_once(tmp_path: Path, closed_port: int) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"

    completed = curate(tmp_path, HF_ENDPOINT=endpoint)

    assert completed.returncode == 1, completed.stderr[-3000:]
    line = last_line(completed)
    assert line.startswith(
        f"scifig curate scifibench: {WEIGHTS}: not in the Hugging Face cache ({tmp_path / 'hub'}) and the Hugging "
        f"Face Hub cannot be reached ({endpoint}: "
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
