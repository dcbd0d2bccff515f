"""A Hugging Face Hub that cannot be reached, as a new user without network has it: ``HF_HUB_OFFLINE`` unset, an
empty Hub cache under the test's folder, and ``HF_ENDPOINT`` at a local port that is bound but not listening (a
connection is refused at once: no name is looked up, nothing leaves the machine).

A command that waited on the Hub would print huggingface_hub's ``Retrying in ...`` lines (a minute of them per file);
the offline tests read the output for them instead of timing the command.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
RETRY_LINE = "Retrying in"
"""What huggingface_hub logs before each retry of a request the Hub did not answer."""


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A local port bound but not listening: connecting to it is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def empty_cache(env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """``env`` with an empty Hugging Face cache (hub and home) under ``workdir``."""
    return {**env, "HF_HUB_CACHE": str(workdir / "hub"), "HF_HOME": str(workdir / "hf")}


def unreachable_hub(env: Mapping[str, str], workdir: Path, port: int) -> dict[str, str]:
    """``env`` online as a new user has it (no offline variable), an empty cache under ``workdir`` and the Hub at
    the closed local ``port``."""
    online = {key: value for key, value in env.items() if key not in OFFLINE_VARIABLES}
    return {**empty_cache(online, workdir), "HF_ENDPOINT": endpoint(port)}


def endpoint(port: int) -> str:
    """The Hub's address at the closed local ``port``."""
    return f"http://127.0.0.1:{port}"
