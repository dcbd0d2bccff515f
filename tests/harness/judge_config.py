"""The judge settings in-process judge tests start from: a local judge at ``base_url``, a fake key, short back-offs
and a cache under the test's folder; each test module names its key and what it changes."""

from __future__ import annotations

from pathlib import Path

from scifig_tasks.core.judge import JudgeConfig


def judge_config(base_url: str, tmp_path: Path, api_key: str, **overrides: object) -> JudgeConfig:
    """A :class:`JudgeConfig` for a local judge: model ``judge-model``, a 2 s deadline, no retries, back-offs of
    10–50 ms and the cache in ``tmp_path / "cache"``; ``overrides`` replace any of them."""
    settings: dict = {
        "base_url": base_url,
        "model": "judge-model",
        "api_key": api_key,
        "timeout_s": 2.0,
        "max_retries": 0,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        "cache_dir": tmp_path / "cache",
    } | overrides
    return JudgeConfig(**settings)
