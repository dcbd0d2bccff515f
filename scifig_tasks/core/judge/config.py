"""Where and how to ask the judge: :class:`JudgeConfig`, from the settings (:mod:`scifig_tasks.core.settings`, the
only place the ``SCIFIG_JUDGE*`` variables are read), a preset or explicit arguments. See docs/judge.md for the
settings and presets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scifig_tasks.core import settings
from scifig_tasks.core.judge_presets import load_preset
from scifig_tasks.core.secrets import mask_credentials
from scifig_tasks.core.settings import Settings

_OFF = settings.OFF_WORDS
_NO_PRESET = settings.NO_PRESET_WORDS
# The preset fields SCIFIG_JUDGE_<FIELD> settings can override (:data:`judge_presets.OPTIONAL`).
_KNOBS: dict[str, settings.Setting[Any]] = {
    "max_concurrency": settings.JUDGE_MAX_CONCURRENCY,
    "timeout_s": settings.JUDGE_TIMEOUT_S,
    "max_retries": settings.JUDGE_MAX_RETRIES,
    "max_tokens": settings.JUDGE_MAX_TOKENS,
    "price_per_million_input": settings.JUDGE_PRICE_PER_MILLION_INPUT,
    "price_per_million_output": settings.JUDGE_PRICE_PER_MILLION_OUTPUT,
}
"""The setting that overrides each optional preset field."""


BREAKER_THRESHOLD = 5
"""Consecutive failed judge calls (each after its retries) that open the circuit breaker."""


def default_cache_dir(given: Settings | Mapping[str, str] | None = None) -> Path:
    """``SCIFIG_JUDGE_CACHE``, else ``$XDG_CACHE_HOME/scifig/judge``, else ``~/.cache/scifig/judge`` (of ``given``
    settings, an environment mapping, or the process's settings)."""
    chosen = settings.chosen(given)
    explicit = chosen.get(settings.JUDGE_CACHE)
    if explicit is not None:
        return explicit
    xdg = (chosen.get(settings.XDG_CACHE_HOME) or Path("~/.cache")).expanduser()
    base = xdg if xdg.is_absolute() else Path("~/.cache").expanduser()  # the XDG spec ignores a relative path
    return base / "scifig" / "judge"


def _normalise_base_url(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            "judge base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, "
            f"got {mask_credentials(base_url)!r}"
        )
    return url


@dataclass(frozen=True)
class JudgeConfig:
    """Where and how to ask the judge. ``api_key`` is excluded from ``repr``."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    max_concurrency: int = settings.JUDGE_MAX_CONCURRENCY.default
    timeout_s: float = settings.JUDGE_TIMEOUT_S.default
    max_retries: int = settings.JUDGE_MAX_RETRIES.default  # retries after the first attempt
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    max_tokens: int | None = settings.JUDGE_MAX_TOKENS.default
    cache_dir: Path = field(default_factory=default_cache_dir)  # the process's settings
    breaker_threshold: int = BREAKER_THRESHOLD  # consecutive failed calls that open the circuit breaker
    price_per_million_input: float | None = None  # price of a million prompt tokens (any currency); None: unpriced
    price_per_million_output: float | None = None  # price of a million completion tokens

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _normalise_base_url(self.base_url))
        object.__setattr__(self, "cache_dir", Path(self.cache_dir).expanduser())
        if not self.model.strip():
            raise ValueError("judge model must be a non-empty string")
        if self.max_concurrency < 1:
            raise ValueError(f"judge max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"judge max_retries must be >= 0, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"judge timeout_s must be > 0, got {self.timeout_s}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"judge max_tokens must be >= 1, got {self.max_tokens}")
        if self.breaker_threshold < 1:
            raise ValueError(f"judge breaker_threshold must be >= 1, got {self.breaker_threshold}")
        prices = (self.price_per_million_input, self.price_per_million_output)
        if any(price is not None and price < 0 for price in prices):
            raise ValueError(f"judge prices per million tokens must be >= 0, got {prices}")
        if (prices[0] is None) != (prices[1] is None):
            raise ValueError(
                "judge price_per_million_input and price_per_million_output go together: give both or neither"
            )

    @property
    def priced(self) -> bool:
        """Whether a price per million tokens is configured (both input and output)."""
        return self.price_per_million_input is not None and self.price_per_million_output is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The price of the tokens, in the preset's currency; None when no price is configured."""
        if self.price_per_million_input is None or self.price_per_million_output is None:
            return None
        return (
            prompt_tokens * self.price_per_million_input + completion_tokens * self.price_per_million_output
        ) / 1_000_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JudgeConfig | None:
        """The configuration of the environment mapping ``environ`` (the process's settings when ``None``); see
        :meth:`from_settings`."""
        return cls.from_settings(settings.chosen(environ))

    @classmethod
    def from_settings(cls, given: Settings) -> JudgeConfig | None:
        """The judge ``given`` settings configure; None when off or not configured (no endpoint or no model).

        ``SCIFIG_JUDGE`` names a preset, whose fields the ``SCIFIG_JUDGE_*`` settings that were given override;
        without a preset the endpoint and key fall back to ``OPENAI_API_BASE`` / ``OPENAI_API_KEY`` (a preset's
        endpoint never does: its key is the variable its ``api_key_env`` names). Raises ValueError for a bad preset
        or a malformed setting (the variable named).
        """
        choice = given.get(settings.JUDGE).strip()
        if choice.lower() in _OFF:
            return None
        if choice.lower() in _NO_PRESET:
            preset: dict[str, Any] = {}
            base_url = given.get(settings.JUDGE_BASE_URL) or given.get(settings.OPENAI_API_BASE)
            api_key = given.get(settings.JUDGE_API_KEY) or given.get(settings.OPENAI_API_KEY)
        else:
            preset = load_preset(choice)
            base_url = given.get(settings.JUDGE_BASE_URL) or preset["base_url"]
            api_key = given.get(settings.JUDGE_API_KEY) or given.credential(preset["api_key_env"])
        model = given.get(settings.JUDGE_MODEL) or preset.get("model")
        if not base_url or not model:
            return None
        knobs: dict[str, Any] = {}
        for name, setting in _KNOBS.items():
            value = given.get(setting) if given.given(setting) else preset.get(name)
            if value is not None:
                knobs[name] = value
        return cls(base_url=base_url, model=model, api_key=api_key or None, cache_dir=default_cache_dir(given), **knobs)


def _is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def endpoint_host(base_url: str) -> str:
    """The URL's ``host[:port]``, without any user:password part (what messages and results files may name)."""
    return urlsplit(base_url).netloc.rsplit("@", 1)[-1]


def _endpoint(base_url: str) -> str:
    """The base URL without any user:password part, for messages."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{endpoint_host(base_url)}{parts.path}"


def configured_concurrency(given: Settings | Mapping[str, str] | None = None) -> int | None:
    """The configured judge's ``max_concurrency``, or None when judging is off, not configured or misconfigured.

    The frameworks' scoring threads are sized from it (``scifig_tasks.lmms_eval.concurrency``, the VLMEvalKit
    datasets) so that every request the judge client allows can be in flight; a misconfiguration is left to the
    scoring that needs the judge, which reports it.
    """
    try:
        config = JudgeConfig.from_settings(settings.chosen(given))
    except ValueError:
        return None
    return None if config is None else config.max_concurrency
