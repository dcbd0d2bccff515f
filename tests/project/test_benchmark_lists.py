"""No list or table naming the benchmarks outside the registry and the benchmarks' own descriptions and folders.

A module-level (or class-level) assignment whose value holds string constants naming two or more registered
benchmarks — by name (``grab``), title (``GRAB``), task name (``grab_properties``), module path
(``scifig_tasks.benchmarks.grab.report``) or an identifier named after one (``SciFigGRAB``) — is a hand-kept list:
adding a benchmark would mean editing it. Such facts live in each benchmark's package
(``scifig_tasks/benchmarks/<name>/``) and are derived from :mod:`scifig_tasks.core.registry`. A benchmark's own folders
(``scifig_tasks/benchmarks/<name>/``, ``curation/<name>/``) name only themselves; the table of import paths that moved
(``scifig_tasks/moved.py``) names the four built-ins' old ones.

``python -m tests.project.test_benchmark_lists [ROOT]`` prints every such assignment of the checkout at ``ROOT``
(default: this one) and their count.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from scifig_tasks.core import registry
from tests.harness.paths import REPO

PACKAGES = ("scifig_tasks", "curation")
OWNERS = ("scifig_tasks/core/registry.py", "scifig_tasks/moved.py")


def _benchmark_of(text: str, names: dict[str, str]) -> str | None:
    """The benchmark a string constant names: its name, title or a task name, alone or as a dotted-path part."""
    for part in re.split(r"[.:/]", text):
        for name, title in names.items():
            if part in (name, title) or part.startswith(f"{name}_"):
                return name
    return None


def _benchmark_named_by(identifier: str, names: dict[str, str]) -> str | None:
    """The benchmark a referenced identifier is named after (``GRAB_FORMAT``, ``SciFigPlotTwist``)."""
    folded = identifier.lower()
    for name, title in names.items():
        if name.replace("_", "") in folded.replace("_", "") or title.replace(" ", "").lower() in folded:
            return name
    return None


def _own_folder(relative: str, names: dict[str, str]) -> bool:
    parts = relative.split("/")
    return any(name in parts or relative.endswith(f"/{name}.py") for name in names)


def _named(leaf: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
        return _benchmark_of(leaf.value, names)
    if isinstance(leaf, ast.Name):
        return _benchmark_named_by(leaf.id, names)
    if isinstance(leaf, ast.Attribute):
        return _benchmark_named_by(leaf.attr, names)
    return None


def hand_kept_lists(root: Path = REPO) -> Iterator[tuple[str, int, list[str]]]:
    """``(file, line, benchmarks named)`` for every assignment naming two or more benchmarks."""
    names = {described.name: described.title for described in registry.benchmarks().values()}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in OWNERS or _own_folder(relative, names):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            scopes = [tree, *(node for node in tree.body if isinstance(node, ast.ClassDef))]
            for scope in scopes:
                for node in scope.body:
                    if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
                        continue
                    named = sorted({found for leaf in ast.walk(node.value) if (found := _named(leaf, names))})
                    if len(named) >= 2:
                        yield relative, node.lineno, named


def test_no_module_outside_the_registry_keeps_a_list_of_benchmarks() -> None:
    found = list(hand_kept_lists())
    assert not found, "\n".join(f"{file}:{line} names {', '.join(named)}" for file, line, named in found)


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO
    listed = list(hand_kept_lists(root))
    for file, line, named in listed:
        print(f"{file}:{line}  {', '.join(named)}")
    print(f"{len(listed)} hand-kept lists naming two or more benchmarks in {', '.join(PACKAGES)} of {root}")
