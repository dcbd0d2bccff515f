"""Shared fixtures (the local OpenAI-compatible server, helpers to run the real lmms-eval CLI) and the test marks.

The marks (declared in setup.cfg's ``[tool:pytest]`` section, where each is defined):

* ``slow``: more than about a second on an idle 2-core machine; ``pytest -m "not slow"`` is the quick subset.
* ``cli``: runs a command line (``scifig ...``, ``lmms-eval``, ``python -m ...``) in a subprocess or in-process
  through its ``main()``.
* ``perf``: runs a ``tests/perf`` benchmark script (a smoke run).

Tests that run real command lines in subprocesses (they take the ``run_cli`` or ``lmms_env`` fixture, or one of the
module-scoped fixtures that run lmms-eval once for a module: :data:`CLI_RUN_FIXTURES`) are marked ``slow`` and
``cli`` here; every other test carries its marks where it is defined.
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
            item.add_marker(pytest.mark.cli)
