"""The import structure's rules, read from the source (every import statement, lazy ones inside functions too):

* ``scifig_tasks`` (the evaluation package, what lmms-eval and VLMEvalKit load) imports nothing of ``curation`` or
  ``finetune``: those sit above it; the core reaches their builders only through entry points;
* the kernel (``scifig_tasks.core``) imports nothing of ``scifig_tasks`` outside itself: the rules know no framework
  and no benchmark;
* a benchmark package (``scifig_tasks.benchmarks.<name>``) imports only the kernel and its own modules; its two
  framework parts also the package they are written with (:data:`TOOLKITS`);
* nothing else in ``scifig_tasks`` imports a benchmark package: the framework adapters, the report and the commands
  reach every benchmark, built-in or plugin, through the registry;
* the two framework adapters (``scifig_tasks.lmms_eval``, ``scifig_tasks.vlmeval``) import none of each other;
* no import circle between modules.

Convention: ``from package import name`` is an edge to the module ``package.name`` when that is a module, else to
``package`` (a name its ``__init__`` defines).
``python -m tests.project.test_layering`` prints the edges that break a rule.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.harness.paths import REPO

PACKAGES = ("scifig_tasks", "curation", "finetune")
CORE = "scifig_tasks.core"
BENCHMARKS = "scifig_tasks.benchmarks"
ADAPTERS = ("scifig_tasks.lmms_eval", "scifig_tasks.vlmeval")
TOOLKITS = {"vlmeval": "scifig_tasks.vlmeval", "tsv_layout": "scifig_tasks.vlmeval", "report": "scifig_tasks.report"}
"""A benchmark's framework parts (module name in its package -> the package it is written with): its VLMEvalKit
classes and TSV layouts on the dataset base class, its report section on the report's document elements, as a
plugin's are (docs/adding-a-benchmark.md)."""


def modules(root: Path = REPO) -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for each module of ``known`` that ``path`` imports."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                if child in known:
                    yield node.lineno, child
                elif node.module in known:
                    yield node.lineno, node.module


def graph(root: Path = REPO) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}."""
    known = modules(root)
    edges: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        out = edges.setdefault(name, {})
        for line, target in imports(path, known):
            if target != name:
                out.setdefault(target, line)
    return edges


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _benchmark(module: str) -> str | None:
    """The benchmark package a module belongs to."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) > 2 and _within(module, BENCHMARKS) else None


def _part(module: str) -> str:
    """A benchmark module's name within its package (``vlmeval``, ``report``, ``tasks``, ...)."""
    parts = module.split(".")
    return parts[3] if len(parts) > 3 else ""


def broken_rules(edges: dict[str, dict[str, int]]) -> list[str]:
    """Every edge that breaks a rule of the module docstring, as ``module (line N) -> target: rule``."""
    found = []
    for module, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            where = f"{module} (line {line}) -> {target}"
            if _within(module, "scifig_tasks") and target.split(".")[0] in ("curation", "finetune"):
                found.append(f"{where}: scifig_tasks imports no curation or finetune code")
            if _within(module, CORE) and _within(target, "scifig_tasks") and not _within(target, CORE):
                found.append(f"{where}: the kernel imports nothing outside the kernel")
            mine, theirs = _benchmark(module), _benchmark(target)
            toolkit = TOOLKITS.get(_part(module)) if mine else None
            below = _within(target, CORE) or (toolkit is not None and _within(target, toolkit))
            if mine and _within(target, "scifig_tasks") and not below and theirs != mine:
                found.append(f"{where}: a benchmark imports only the kernel and its own modules")
            if theirs and not mine and _within(module, "scifig_tasks"):
                found.append(f"{where}: nothing outside a benchmark's package imports it")
            for adapter in ADAPTERS:
                other = next(a for a in ADAPTERS if a != adapter)
                if _within(module, adapter) and _within(target, other):
                    found.append(f"{where}: the framework adapters import none of each other")
    return found


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, {}))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_import_rules_hold() -> None:
    assert broken_rules(graph()) == []


def test_no_import_circles() -> None:
    assert circles(graph()) == []


_REFERENCE = re.compile(r"^(?P<module>[A-Za-z_]\w*(?:\.\w+)+)(?::\w+)?$")
_OUTWARD_PATH = re.compile(r"\.parents\[|\.parent\.parent\b|[\"']\.\./")


def references_out_of_folder(root: Path = REPO) -> list[str]:
    """Every ``"module:attr"`` reference or dotted module path written in a benchmark package that names a module of
    the three packages outside that package, and every relative path climbing out of its folder."""
    found = []
    for folder in sorted((root / "scifig_tasks" / "benchmarks").glob("*/")):
        own = f"{BENCHMARKS}.{folder.name}"
        for path in sorted(folder.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            where = path.relative_to(root).as_posix()
            found += [f"{where}: a relative path out of its folder" for _ in _OUTWARD_PATH.finditer(text)]
            for node in ast.walk(ast.parse(text)):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                    continue
                match = _REFERENCE.match(node.value)
                module = match.group("module") if match else ""
                if module.split(".")[0] in PACKAGES and not _within(module, own):
                    found.append(f"{where} (line {node.lineno}): names {node.value}")
    return found


def test_a_benchmark_names_nothing_outside_its_own_folder() -> None:
    """A benchmark package reaches its parts by its own name (``f"{__package__}.vlmeval:..."``), nothing else."""
    assert references_out_of_folder() == []


def test_the_folder_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    files = {
        "scifig_tasks/benchmarks/grab/description.py": (
            'A = "scifig_tasks.vlmeval.datasets:SciFigGRAB"\nB = "curation.grab.cli:register"\n'
            'C = "scifig_tasks.benchmarks.grab.report"\nD = f"{__package__}.vlmeval:X"\n'
            "E = Path(__file__).parents[2]\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert references_out_of_folder(tmp_path) == [
        "scifig_tasks/benchmarks/grab/description.py: a relative path out of its folder",
        "scifig_tasks/benchmarks/grab/description.py (line 1): names scifig_tasks.vlmeval.datasets:SciFigGRAB",
        "scifig_tasks/benchmarks/grab/description.py (line 2): names curation.grab.cli:register",
    ]


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """A tree that breaks each rule is caught, once per broken edge, and a circle is found."""
    files = {
        "scifig_tasks/__init__.py": "",
        "scifig_tasks/core/__init__.py": "",
        "scifig_tasks/core/judge.py": "from scifig_tasks.report import document\n",
        "scifig_tasks/benchmarks/__init__.py": "",
        "scifig_tasks/benchmarks/grab/__init__.py": "",
        "scifig_tasks/benchmarks/grab/rules.py": "import scifig_tasks.benchmarks.mmsci.rules\n",
        "scifig_tasks/benchmarks/grab/report.py": "from scifig_tasks.report import document\n",
        "scifig_tasks/benchmarks/grab/source.py": "from scifig_tasks.report import document\n",
        "scifig_tasks/benchmarks/mmsci/__init__.py": "",
        "scifig_tasks/benchmarks/mmsci/rules.py": "def f():\n    from curation.grab import build\n",
        "scifig_tasks/report/__init__.py": "",
        "scifig_tasks/report/document.py": "from scifig_tasks.report import build\n",
        "scifig_tasks/report/build.py": "import scifig_tasks.report.document\nimport scifig_tasks.benchmarks.grab\n",
        "scifig_tasks/lmms_eval/__init__.py": "",
        "scifig_tasks/lmms_eval/plugin.py": "from scifig_tasks.vlmeval import names\n",
        "scifig_tasks/vlmeval/__init__.py": "",
        "scifig_tasks/vlmeval/names.py": "from scifig_tasks.vlmeval import tsv\n",
        "scifig_tasks/vlmeval/tsv.py": "",
        "curation/__init__.py": "",
        "curation/grab/__init__.py": "",
        "curation/grab/build.py": "from scifig_tasks.benchmarks.grab import rules\n",
        "finetune/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = graph(tmp_path)
    rules = sorted(line.split(": ", 1)[1] for line in broken_rules(edges))
    assert rules == [
        "a benchmark imports only the kernel and its own modules",  # grab.rules -> mmsci.rules
        "a benchmark imports only the kernel and its own modules",  # grab.source -> report.document
        "nothing outside a benchmark's package imports it",  # report.build -> benchmarks.grab
        "scifig_tasks imports no curation or finetune code",
        "the framework adapters import none of each other",
        "the kernel imports nothing outside the kernel",
    ]
    assert sorted(circles(edges)) == [
        ["curation.grab.build", "scifig_tasks.benchmarks.grab.rules", "scifig_tasks.benchmarks.mmsci.rules"],
        ["scifig_tasks.report.build", "scifig_tasks.report.document"],
    ]
    assert edges["scifig_tasks.vlmeval.names"] == {"scifig_tasks.vlmeval.tsv": 1}  # a module, not its package


if __name__ == "__main__":
    edges = graph()
    for line in broken_rules(edges) or ["no rule broken"]:
        print(line)
    for group in circles(edges) or [[]]:
        print("circle: " + " -> ".join(group) if group else "no circle")
