"""Which open_clip model and weights (shared by ``scifig_clip`` and ``scifig curate scifibench``, whose CLIP embeddings
follow the same paper's §3.3):

* :func:`clip_model` reads the user's ``model`` / ``pretrained`` / model-config choice: ``pretrained=none`` builds
  random weights; ``pretrained=tiny`` the tiny architecture shipped with the package (:func:`tiny_config`, an
  open_clip model-config JSON, no weights: random weights from the caller's seed), to try a whole loop offline;
* :func:`check_weights` runs before open_clip is asked for Hub weights, by the rule every model scifig fetches at run
  time follows (:func:`scifig_tasks.core.hub_cache.check`): weights in the local Hugging Face cache go ahead;
  otherwise, under ``HF_HUB_OFFLINE=1`` (or ``TRANSFORMERS_OFFLINE=1``), or when the Hub cannot be reached (one
  request, no retries), it raises :class:`WeightsUnavailable` at once, one line naming the model, the cache and what
  to do, instead of huggingface_hub retrying for a minute.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from scifig_tasks.core.hub_cache import HubModel, Unavailable, check


@dataclass(frozen=True)
class ChoiceQuery:
    """``image_to_texts``: the row's single image vs ``texts``; ``text_to_images``: ``text`` vs the row's images."""

    mode: Literal["image_to_texts", "text_to_images"]
    text: str | None = None
    texts: tuple[str, ...] = ()


ContrastiveRule = Callable[[Mapping[str, Any], int], ChoiceQuery]
"""A benchmark's rule for what a row compares, given the row and its number of images (its description's
``contrastive``)."""


# ---- which model and weights ---------------------------------------------------------------------------------------

TINY = "tiny"
"""The ``pretrained`` value that picks the shipped tiny architecture (random weights)."""
TINY_MODEL = "scifig_tiny_clip"
"""Its open_clip model name (the configuration file's stem, as ``open_clip.add_model_config`` registers it)."""
# open_clip's file names on the Hub (open_clip.constants): the weights, their safetensors twin, an hf-hub: config
_HUB_WEIGHTS = "open_clip_pytorch_model.bin"
_HUB_SAFE_WEIGHTS = "open_clip_model.safetensors"
_HUB_CONFIG = "open_clip_config.json"


class WeightsUnavailable(Unavailable):
    """Hub weights that cannot be had now (not cached, and offline or the Hub unreachable): one line, exit 1."""


def tiny_config() -> Path:
    """The shipped tiny open_clip model configuration (package data ``scifig_tasks/data/clip/``)."""
    return Path(str(files("scifig_tasks").joinpath("data", "clip", f"{TINY_MODEL}.json")))


@dataclass(frozen=True)
class ClipModel:
    """An open_clip model to build: its name, its weights (a tag or a checkpoint file; ``None``: random) and an
    open_clip model-config JSON registered first (a custom architecture)."""

    model: str
    pretrained: str | None
    model_config: Path | None = None


def clip_model(model: str, pretrained: str | None, model_config: Path | str | None = None) -> ClipModel:
    """The model the user's choice names: ``pretrained`` empty or ``none`` -> random weights; ``tiny`` -> the shipped
    tiny architecture with random weights (its configuration replaces ``model`` and ``model_config``)."""
    value = "" if pretrained is None else str(pretrained).strip()
    if value.lower() == TINY:
        return ClipModel(TINY_MODEL, None, tiny_config())
    weights = None if value.lower() in ("", "none") else value
    return ClipModel(model, weights, Path(model_config) if model_config else None)


def hub_files(choice: ClipModel) -> tuple[str, tuple[str, ...]] | None:
    """The Hub repository open_clip downloads ``choice`` from and the files it looks for there (any one will do), as
    open_clip resolves them (an ``hf-hub:`` model name; a pretrained tag with an ``hf_hub`` entry, safetensors
    first); ``None`` when nothing comes from the Hub (random weights, a checkpoint file, a tag with a plain URL)."""
    if choice.model.startswith("hf-hub:"):
        return choice.model.removeprefix("hf-hub:"), (_HUB_CONFIG,)
    if choice.pretrained is None or os.path.isfile(choice.pretrained):
        return None
    import open_clip

    config = open_clip.get_pretrained_cfg(choice.model.replace("/", "-"), choice.pretrained)
    location = config.get("hf_hub") if config else None
    if not location:
        return None
    repo, name = os.path.split(location)  # open_clip's form: "org/name/file", or "org/name/" for its default file
    name = name or _HUB_WEIGHTS
    safe = _HUB_SAFE_WEIGHTS if name == _HUB_WEIGHTS else None
    if safe is None and name.endswith((".bin", ".pth")):
        safe = name[:-4] + ".safetensors"
    return repo, (safe, name) if safe else (name,)


def check_weights(choice: ClipModel, option: str = "--model_args pretrained=") -> None:
    """Go ahead when open_clip will not need the Hub for ``choice`` (random weights, a file, weights in the local
    Hugging Face cache) or the Hub answers; raise :class:`WeightsUnavailable` at once otherwise. ``option`` is how the
    caller's command line sets ``pretrained`` (written before ``PATH`` / ``tiny`` in the remedy)."""
    found = hub_files(choice)
    if found is None:
        return
    repo, names = found
    name = choice.model if choice.pretrained is None else f"{choice.model} / {choice.pretrained}"
    weights = HubModel(repo, (names,), f"open_clip weights {name} (Hugging Face Hub: {repo})")
    instead = f"pass a checkpoint file ({option}PATH), or try the shipped tiny model, random weights ({option}{TINY})"
    check(weights, instead, WeightsUnavailable)
