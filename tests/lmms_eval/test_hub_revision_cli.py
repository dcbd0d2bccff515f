"""A run through plain ``lmms-eval`` reads GRAB from the Hub cache at its pinned revision and its results file says so.

The Hub cache is one the test lays out as ``huggingface_hub`` writes it (offline: the Hub is not reachable from
tests): the pinned commit holds three questions, a newer ``main`` two. The chance model answers; the numbers do not
matter here, the rows and the recorded ``data`` entry of the environment block do.
"""

from __future__ import annotations

import io
from pathlib import Path

from datasets import Dataset

from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.core.provenance import KEY
from tests.harness.grab_data import Row, build
from tests.harness.hub_layout import card, hub_dataset

NEWER = "1" * 40


def _parquet(dataset: Dataset) -> bytes:
    buffer = io.BytesIO()
    dataset.to_parquet(buffer)
    return buffer.getvalue()


def test_a_run_records_the_pinned_hub_revision_it_read_and_an_override_says_so(
    tmp_path: Path, lmms_env, run_cli
) -> None:
    cache = tmp_path / "hub"
    rows = [Row("properties", "3"), Row("properties", "4"), Row("properties", "5")]
    grab_card = card({"GRAB": "data/GRAB-*"})
    pinned = {"README.md": grab_card, "data/GRAB-00000-of-00001.parquet": _parquet(build(rows))}
    hub_dataset(cache, GRAB.hub_path, GRAB.revision, pinned, ref=None)
    newer = {"README.md": grab_card, "data/GRAB-00000-of-00001.parquet": _parquet(build(rows[:2]))}
    hub_dataset(cache, GRAB.hub_path, NEWER, newer)
    env = {**lmms_env, "HF_HUB_CACHE": str(cache)}
    args = ["--model", "scifig_chance", "--tasks", "grab_properties"]

    run = run_cli("lmms-eval", args, env, tmp_path / "pinned")

    results = run.results()
    assert results["n-samples"]["grab_properties"]["effective"] == 3, run.output[-3000:]  # the pin, not main's 2
    recorded = results[KEY]["data"]["grab"]
    assert recorded["origin"] == "hub" and recorded["revision"] == GRAB.revision == recorded["pinned"]
    assert "scores may differ" not in run.output

    moved = run_cli("lmms-eval", args, {**env, "SCIFIG_GRAB_REVISION": "main"}, tmp_path / "main")

    assert moved.results()[KEY]["data"]["grab"]["revision"] == NEWER
    assert moved.results()["n-samples"]["grab_properties"]["effective"] == 2
    assert "SCIFIG_GRAB_REVISION=main" in moved.output and "scores may differ" in moved.output
