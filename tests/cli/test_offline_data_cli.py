"""A benchmark's Hub dataset that the cache does not hold, with the Hub unreachable and ``HF_HUB_OFFLINE`` unset (as a
new user without network has it, :mod:`tests.harness.hub`), stops ``scifig eval`` at once, before lmms-eval starts, in
the data refusal's one line (the dataset, its revision, the cache looked in, why the Hub did not answer, the ways
out), instead of huggingface_hub retrying the file listing for half a minute
(:func:`scifig_tasks.core.data.hub_snapshot` asks the Hub once, :func:`scifig_tasks.core.hub_cache.ask_hub`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.benchmarks.grab.source import GRAB
from tests.harness import hub
from tests.harness.hub import RETRY_LINE, endpoint, unreachable_hub
from tests.harness.lmms import offline_env, scifig

pytestmark = [pytest.mark.slow, pytest.mark.cli]
closed_port = hub.closed_port


def test_hub_data_not_cached_with_the_hub_unreachable_is_refused_at_once(tmp_path: Path, closed_port: int) -> None:
    env = unreachable_hub(offline_env(tmp_path), tmp_path, closed_port)

    completed = scifig(["eval", "--model", "scifig_chance", "--tasks", "grab"], env, tmp_path)

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr and RETRY_LINE not in completed.stderr, completed.stderr[-3000:]
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"scifig eval: FAILED: DataError: Hugging Face Hub dataset jonathan-roberts1/GRAB at revision {GRAB.revision}: "
        f"GRAB data could not be loaded (not in the Hugging Face cache ({tmp_path / 'hub'}), the Hugging Face Hub "
        f"cannot be reached ({endpoint(closed_port)}: ConnectError"
    ), last
    assert last.endswith(
        "download it online once (or name another revision with SCIFIG_GRAB_REVISION), or set SCIFIG_GRAB_DATA=DIR to "
        "local data (`scifig curate grab --out DIR` builds it), or run `scifig demo` to try scifig offline"
    ), last
