"""Judge presets: ``model_configs/judges/<name>.yaml`` (or a YAML path) naming an OpenAI-compatible endpoint.

Required fields ``base_url``, ``model`` and ``api_key_env`` (the name of the variable holding the key, never the key);
optional ``max_concurrency``, ``timeout_s``, ``max_retries``, ``max_tokens`` and the prices
``price_per_million_input`` / ``price_per_million_output`` (of a million prompt / completion tokens, in any one
currency; both or neither: with them, results record the judge's cost), each overridable by its
``SCIFIG_JUDGE_<FIELD>`` setting. A bad preset stops with the file and the key named.
"""

from __future__ import annotations

import re
from typing import Any

from scifig_tasks.core.errors import ConfigError
from scifig_tasks.core.resources import check_fields, read_config

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REQUIRED: dict[str, type] = {"base_url": str, "model": str, "api_key_env": str}
OPTIONAL: dict[str, type] = {
    "max_concurrency": int,
    "timeout_s": float,
    "max_retries": int,
    "max_tokens": int,
    "price_per_million_input": float,
    "price_per_million_output": float,
}
PRICES = ("price_per_million_input", "price_per_million_output")
"""The price fields: non-negative (a local judge costs 0), given together."""


class JudgePresetError(ConfigError):
    """A bad judge preset (file and key named)."""

    kind = "judge preset"


def load_preset(name_or_path: str) -> dict[str, Any]:
    """Load and validate a judge preset (a name in ``model_configs/judges`` or a YAML path); :class:`JudgePresetError`
    naming the file and the offending key on any problem."""
    _, source, data = read_config(
        name_or_path, "judges", JudgePresetError, "; or give a path to a YAML file, or 'off' (SCIFIG_JUDGE)"
    )
    check_fields(data, REQUIRED, OPTIONAL, JudgePresetError, source)
    allowed = REQUIRED | OPTIONAL
    preset: dict[str, Any] = {}
    for key, value in data.items():
        kind = allowed[key]
        if kind is str:
            if not isinstance(value, str) or not value.strip():
                raise JudgePresetError(source, key, "must be a non-empty string")
            if key == "api_key_env" and not _ENV_NAME.fullmatch(value):  # the value is not echoed: it may be a key
                raise JudgePresetError(source, key, "must name an environment variable")
            preset[key] = value.strip()
        elif key == "max_tokens" and value is None:
            continue
        else:
            numeric = (int, float) if kind is float else (int,)
            positive = key != "max_retries" and key not in PRICES
            if isinstance(value, bool) or not isinstance(value, numeric) or value < 0 or (positive and value == 0):
                sign = "positive" if positive else "non-negative"
                raise JudgePresetError(source, key, f"must be a {sign} {kind.__name__}")
            preset[key] = kind(value)
    given = [key for key in PRICES if key in preset]
    if len(given) == 1:
        missing = next(key for key in PRICES if key not in preset)
        raise JudgePresetError(source, missing, f"must be given with {given[0]} (both prices or neither)")
    return preset
