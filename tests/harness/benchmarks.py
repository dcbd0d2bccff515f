"""Which registered benchmarks a test covers: scifig's own five are held to every rule of this repository; an outside
benchmark (an installed plugin's, e.g. the toy benchmark the README's test command installs) is held to the contract
of docs/adding-a-benchmark.md only.

Rule: a test over every registered benchmark that needs something only this repository ships for a benchmark — small
local data in ``tests/harness/<name>_data.py``, a task README with a changelog — skips an outside benchmark that lacks
it, saying why (:func:`outside_without`); for a benchmark of scifig's own the missing piece fails, naming it.
"""

from __future__ import annotations

import importlib.util

from scifig_tasks.core import registry


def own(name: str) -> bool:
    """Whether benchmark ``name`` is one of scifig's own (registered by the scifig distribution)."""
    return not registry.is_plugin(name)


def outside_without(name: str, what: str, present: bool) -> str | None:
    """The reason to skip benchmark ``name`` in a test needing ``what`` (``present``: whether it has it): an outside
    benchmark without it; None when it has it. For a benchmark of scifig's own without it, an ``AssertionError``
    naming ``what``."""
    if present:
        return None
    assert not own(name), f"{name} is scifig's own benchmark and has no {what}"
    return f"{name} is an outside benchmark ({registry.package_of(name)}) with no {what}"


def data_module(name: str) -> str:
    """The module holding small local data for benchmark ``name`` (``sample(root) -> {variable: path}``)."""
    return f"tests.harness.{name}_data"


def without_data(name: str) -> str | None:
    """Why a test over every registered benchmark's data leaves ``name`` out (:func:`outside_without`), or None."""
    module = data_module(name)
    return outside_without(name, f"{module.replace('.', '/')}.py", importlib.util.find_spec(module) is not None)
