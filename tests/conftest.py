"""Shared fixtures (the local OpenAI-compatible server, helpers to run the real lmms-eval CLI) and the test marks.

The marks (declared in setup.cfg's ``[tool:pytest]`` section, where each is defined):

* ``slow``: more than about a second on an idle 2-core machine; ``pytest -m "not slow"`` is the quick subset.
* ``cli``: runs a command line (``scifig ...``, ``lmms-eval``, ``python -m ...``) in a subprocess or in-process
  through its ``main()``.
* ``perf``: runs a ``tests/perf`` benchmark script (a smoke run).

Tests that run real command lines in subprocesses (they take the ``run_cli`` or ``lmms_env`` fixture, a run shared by
the session such as ``scifibench_judge_off``, or one of the module-scoped fixtures that run lmms-eval once for a
module: :data:`CLI_RUN_FIXTURES`) are marked ``slow`` and ``cli`` here; every other test carries its marks where it
is defined.

Parallel runs (pytest-xdist, ``-n 2`` in the README's test command): the tests of a module with a module-scoped
fixture, and the modules that read a run shared by the session, go to one worker together
(:mod:`tests.harness.scheduling`), so an expensive run made once is still made once; every other test goes to
whichever worker is free. Each worker has its own ``tmp_path`` folders and each local server its own port, so tests
share no folder, port or cache.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.demo_run import demo_run  # noqa: F401
from tests.harness.fixtures import openai_server  # noqa: F401
from tests.harness.grab_run import grab_exact_run  # noqa: F401
from tests.harness.lmms import lmms_env, run_cli  # noqa: F401
from tests.harness.mmsci_run import mmsci_judged_run  # noqa: F401
from tests.harness.scheduling import SHARED_RUNS, SharedRunScheduling
from tests.harness.scifibench_run import scifibench_judge_off  # noqa: F401

SUBPROCESS_FIXTURES = frozenset({"run_cli", "lmms_env", *SHARED_RUNS})
CLI_RUN_FIXTURES = {
    "test_report.py": "evaluated",
    "test_report_samples.py": "built",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if SUBPROCESS_FIXTURES & names or CLI_RUN_FIXTURES.get(item.path.name) in names:
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.cli)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> SharedRunScheduling:
    """Under ``-n N``: the tests that read a shared or module-wide run go to one worker together."""
    return SharedRunScheduling(config, log)
