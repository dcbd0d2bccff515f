"""pytest fixture ``openai_server``: start local fake OpenAI-compatible servers, all stopped at teardown.

Rule implemented: a test never leaves a server running, and a policy that raised (a bug in the test, answered to
the client as HTTP 500) fails the test at teardown instead of hiding behind client retries.

Usage in a test module (or conftest): ``from tests.harness.fixtures import openai_server  # noqa: F401``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.harness.openai_server import FakeOpenAIServer, Policy


@pytest.fixture
def openai_server() -> Iterator[Callable[..., FakeOpenAIServer]]:
    """A factory ``start(policy=None, **kwargs) -> FakeOpenAIServer`` (kwargs go to ``FakeOpenAIServer``)."""
    servers: list[FakeOpenAIServer] = []

    def start(policy: Policy | None = None, **kwargs: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(policy, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    errors = [error for server in servers for error in server.errors]
    assert not errors, f"fake OpenAI server policy raised: {errors}"
