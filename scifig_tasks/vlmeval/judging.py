"""The judge of a scifig dataset run by VLMEvalKit: the one its ``--judge`` options choose, else the one the
``SCIFIG_JUDGE*`` settings configure (read through :mod:`scifig_tasks.core.settings`, as everywhere).

:func:`chosen_judge` maps the keyword arguments VLMEvalKit's ``get_judge_kwargs`` hands ``evaluate`` (``model``,
``api_base``, ``key``, ``nproc``, ``retry``, ``timeout``) onto a :class:`~scifig_tasks.core.judge.JudgeConfig`;
``scifig vlmeval`` says whether ``--judge`` was given (:func:`command_line`). The precedence: docs/vlmeval.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scifig_tasks.core import settings
from scifig_tasks.core.deprecation import renamed
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, get_judge
from scifig_tasks.core.judge.config import default_cache_dir
from scifig_tasks.core.settings import Settings

VLMEVAL_DEFAULT_MODELS = {"MCQ": "gpt-4o-mini", "Y/N": "gpt-4o-mini", "MCQ_MMMU_Pro": "gpt-4o-mini"}
"""The judge model VLMEvalKit's ``get_judge_kwargs`` names for a dataset type when ``--judge`` is absent."""
NO_LLM = frozenset({"exact_matching"})
"""VLMEvalKit's judge names meaning "no LLM judge"."""
CHAT_SUFFIX = "/chat/completions"
FROM_VLMEVAL = "VLMEvalKit --judge options"
FROM_ENVIRONMENT = "SCIFIG_JUDGE_* environment"

_UNKNOWN = object()
_command_line_model: object = _UNKNOWN
_command_line_options = False
_clients: dict[JudgeConfig, JudgeClient] = {}
_clients_lock = threading.Lock()


@contextmanager
def command_line(model: str | None, options: bool) -> Iterator[None]:
    """Within the block, VLMEvalKit's command line gave ``--judge`` as ``model`` (None: not given) and ``options``
    says whether it gave any judge option (``--judge``, ``--judge-base-url``, ``--judge-key``)."""
    global _command_line_model, _command_line_options
    saved = _command_line_model, _command_line_options
    _command_line_model, _command_line_options = model, options
    try:
        yield
    finally:
        _command_line_model, _command_line_options = saved


def declared() -> bool:
    """Whether the running ``scifig vlmeval`` command line chose an LLM judge with VLMEvalKit's options."""
    return _command_line_options and _command_line_model not in NO_LLM


@dataclass(frozen=True)
class Judging:
    """The judge a dataset scores with (None: off or not configured) and where it was chosen."""

    client: JudgeClient | None
    source: str

    def described(self) -> dict[str, Any]:
        """For the scores file: model, endpoint (without user:password) and where they were chosen; no key."""
        if self.client is None:
            return {"model": None, "base_url": None, "from": self.source}
        parts = urlsplit(self.client.config.base_url)
        base_url = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
        return {"model": self.client.config.model, "base_url": base_url, "from": self.source}

    @property
    def max_concurrency(self) -> int | None:
        return None if self.client is None else self.client.config.max_concurrency


def chosen_model(judge_kwargs: Mapping[str, Any], dataset_type: str) -> str | None:
    """The judge model the user chose on VLMEvalKit's command line, or None (VLMEvalKit's own default is no choice)."""
    model = judge_kwargs.get("model")
    if not model:
        return None
    if _command_line_model is not _UNKNOWN:
        return _command_line_model if isinstance(_command_line_model, str) else None
    default = VLMEVAL_DEFAULT_MODELS.get(dataset_type)
    return None if model == default else str(model)


def chose_judge(judge_kwargs: Mapping[str, Any], dataset_type: str) -> bool:
    """Whether VLMEvalKit's options chose the judge (``--judge``, ``--judge-base-url`` or ``--judge-key``)."""
    given = (judge_kwargs.get("api_base"), judge_kwargs.get("key"))
    return chosen_model(judge_kwargs, dataset_type) is not None or any(given)


def _base_url(value: str | None) -> str | None:
    """VLMEvalKit writes the full ``.../chat/completions`` URL; scifig's judge takes the base URL."""
    if not value:
        return None
    value = value.strip().rstrip("/")
    return value[: -len(CHAT_SUFFIX)] if value.endswith(CHAT_SUFFIX) else value


def chosen_judge(
    judge_kwargs: Mapping[str, Any], dataset_type: str, environ: Settings | Mapping[str, str] | None = None
) -> Judging:
    """The judge for one ``evaluate`` call (module docstring), with the ``SCIFIG_JUDGE*`` settings of ``environ`` (the
    process's settings when None; a :class:`Settings` value or an environment mapping otherwise). Raises ValueError
    when VLMEvalKit's options name a judge without an endpoint anywhere (no ``--judge-base-url``,
    ``SCIFIG_JUDGE_BASE_URL`` nor ``OPENAI_API_BASE``)."""
    chosen = settings.chosen(environ)
    model = chosen_model(judge_kwargs, dataset_type)
    api_base, key = _base_url(judge_kwargs.get("api_base")), judge_kwargs.get("key") or None
    if not chose_judge(judge_kwargs, dataset_type):
        client = get_judge(chosen)
        return Judging(client, FROM_ENVIRONMENT if client is not None else "none configured (SCIFIG_JUDGE_* unset)")
    if model in NO_LLM:
        return Judging(None, f"{FROM_VLMEVAL} (--judge {model}: no LLM judge)")
    try:
        configured = JudgeConfig.from_settings(chosen)
    except ValueError:
        configured = None
    base_url = api_base or (configured.base_url if configured else None)
    base_url = base_url or _base_url(chosen.get(settings.JUDGE_BASE_URL) or chosen.get(settings.OPENAI_API_BASE))
    model = model or (configured.model if configured else None) or chosen.get(settings.JUDGE_MODEL)
    if base_url is None or model is None:
        missing = "endpoint (--judge-base-url or SCIFIG_JUDGE_BASE_URL)" if base_url is None else "model (--judge)"
        raise ValueError(f"the judge chosen with VLMEvalKit's --judge options has no {missing}")
    api_key = key or (configured.api_key if configured else None)
    api_key = api_key or chosen.get(settings.JUDGE_API_KEY) or chosen.get(settings.OPENAI_API_KEY)
    base = configured or JudgeConfig(base_url=base_url, model=model, cache_dir=default_cache_dir(chosen))
    knobs = {
        field: int(judge_kwargs[name]) if field != "timeout_s" else float(judge_kwargs[name])
        for name, field in (("nproc", "max_concurrency"), ("retry", "max_retries"), ("timeout", "timeout_s"))
        if judge_kwargs.get(name) is not None
    }
    config = replace(base, base_url=base_url, model=model, api_key=api_key, **knobs)
    with _clients_lock:
        client = _clients.get(config)
        if client is None:
            client = _clients[config] = JudgeClient(config)
    return Judging(client, FROM_VLMEVAL)


__getattr__ = renamed(__name__, {"resolve": "chosen_judge"})
