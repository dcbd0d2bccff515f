"""The rule every model scifig fetches from the Hugging Face Hub at run time follows
(:mod:`scifig_tasks.core.hub_cache`), in process, with an empty cache under the test's folder: not cached and offline,
or not cached and the Hub unreachable (a closed local port: refused at once), is one line naming the model, the cache
and the ways out; cached goes ahead, and when the Hub is silent the process goes offline (so that no library retries
it for the optional files); a local folder needs nothing; a folder that does not exist is named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scifig_tasks.core import hub_cache
from scifig_tasks.core.hub_cache import TRANSFORMERS_FILES, HubModel, Unavailable, cached, check, check_model
from tests.harness import hub
from tests.harness.hub import endpoint

closed_port = hub.closed_port


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """huggingface_hub online, its cache an empty folder under ``tmp_path``; whatever a test changes is put back."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "")  # recorded, so that what go_offline sets is put back
    return tmp_path / "hub"


def cache(folder: Path, repo: str, *names: str) -> Path:
    """``names`` of ``repo`` in the Hub cache ``folder``, laid out as huggingface_hub lays it out; the snapshot."""
    snapshot = folder / f"models--{repo.replace('/', '--')}" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for name in names:
        (snapshot / name).write_text("{}")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    return snapshot


BERT = HubModel("org/bert", TRANSFORMERS_FILES, "model org/bert (SOME_SETTING)")


def test_not_cached_offline_stops_at_once_naming_model_cache_and_way_out(
    online: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(Unavailable) as raised:
        check(BERT, "set SOME_SETTING to a local copy")
    assert raised.value.status == 1
    assert raised.value.what == f"model org/bert (SOME_SETTING): not in the Hugging Face cache ({online}) and " + (
        "HF_HUB_OFFLINE is set"
    )
    assert raised.value.todo == (
        "download once with network (HF_HUB_OFFLINE unset: hf download org/bert), or set SOME_SETTING to a local copy"
    )


def test_not_cached_with_the_hub_unreachable_stops_after_one_refused_request(
    online: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", endpoint(closed_port))
    with pytest.raises(Unavailable) as raised:
        check(BERT, "set SOME_SETTING to a local copy")
    assert raised.value.what.startswith(
        f"model org/bert (SOME_SETTING): not in the Hugging Face cache ({online}) and the Hugging Face Hub cannot be "
        f"reached ({endpoint(closed_port)}: ConnectError"
    ), raised.value.what
    assert raised.value.todo == (
        "download once with network (hf download org/bert), or set SOME_SETTING to a local copy; without network, set "
        "HF_HUB_OFFLINE=1"
    )


def test_cached_goes_ahead_and_offline_when_the_hub_is_silent(
    online: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    """Every file the work reads must be there: the configuration and the weights (a sharded index: every shard)."""
    from huggingface_hub import constants

    snapshot = cache(online, "org/bert", "config.json", "model.safetensors.index.json", "model-1.safetensors")
    (snapshot / "model.safetensors.index.json").write_text('{"weight_map": {"a": "model-1.safetensors", "b": "m2"}}')
    assert not cached(BERT)  # shard m2 is missing
    (snapshot / "m2").write_text("")
    assert cached(BERT)

    monkeypatch.setattr(constants, "ENDPOINT", endpoint(closed_port))
    said = check(BERT, "unused")
    assert said is not None and said.startswith(f"the Hugging Face Hub cannot be reached ({endpoint(closed_port)}: ")
    assert said.endswith(
        f"model org/bert (SOME_SETTING) is read from the Hugging Face cache ({online}), HF_HUB_OFFLINE=1 for this run"
    )
    assert constants.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "1"
    assert check(BERT, "unused") is None  # offline now, and cached: nothing asked


def test_a_local_folder_needs_nothing_and_a_missing_one_is_named(online: Path, tmp_path: Path) -> None:
    assert hub_cache.transformers_model(str(tmp_path), "x") is None
    assert check_model(str(tmp_path), "model x", "unused") is None
    with pytest.raises(Unavailable) as raised:
        check_model(str(tmp_path / "absent"), "model x (SOME_SETTING)", "set SOME_SETTING to a model folder")
    assert raised.value.what == f"model x (SOME_SETTING): folder {tmp_path / 'absent'} does not exist"
    assert raised.value.todo == "give an existing model folder, or a Hub model id"
    assert hub_cache.model_state("runs/a/merged") == "no folder"  # not a Hub id: a folder to transformers
    assert hub_cache.model_state("roberta-large", online) == "not cached"
