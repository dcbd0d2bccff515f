"""Model presets: the papers' models and decoding settings, one name away, for lmms-eval and VLMEvalKit.

A YAML file by name or path, checked key by key; secrets are never stored. Manual: docs/protocols.md, 'Model
presets' (the schema).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core.errors import ConfigError
from scifig_tasks.core.resources import check_fields, read_config, shipped_names

BACKENDS = ("hf", "vllm", "openai", "clip")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_ARG = re.compile(r"(api_?key|secret|token|password|base_url|api_base)", re.IGNORECASE)
_SCALAR = (str, int, float, bool)
_TOP_KEYS = {"description": True, "backend": True, "lmms_eval": True, "vlmeval_model": True}
_OPTIONAL_TOP = ("papers", "endpoint", "notes")
_LMMS_KEYS = ("model", "model_args", "gen_kwargs", "seed", "batch_size")
_ENDPOINT_KEYS = ("base_url_env", "api_key_env", "base_url_hint")
PRESETS_SUBDIR = "models"


class PresetError(ConfigError):
    """A bad preset (file and key named) or a preset that cannot be used in this environment."""

    kind = "model preset"


@dataclass(frozen=True)
class Endpoint:
    """Where an API model is reached: names of environment variables (values are read at use time only)."""

    base_url_env: str
    api_key_env: str
    base_url_hint: str | None = None


@dataclass(frozen=True)
class Preset:
    name: str
    source: str
    description: str
    backend: str
    lmms_model: str
    model_args: Mapping[str, Any] = field(default_factory=dict)
    gen_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    batch_size: int | None = None
    endpoint: Endpoint | None = None
    vlmeval_model: str | None = None
    papers: tuple[str, ...] = ()
    notes: str | None = None


# --- loading and validation -------------------------------------------------------------------------------------


def preset_names() -> list[str]:
    return shipped_names(PRESETS_SUBDIR)


def _require(source: str, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise PresetError(source, key, f"must be {what}, got {value!r}")
    if not isinstance(value, kind):
        raise PresetError(source, key, f"must be {what}, got {type(value).__name__} {value!r}")
    if isinstance(value, str) and not value.strip():
        raise PresetError(source, key, f"must be {what}, got an empty string")
    return value


def _mapping(source: str, key: str, value: Any, secrets_forbidden: bool) -> dict[str, Any]:
    if value is None:
        return {}
    _require(source, key, value, dict, "a mapping of names to scalar values")
    for name, item in value.items():
        _require(source, f"{key}.{name}", name, str, "a string name")
        if not isinstance(item, _SCALAR):
            raise PresetError(source, f"{key}.{name}", f"must be a scalar (string, number, boolean), got {item!r}")
        if isinstance(item, str) and ("," in item or "=" in item):
            raise PresetError(source, f"{key}.{name}", "must not contain ',' or '=' (lmms-eval key=value syntax)")
        if secrets_forbidden and _SECRET_ARG.search(name):
            raise PresetError(
                source, f"{key}.{name}", "credentials and endpoints are never stored: use endpoint.*_env instead"
            )
    return dict(value)


def parse_preset(data: Any, name: str, source: str) -> Preset:
    """Validate a loaded YAML mapping (the schema: docs/protocols.md, 'Model presets')."""
    check_fields(data, _TOP_KEYS, _OPTIONAL_TOP, PresetError, source)
    description = _require(source, "description", data["description"], str, "a non-empty string")
    backend = data["backend"]
    if backend not in BACKENDS:
        raise PresetError(source, "backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    lmms = _require(source, "lmms_eval", data["lmms_eval"], dict, "a mapping")
    for key in lmms:
        if key not in _LMMS_KEYS:
            raise PresetError(source, f"lmms_eval.{key}", f"unknown key (allowed: {', '.join(_LMMS_KEYS)})")
    if "model" not in lmms:
        raise PresetError(source, "lmms_eval.model", "missing required key")
    model = _require(source, "lmms_eval.model", lmms["model"], str, "an lmms-eval model name")
    seed = lmms.get("seed")
    if seed is not None:
        _require(source, "lmms_eval.seed", seed, int, "an integer")
    batch_size = lmms.get("batch_size")
    if batch_size is not None and (_require(source, "lmms_eval.batch_size", batch_size, int, "an integer") < 1):
        raise PresetError(source, "lmms_eval.batch_size", f"must be >= 1, got {batch_size}")
    endpoint = None
    if backend == "openai":
        if "endpoint" not in data:
            raise PresetError(source, "endpoint", "missing: the openai backend needs base_url_env and api_key_env")
        raw = _require(source, "endpoint", data["endpoint"], dict, "a mapping")
        for key in raw:
            if key not in _ENDPOINT_KEYS:
                raise PresetError(source, f"endpoint.{key}", f"unknown key (allowed: {', '.join(_ENDPOINT_KEYS)})")
        for key in ("base_url_env", "api_key_env"):
            if key not in raw:
                raise PresetError(source, f"endpoint.{key}", "missing required key")
            if not isinstance(raw[key], str) or not _ENV_NAME.fullmatch(raw[key]):  # the value is not echoed
                raise PresetError(source, f"endpoint.{key}", "must name an environment variable")
        hint = raw.get("base_url_hint")
        if hint is not None:
            _require(source, "endpoint.base_url_hint", hint, str, "a URL string")
        endpoint = Endpoint(raw["base_url_env"], raw["api_key_env"], hint)
    elif "endpoint" in data:
        raise PresetError(source, "endpoint", f"only the openai backend takes an endpoint (backend is {backend!r})")
    vlmeval = data["vlmeval_model"]
    if vlmeval is not None:
        _require(source, "vlmeval_model", vlmeval, str, "a VLMEvalKit model name or null")
    papers = data.get("papers") or []
    if not isinstance(papers, list) or not all(isinstance(item, str) and item for item in papers):
        raise PresetError(source, "papers", "must be a list of paper names")
    notes = data.get("notes")
    if notes is not None:
        _require(source, "notes", notes, str, "a string")
    return Preset(
        name=name,
        source=source,
        description=description.strip(),
        backend=backend,
        lmms_model=model,
        model_args=_mapping(source, "lmms_eval.model_args", lmms.get("model_args"), secrets_forbidden=True),
        gen_kwargs=_mapping(source, "lmms_eval.gen_kwargs", lmms.get("gen_kwargs"), secrets_forbidden=False),
        seed=seed,
        batch_size=batch_size,
        endpoint=endpoint,
        vlmeval_model=vlmeval,
        papers=tuple(papers),
        notes=notes.strip() if notes else None,
    )


def load_preset(name_or_path: str | Path) -> Preset:
    """A shipped preset by name (``qwen2-vl-7b-instruct``) or a YAML file by path; validated."""
    name, source, data = read_config(name_or_path, PRESETS_SUBDIR, PresetError)
    return parse_preset(data, name, source)


def list_presets() -> list[Preset]:
    """Every shipped preset, validated, by name."""
    return [load_preset(name) for name in preset_names()]
