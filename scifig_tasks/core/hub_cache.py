"""Models and files scifig fetches from the Hugging Face Hub at run time, checked before the work that needs them
starts: the CLIP baseline's weights (:mod:`.clip_baseline`), a fine-tuning base model, BERTScore's model, and a
benchmark's Hub dataset (:func:`scifig_tasks.core.data.hub_snapshot`, which keeps its own refusal line and uses the
network half of the rule, :func:`ask_hub`).

One rule for all of them (:func:`check`), read from the local Hugging Face cache and at most one request:

* held in the local cache: the work goes ahead. When ``HF_HUB_OFFLINE`` is unset and the Hub does not answer (one
  request), the process goes offline first (``HF_HUB_OFFLINE=1``, said in the returned line): transformers asks the
  Hub for every optional file a model may have (a chat template, an adapter config, a processor config) and
  huggingface_hub retries each unanswered request five times with back-off, minutes for a model the cache holds;
* not held, and offline (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``) or the Hub unreachable (one request, no
  retries): :class:`Unavailable` at once, one line naming the model, the cache folder it was looked for in and the
  ways out (download it once with network, a local copy, ``HF_HUB_OFFLINE=1``), instead of a minute of retries that
  ends in a traceback.

``scifig doctor`` reads the same cache lookups (:func:`cached`, :func:`model_state`) and never the network.
A setting naming such a model is a :class:`ModelSetting`, so that doctor finds it among the registered benchmarks'
settings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.settings import Setting

PROBE_TIMEOUT_S = 10.0
"""How long the one reachability request to the Hub may take (connect and answer)."""
OFFLINE = "HF_HUB_OFFLINE"
"""The variable that keeps huggingface_hub (and transformers, datasets, open_clip through it) off the network."""
TRANSFORMERS_FILES: tuple[tuple[str, ...], ...] = (
    ("config.json",),
    ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"),
)
"""What a transformers model needs in the cache: its configuration and its weights (one file or a sharded index whose
shards are all there)."""


class Unavailable(CommandError):
    """A model or file that cannot be had now (not in the local cache, and offline or the Hub unreachable): one line,
    exit status 1."""

    def __init__(self, what: str, todo: str) -> None:
        super().__init__(what, todo, status=1)


@dataclass(frozen=True)
class HubModel:
    """What is fetched from the Hub: the repository, the files the work reads (each entry: any one of these names
    will do) and how the one-line message names it (``what``)."""

    repo: str
    files: tuple[tuple[str, ...], ...]
    what: str
    repo_type: str = "model"
    revision: str | None = None
    """``None``: the repository's ``main``."""


@dataclass(frozen=True)
class ModelSetting(Setting[str]):
    """A setting naming a model fetched from the Hub at run time (a Hub id, or a local folder instead):
    ``scifig doctor`` lists it (``model LABEL``: in the local cache or not, and the way out), the code that loads the
    model checks it first (:func:`check_model`)."""

    label: str = ""
    """The name of doctor's line (``model bertscore``)."""
    needed_by: str = ""
    """What loads it, as doctor says it (``MMSci captioning's BERTScore``)."""


def cache_folder(cache: Path | str | None = None) -> Path:
    """The Hub cache folder looked in: ``cache``, else the process's (``HF_HUB_CACHE``, under ``HF_HOME``)."""
    from huggingface_hub import constants

    return Path(cache) if cache is not None else Path(constants.HF_HUB_CACHE)


def _held(model: HubModel, names: tuple[str, ...], cache: Path | str | None) -> bool:
    """Whether the cache holds one of ``names`` of ``model`` (a sharded index: with every shard it lists)."""
    from huggingface_hub import try_to_load_from_cache

    def lookup(name: str) -> str | None:
        found = try_to_load_from_cache(
            model.repo, name, cache_dir=cache, revision=model.revision, repo_type=model.repo_type
        )
        return found if isinstance(found, str) else None

    for name in names:
        found = lookup(name)
        if found is None:
            continue
        if not name.endswith(".index.json"):
            return True
        try:
            shards = set(json.loads(Path(found).read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError):
            continue
        if all(lookup(shard) is not None for shard in shards):
            return True
    return False


def cached(model: HubModel, cache: Path | str | None = None) -> bool:
    """Whether the local cache (``cache``, default the process's) holds every file ``model``'s work reads (cache
    lookups only: nothing is downloaded or asked of the Hub)."""
    return all(_held(model, names, cache) for names in model.files)


def offline_variable() -> str | None:
    """The variable that puts this process offline (huggingface_hub reads ``HF_HUB_OFFLINE``, else
    ``TRANSFORMERS_OFFLINE``), ``None`` when it is online."""
    from huggingface_hub import constants

    if not constants.is_offline_mode():
        return None
    return "TRANSFORMERS_OFFLINE" if os.environ.get("TRANSFORMERS_OFFLINE") and not os.environ.get(OFFLINE) else OFFLINE


def hub_problem(model: HubModel) -> str | None:
    """Why the Hub cannot be reached (one request for ``model``'s first file, or its card, no retries, no redirect
    followed), or ``None`` when it answers (any HTTP status)."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import get_session

    name = model.files[0][-1] if model.files else "README.md"
    url = hf_hub_url(model.repo, name, repo_type=model.repo_type, revision=model.revision)
    try:
        get_session().head(url, timeout=PROBE_TIMEOUT_S, follow_redirects=False)
    except Exception as exc:  # httpx's transport errors (refused, DNS, timeout), a proxy refusing, ...
        return " ".join(f"{type(exc).__name__}: {exc}".split())
    return None


def go_offline() -> None:
    """Put this process (and the processes it starts) offline: huggingface_hub, and transformers, datasets and
    open_clip through it, read the cache and never the network."""
    from huggingface_hub import constants

    os.environ[OFFLINE] = "1"
    constants.HF_HUB_OFFLINE = True


class HubSilent(Exception):
    """The Hub did not answer the one request for something the cache does not hold (:func:`ask_hub`)."""

    def __init__(self, unreachable: str) -> None:
        super().__init__(unreachable)
        self.unreachable = unreachable
        """``the Hugging Face Hub cannot be reached (ENDPOINT: why)``."""


def ask_hub(model: HubModel, held: bool) -> str | None:
    """The network half of the rule, for an online process: one request. The Hub answers: ``None`` (the work may
    download). It does not: ``model`` ``held`` in the cache, the process goes offline and the line saying so is
    returned; not held, :class:`HubSilent`."""
    problem = hub_problem(model)
    if problem is None:
        return None
    from huggingface_hub import constants

    unreachable = f"the Hugging Face Hub cannot be reached ({constants.ENDPOINT}: {problem})"
    if not held:
        raise HubSilent(unreachable)
    go_offline()
    cache = cache_folder()
    return f"{unreachable}: {model.what} is read from the Hugging Face cache ({cache}), {OFFLINE}=1 for this run"


def check(model: HubModel, instead: str, error: type[Unavailable] = Unavailable) -> str | None:
    """Go ahead when the work on ``model`` will not wait on the Hub; raise ``error`` at once otherwise (the module's
    rule). ``instead``: the other ways out, as the caller's command line says them (``set X to a local copy``).
    Returns the line to show when the process went offline (the model is cached and the Hub did not answer), else
    ``None``."""
    held = cached(model)
    variable = offline_variable()
    where = f"not in the Hugging Face cache ({cache_folder()})"
    if variable is not None:
        if held:
            return None
        raise error(
            f"{model.what}: {where} and {variable} is set",
            f"download once with network ({variable} unset: {download_command(model)}), or {instead}",
        )
    try:
        return ask_hub(model, held)
    except HubSilent as silent:
        raise error(
            f"{model.what}: {where} and {silent.unreachable}",
            f"download once with network ({download_command(model)}), or {instead}; without network, set {OFFLINE}=1",
        ) from None


def download_command(model: HubModel) -> str:
    """The command that puts ``model`` into the cache, with network (huggingface_hub's ``hf`` command line)."""
    kind = "" if model.repo_type == "model" else f" --repo-type {model.repo_type}"
    revision = f" --revision {model.revision}" if model.revision else ""
    return f"hf download {model.repo}{kind}{revision}"


# ---- transformers models: a Hub id or a local folder ----------------------------------------------------------------


def _folder_named(name: str) -> bool:
    """Whether transformers reads ``name`` as a folder: it exists, or it cannot be a Hub repository id (an absolute
    or ``./ ~/`` path, more than one ``/``)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if Path(name).expanduser().is_dir():
        return True
    try:
        validate_repo_id(name)
    except HFValidationError:
        return True
    return name.startswith((".", "~"))


def transformers_model(name: str, what: str) -> HubModel | None:
    """The Hub repository transformers loads model ``name`` from (:data:`TRANSFORMERS_FILES`), ``None`` for a
    folder (transformers reads a folder before trying the Hub)."""
    return None if _folder_named(name) else HubModel(name, TRANSFORMERS_FILES, what)


def check_model(name: str, what: str, instead: str, error: type[Unavailable] = Unavailable) -> str | None:
    """:func:`check` for a transformers model given as a Hub id or a local folder (``what`` names it in the line;
    ``instead`` as for :func:`check`): a folder that does not exist is ``error`` too, naming it."""
    model = transformers_model(name, what)
    if model is not None:
        return check(model, instead, error)
    if not Path(name).expanduser().is_dir():
        raise error(f"{what}: folder {name} does not exist", "give an existing model folder, or a Hub model id")
    return None


ModelState = Literal["folder", "no folder", "cached", "not cached"]


def model_state(name: str, cache: Path | str | None = None) -> ModelState:
    """Where transformers would find model ``name`` (cache lookups only, for ``scifig doctor``): an existing folder,
    a folder that does not exist, or a Hub id the cache holds or not."""
    model = transformers_model(name, name)
    if model is None:
        return "folder" if Path(name).expanduser().is_dir() else "no folder"
    return "cached" if cached(model, cache) else "not cached"
