"""Shared fixtures: the local OpenAI-compatible server and helpers to run the real lmms-eval CLI."""

from __future__ import annotations

from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.lmms import lmms_env, run_cli  # noqa: F401
