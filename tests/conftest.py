"""Shared fixtures (the local OpenAI-compatible server, helpers to run the real lmms-eval CLI) and the test marks.

The marks (declared in setup.cfg's ``[tool:pytest]`` section, where each is defined):

* ``slow``: more than about a second on an idle 2-core machine; ``pytest -m "not slow"`` is the quick subset.
* ``cli``: runs a command line (``scifig ...``, ``lmms-eval``, ``python -m ...``) in a subprocess or in-process
  through its ``main()``.
* ``perf``: runs a ``tests/perf`` benchmark script (a smoke run).

Tests that run real command lines in subprocesses (they take the ``run_cli`` or ``lmms_env`` fixture, or one of the
module-scoped fixtures that run lmms-eval once for a module: :data:`CLI_RUN_FIXTURES`) are marked ``slow`` and
``cli`` here; every other test carries its marks where it is defined.

Parallel runs (pytest-xdist, ``-n 2 --dist loadgroup`` in the README's test command): the tests of a module that share
a module-scoped fixture run in one worker (an ``xdist_group`` named after the module, added here), so an expensive
run made once for a module is still made once; every other test goes to whichever worker is free. Each worker has its
own ``tmp_path`` folders and each local server its own port, so tests share no folder, port or cache.
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
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once per module (or wider): such tests must stay in one worker."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definitions[-1].scope != "function" and definitions[-1].func.__module__.startswith("tests.")
        for definitions in info.name2fixturedefs.values()
    )
