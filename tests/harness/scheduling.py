"""How pytest-xdist deals the tests out to its workers: each expensive run is still made once.

Rule implemented. A test goes to whichever worker is free, except that these travel together, as one unit, to one
worker, in collection order:

* the tests of a module that defines a module-scoped fixture (a run made once for the module);
* every module that reads one of the runs shared by the session (:data:`SHARED_RUNS`), together with every other
  module that reads a run one of them reads (a module reading two runs joins their readers into one unit).

Why not ``--dist loadgroup`` and ``xdist_group`` marks: pytest-xdist 3.8 groups by renaming each test's node id, and
pytest 9 no longer takes a node id from the attribute it sets, so the marks group nothing (every test went to any
worker and a module's run was made once per worker). The units here are read from the test files' text, on the
controller, which collects nothing itself.
"""

from __future__ import annotations

import re
from functools import cache

from xdist.scheduler import LoadScopeScheduling

from tests.harness.paths import REPO

SHARED_RUNS = ("demo_run", "grab_exact_run", "mmsci_judged_run", "scifibench_judge_off")
"""The session-scoped fixtures of tests/harness that make a real run for several modules (tests/conftest.py)."""
MODULE_FIXTURE = re.compile(r"""@pytest\.fixture\(\s*scope\s*=\s*["']module["']""")


@cache
def _runs_read_by(path: str) -> frozenset[str]:
    text = (REPO / path).read_text(encoding="utf-8")
    return frozenset(name for name in SHARED_RUNS if re.search(rf"\b{name}\b", text))


@cache
def _reader_units() -> dict[str, str]:
    """Shared run -> the name of its unit: runs read by one module share a unit (union-find over the test files)."""
    parent = {name: name for name in SHARED_RUNS}

    def root(name: str) -> str:
        while parent[name] != name:
            name = parent[name]
        return name

    for path in sorted(p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py")):
        first, *others = sorted(_runs_read_by(path)) or [None]
        for other in others:
            parent[root(other)] = root(first)
    return {name: root(name) for name in SHARED_RUNS}


@cache
def unit_of(path: str) -> str | None:
    """The unit the tests of ``path`` (relative to the checkout) travel in, or None when each test goes alone."""
    if runs := _runs_read_by(path):
        return "reads " + _reader_units()[min(runs)]
    if MODULE_FIXTURE.search((REPO / path).read_text(encoding="utf-8")):
        return path
    return None


class SharedRunScheduling(LoadScopeScheduling):
    """Load scheduling over the units of :func:`unit_of`; a test outside every unit is a unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return (unit_of(path) if (REPO / path).is_file() else None) or nodeid
