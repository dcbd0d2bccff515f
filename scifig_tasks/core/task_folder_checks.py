"""What a benchmark's lmms-eval task folder must hold to be registered, checked without importing anything.

Each mistake is said in one line naming the file, the key and the fix, and the benchmark is left out. Manual:
docs/protocols.md, 'Task folder checks'.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from scifig_tasks.core.raw_outputs import END_OF_TURN_MARKERS
from scifig_tasks.core.task_yaml import FunctionTag, read_yaml, resolved

UNTIL = f"until: {list(END_OF_TURN_MARKERS)}"
"""The ``generation_kwargs`` entry every generating task carries (:data:`END_OF_TURN_MARKERS`)."""


def task_names(folder: Path) -> dict[str, Path]:
    """Every task and group name the YAMLs of ``folder`` define -> the YAML defining it."""
    names: dict[str, Path] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        config = read_yaml(path)
        name = config.get("group") if isinstance(config.get("task"), list) else config.get("task")
        if isinstance(name, str):
            names.setdefault(name, path)
    return names


def examined(
    folder: Path, version: str, sources: Mapping[str, Any], benchmark: str
) -> tuple[dict[str, str], str | None]:
    """The task and group names of ``folder`` (-> the YAML defining each) and its first mistake
    (:func:`folder_problem`), read once while the folder's files and the hook modules it names are unchanged
    (:mod:`scifig_tasks.core.registration_cache`)."""
    from scifig_tasks.core.registration_cache import remembered

    def find() -> tuple[dict[str, Any], list[Path]]:
        read: list[Path] = []
        problem = folder_problem(folder, version, sources, benchmark, read)
        return {"names": {name: str(path) for name, path in task_names(folder).items()}, "problem": problem}, read

    listed = [path for pattern in ("*.yaml", "*.py") for path in Path(folder).glob(pattern)]
    key = f"{Path(folder).resolve()}|{benchmark}|{version}|{','.join(sorted(sources))}"
    found = remembered("task_folder", key, find, listed)
    return found["names"], found["problem"]


def folder_problem(
    folder: Path, version: str, sources: Mapping[str, Any], benchmark: str, read: list[Path] | None = None
) -> str | None:
    """The first mistake in the task folder of ``benchmark`` (its description's ``version`` and source keys), as
    ``FILE: WHAT — FIX``; None when there is none."""
    yamls = sorted(Path(folder).glob("*.yaml"))
    if not yamls:
        return f"{folder}: no task YAML (*.yaml) in the task folder"
    for path in yamls:
        try:
            config = resolved(path)
        except Exception as exc:  # a YAML that does not parse, an include that is missing or loops
            return f"{path}: cannot be read ({' '.join(str(exc).split())})"
        problem = _task_problem(path, config, version, sources, benchmark, [] if read is None else read)
        if problem is not None:
            return f"{path.name}: {problem}"
    return None


def _task_problem(
    path: Path, config: dict[str, Any], version: str, sources: Mapping[str, Any], benchmark: str, read: list[Path]
) -> str | None:
    members = config.get("task")
    name = config.get("group") if isinstance(members, list) else members
    if not isinstance(name, str):
        return None  # not a task or group (a judge preset, a template read only through include)
    if name != benchmark and not name.startswith(f"{benchmark}_"):
        return f"task {name!r} does not start with the benchmark's name — name it {benchmark}_..."
    metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    found = metadata.get("version")
    if not _same_version(found, version):
        shown = "missing" if found is None else f"{found!r}"
        return (
            f"metadata.version is {shown}, the description's version is {version!r} — write `version: {version}` "
            "under metadata (bump both, and the task README's changelog, when a change can move a number)"
        )
    if isinstance(members, list):
        return None
    source = metadata.get("scifig_source")
    if source not in sources:
        known = ", ".join(sources)
        what = "metadata.scifig_source is missing" if source is None else f"metadata.scifig_source {source!r} "
        what += "" if source is None else "is not one of the description's sources"
        return f"{what} — write `scifig_source: <source>` under metadata (one of: {known})"
    if config.get("output_type", "generate_until") == "generate_until":
        until = (config.get("generation_kwargs") or {}).get("until")
        if until != list(END_OF_TURN_MARKERS):
            return (
                f"generation_kwargs.until is {until!r}: lmms-eval then stops each answer at a blank line — write "
                f"`{UNTIL}` under generation_kwargs"
            )
    for key, tag in _tags(config):
        problem = _hook_problem(tag, read)
        if problem is not None:
            return f"{key}: {problem}"
    return None


def _same_version(found: Any, version: str) -> bool:
    """Whether a YAML's ``metadata.version`` (a number when written unquoted) is ``version``."""
    if found is None:
        return False
    if str(found) == version:
        return True
    try:
        return float(found) == float(version)
    except (TypeError, ValueError):
        return False


def _tags(value: Any, key: str = "") -> Iterator[tuple[str, FunctionTag]]:
    """Every ``!function`` tag in a YAML's values, with the dotted key holding it."""
    if isinstance(value, FunctionTag):
        yield key, value
    elif isinstance(value, dict):
        for child, item in value.items():
            yield from _tags(item, f"{key}.{child}" if key else str(child))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _tags(item, f"{key}[{index}]")


def _hook_problem(tag: FunctionTag, read: list[Path]) -> str | None:
    """Why ``!function module.name`` would not load (lmms-eval: ``module.py`` beside the YAML, else the importable
    module), or None."""
    module, _, attribute = tag.name.rpartition(".")
    if not module:
        return f"!function {tag.name} names no module — write !function utils.{tag.name}"
    beside = tag.folder / f"{module.replace('.', '/')}.py"
    if beside.is_file():
        where = beside
    else:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return f"!function {tag.name}: no {module}.py beside the YAML and no importable module {module}"
        where = Path(spec.origin)
    read.append(where)
    if _defines_plainly(where, attribute):
        return None
    names = _top_level_names(where)
    if names is None or attribute in names:
        return None
    import difflib

    close = difflib.get_close_matches(attribute, sorted(names), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"!function {tag.name}: {where.name} defines no {attribute}{hint}"


def _defines_plainly(path: Path, name: str) -> bool:
    """Whether a line of ``path`` starting at column 0 defines or assigns ``name`` (the quick look; a hook bound any
    other way is looked for in the module's syntax tree, :func:`_top_level_names`)."""
    pattern = rf"^(?:(?:async\s+)?def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*(?::[^=\n]*)?="
    return re.search(pattern, _text(path), re.MULTILINE) is not None


@functools.cache
def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return ""


@functools.cache
def _top_level_names(path: Path) -> frozenset[str] | None:
    """The names a module's top level binds (generously: a name bound anywhere under a top-level ``if`` or ``try``
    counts); None when they cannot be known statically (a star import, a module ``__getattr__``, a syntax error:
    lmms-eval then says what is wrong itself)."""
    try:
        tree = ast.parse(_text(path), filename=str(path))
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        for child in ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]:
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(child.name)
            elif isinstance(child, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                names |= {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
            elif isinstance(child, ast.Import | ast.ImportFrom):
                for alias in child.names:
                    if alias.name == "*":
                        return None
                    names.add(alias.asname or alias.name.split(".")[0])
    return None if "__getattr__" in names else frozenset(names)
