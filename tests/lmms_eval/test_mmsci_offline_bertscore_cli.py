"""MMSci captioning through ``scifig eval`` with BERTScore's model (``roberta-large``, the authors' default) not in the
Hugging Face cache and the Hub unreachable, ``HF_HUB_OFFLINE`` unset, as a new user without network has it
(:mod:`tests.harness.hub`): the scorer asks the Hub once and never retries (it retried ``roberta-large``'s files for
about 46 s), the other metrics are scored, and BERTScore is reported unavailable in one console line that names the
model, the cache looked in and the ways out (``SCIFIG_MMSCI_BERTSCORE_MODEL``, ``HF_HUB_OFFLINE=1``), the same line the
results file records (:func:`scifig_tasks.benchmarks.mmsci.captioning_metrics.check_bertscore_model`), and said once
before the model is asked anything (:mod:`scifig_tasks.core.fetched_models`). It needs a run
of its own: the shared MMSci runs point BERTScore at a local tiny model, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import hub
from tests.harness.hub import RETRY_LINE, endpoint, unreachable_hub
from tests.harness.lmms import offline_env, run
from tests.harness.mmsci_data import Caption, write

pytestmark = [pytest.mark.slow, pytest.mark.cli]
closed_port = hub.closed_port

TASK = "mmsci_caption_image_only"


def test_bertscore_without_its_model_is_said_at_once_with_the_way_out(
    tmp_path: Path, closed_port: int, openai_server
) -> None:
    model = openai_server(lambda request: "the figure shows measured spectra")
    data = write(tmp_path / "mmsci", captions=[Caption("the figure shows measured spectra under pressure")] * 2)
    env = unreachable_hub(offline_env(tmp_path), tmp_path, closed_port) | {
        "SCIFIG_MMSCI_DATA": str(data),
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-model",
        "SCIFIG_JUDGE": "off",
    }
    args = ["eval", "--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1", "--tasks", TASK]

    result = run("scifig", args, env, tmp_path / "out")

    assert "Traceback" not in result.output and RETRY_LINE not in result.output, result.output[-4000:]
    lines = result.output.splitlines()
    before = [i for i, line in enumerate(lines) if "scifig: BERTScore model roberta-large" in line]
    asked = [i for i, line in enumerate(lines) if "generate_until" in line]
    assert len(before) == 1 and asked and before[0] < asked[0], result.output[-4000:]  # said before the model runs
    assert "bertscore_f1 will be n/a (the other captioning metrics are computed); download once" in lines[before[0]]
    said = [line for line in result.output.splitlines() if "bertscore_f1 is unavailable" in line]
    assert len(said) == 1, result.output[-4000:]
    reason = said[0].split("(reported as null, not 0): ", 1)[1]
    assert reason.startswith(
        f"BERTScore model roberta-large (SCIFIG_MMSCI_BERTSCORE_MODEL): not in the Hugging Face cache "
        f"({tmp_path / 'hub'}) and the Hugging Face Hub cannot be reached ({endpoint(closed_port)}: ConnectError"
    ), reason
    assert reason.endswith(
        "— download once with network (hf download roberta-large), or set SCIFIG_MMSCI_BERTSCORE_MODEL to a local "
        "copy (a model folder); without network, set HF_HUB_OFFLINE=1"
    ), reason
    values = result.results()["results"][TASK]
    report = values["caption_report,none"]["metrics"]
    assert report["bertscore_f1"] == {
        "value": None,
        "available": False,
        "reason": reason,
        "model": "roberta-large",
        "layers": 17,
    }
    assert values["bertscore_f1,none"] is None and values["rouge1,none"] > 0  # the other metrics are scored
