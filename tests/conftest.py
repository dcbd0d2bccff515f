"""Shared fixtures: the local OpenAI-compatible server and helpers to run the real lmms-eval CLI.

Tests that run real command lines in subprocesses (they take the ``run_cli`` or ``lmms_env`` fixture, or one of the
module-scoped fixtures that run lmms-eval once for a module: :data:`CLI_RUN_FIXTURES`) are marked ``slow`` here, as
are tests marked by hand; ``pytest -m "not slow"`` is the quick subset.
"""

from __future__ import annotations

import pytest

from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.lmms import lmms_env, run_cli  # noqa: F401

SUBPROCESS_FIXTURES = frozenset({"run_cli", "lmms_env"})
CLI_RUN_FIXTURES = {
    "test_report.py": "evaluated",
    "test_report_samples.py": "built",
    "test_mmsci_lmms_cli.py": "healthy",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if SUBPROCESS_FIXTURES & names or CLI_RUN_FIXTURES.get(item.path.name) in names:
            item.add_marker(pytest.mark.slow)
