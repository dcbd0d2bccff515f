"""``scifig export-upstream --bench NAME --out DIR``: a self-contained lmms-eval task folder for the lmms-eval
repository (``lmms_eval/tasks/<bench>/``), generated from this package's own files at export time.

What changes against the packaged folder, and nothing else:

* Code. ``utils.py`` is copied with its ``scifig_tasks.core`` imports pointing at ``<bench>_core/``, a vendored copy
  of exactly the core modules it needs (the import closure, found by parsing the sources). lmms-eval loads
  ``utils.py`` by file path (``!function utils.x``), which allows no relative imports, so ``utils.py`` puts its own
  folder on ``sys.path`` (as upstream tasks such as ``visualwebbench`` do) and imports ``<bench>_core`` absolutely.
  An import of anything else of this package (curation, the plugin) stops the export with the file and line.
  Judge presets ship inside ``<bench>_core/judges/``.
* Data. Upstream has no scifig plugin, so ``metadata.scifig_source`` is removed and the task loads its data with
  lmms-eval's own ``datasets.load_dataset(dataset_path, **dataset_kwargs)``: the Hub id (``dataset_path``) of a
  benchmark with a published copy, or — with ``--data`` or for a benchmark without one — ``dataset_path: parquet``
  with ``dataset_kwargs.data_files`` naming one parquet file per split. Rows are not validated as the packaged tasks
  do; images arrive decoded (the hooks accept both forms).
* README. The task README with its data section (the plugin's ``SCIFIG_*_DATA`` loading) replaced by the plain
  lmms-eval data set-up, and a note on the vendored code.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry
from scifig_tasks.core.resources import shipped_config_dir
from scifig_tasks.core.schema import BenchmarkSource

CORE_DIR = Path(__file__).resolve().parents[1] / "core"
CORE = "scifig_tasks.core"
FORBIDDEN_ROOTS = ("scifig_tasks", "curation", "scifig_model_configs", "scifig_finetune")
JUDGE_PRESETS = 'resources.files("scifig_model_configs")'
PLACEHOLDER_DIR = "/path/to/{bench}"


class ExportError(ValueError):
    """The folder cannot be made self-contained (names the file and line)."""


@dataclass
class Exported:
    folder: Path
    vendored: list[str]
    yamls: list[str]
    data_files: dict[str, dict[str, str]]
    """Source name -> split -> parquet path written into the YAMLs."""


def benchmarks() -> list[str]:
    """The benchmarks that can be exported: the registered ones (:mod:`scifig_tasks.core.registry`)."""
    return list(registry.benchmarks())


# ---- code ----------------------------------------------------------------------------------------------------------


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` for every import statement (top-level, local and ``TYPE_CHECKING`` ones)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise ExportError(f"{path}, line {node.lineno}: relative import cannot be vendored")
            found.append((node.lineno, node.module or "", [alias.name for alias in node.names]))
    return found


def _module_file(name: str) -> Path:
    """The source file of the core module ``name`` (dotted, relative to the core: ``grab.rules``)."""
    return CORE_DIR.joinpath(*name.split(".")).with_suffix(".py")


def _is_package(name: str) -> bool:
    return name == "" or (CORE_DIR.joinpath(*name.split(".")) / "__init__.py").is_file()


def core_closure(utils: Path) -> list[str]:
    """The ``scifig_tasks.core`` modules ``utils`` needs, transitively, as dotted names relative to the core
    (``grab.rules``; a sub-package's ``__init__`` as ``grab``); other imports of this package are errors."""
    needed: list[str] = []
    pending = [utils]
    while pending:
        path = pending.pop()
        for line, module, names in _imports(path):
            if module != CORE and not module.startswith(CORE + "."):
                if module.split(".")[0] in FORBIDDEN_ROOTS:
                    raise ExportError(f"{path}, line {line}: imports {module}, which is not part of {CORE}")
                continue
            relative = module[len(CORE) + 1 :]
            if _is_package(relative):  # `from scifig_tasks.core[.pkg] import module_or_attribute, ...`
                dotted = [f"{relative}.{name}".lstrip(".") for name in names]
                modules = [name for name in dotted if _is_package(name) or _module_file(name).is_file()]
                modules += [relative] if relative else []
            else:
                modules = [relative]
            modules += [name.rpartition(".")[0] for name in modules if "." in name]  # the sub-package, importable
            for name in modules:
                file = CORE_DIR / name / "__init__.py" if _is_package(name) else _module_file(name)
                if not file.is_file():
                    raise ExportError(f"{path}, line {line}: {CORE}.{name} is not a module file")
                if name not in needed:
                    needed.append(name)
                    pending.append(file)
    return sorted(needed)


_PATH_PROLOGUE = """\
import os as _os
import sys as _sys

# lmms-eval loads this file by path; its vendored core package ({package}/) sits next to it
_HERE = _os.path.dirname(_os.path.abspath(__file__))
if _HERE not in _sys.path:
    _sys.path.append(_HERE)

"""


def _rewrite(text: str, package: str) -> str:
    return re.sub(r"\bscifig_tasks\.core\b", package, text)


def _with_prologue(text: str, package: str, origin: Path) -> str:
    """Insert the ``sys.path`` lines before the first import of the vendored package."""
    match = re.search(rf"^(from {package}[ .]|import {package}\b)", text, re.MULTILINE)
    if match is None:
        raise ExportError(f"{origin}: no import of {CORE} found to vendor")
    return text[: match.start()] + _PATH_PROLOGUE.format(package=package) + text[match.start() :]


def _check_self_contained(folder: Path) -> None:
    for path in sorted(folder.rglob("*.py")):
        for line, module, _ in _imports(path):
            if module.split(".")[0] in FORBIDDEN_ROOTS:
                raise ExportError(f"{path}, line {line}: exported code still imports {module}")


def _copy_presets(dest: Path) -> None:
    """The judge presets (installed as ``scifig_model_configs/judges``; ``model_configs/judges`` in a checkout)."""
    presets = shipped_config_dir("judges")
    dest.mkdir()
    for entry in presets.iterdir():
        if entry.is_file() and entry.name.endswith((".yaml", ".md")):
            (dest / entry.name).write_bytes(entry.read_bytes())


def _vendor(source: Path, dest: Path, package: str) -> list[str]:
    modules = core_closure(source / "utils.py")
    core = dest / package
    core.mkdir(parents=True)
    (core / "__init__.py").write_text(
        f'"""Vendored copy of the scifig core modules this task needs ({", ".join(modules)})."""\n', encoding="utf-8"
    )
    for name in modules:
        source_file = CORE_DIR / name / "__init__.py" if _is_package(name) else _module_file(name)
        text = _rewrite(source_file.read_text(encoding="utf-8"), package)
        if name == "resources":  # where the judge finds its presets (shipped_config_dir)
            if JUDGE_PRESETS not in text:
                raise ExportError(f"{source_file}: presets lookup {JUDGE_PRESETS} not found")
            text = text.replace(JUDGE_PRESETS, f'resources.files("{package}")')
            _copy_presets(core / "judges")
        target = core / source_file.relative_to(CORE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for path in sorted(source.glob("*.py")):
        if path.name == "__init__.py":
            continue
        text = _rewrite(path.read_text(encoding="utf-8"), package)
        if package in text:
            text = _with_prologue(text, package, path)
        (dest / path.name).write_text(text, encoding="utf-8")
    _check_self_contained(dest)
    return modules


# ---- YAML / data ---------------------------------------------------------------------------------------------------

_SOURCE_LINE = re.compile(r"^[ \t]+scifig_source:[ \t]*(\S+)[ \t]*\n", re.MULTILINE)
_DATA_KEYS = re.compile(r"^(dataset_path|dataset_kwargs|dataset_name):.*\n(?:[ \t]+.*\n)*", re.MULTILINE)


def local_splits(source: BenchmarkSource, path: Path) -> dict[str, str]:
    """Split -> parquet file for local data: a parquet file (the default split) or a folder of ``<split>.parquet``
    (older split names accepted)."""
    path = path.expanduser().resolve()
    if path.is_file():
        return {source.default_split: str(path)}
    if not path.is_dir():
        raise FileNotFoundError(f"{source.name} data: no parquet file or folder at {path}")
    splits = {}
    for split in source.splits:
        for name in source.split_names(split):
            if (path / f"{name}.parquet").is_file():
                splits[split] = str(path / f"{name}.parquet")
                break
    if not splits:
        wanted = ", ".join(f"{split}.parquet" for split in source.splits)
        raise FileNotFoundError(f"{source.name} data: {path} holds none of {wanted}")
    return splits


def _data_block(splits: Mapping[str, str]) -> str:
    lines = ["dataset_path: parquet", "dataset_kwargs:", "  data_files:"]
    lines += [f"    {split}: {_yaml_str(file)}" for split, file in splits.items()]
    return "\n".join(lines) + "\n"


def _yaml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _export_yaml(text: str, origin: Path, data_files: dict[str, dict[str, str]], bench: str) -> str:
    from scifig_tasks.core import registry

    sources = _SOURCE_LINE.findall(text)
    if not sources:
        return text
    if len(sources) > 1:
        raise ExportError(f"{origin}: more than one scifig_source")
    (name,) = sources
    if name not in registry.sources():
        raise ExportError(f"{origin}: unknown scifig_source {name!r}")
    text = _SOURCE_LINE.sub("", text)
    text = re.sub(r"^metadata:[ \t]*\n(?=\S|\Z)", "", text, flags=re.MULTILINE)  # an emptied metadata block
    source = registry.sources()[name]
    splits = data_files.get(name)
    if splits is None and not source.hub_path:
        placeholder = PLACEHOLDER_DIR.format(bench=name)
        splits = {split: f"{placeholder}/{split}.parquet" for split in source.splits}
        data_files[name] = splits
    if splits is None:
        if not re.search(r"^dataset_path:", text, re.MULTILINE):
            pinned = f"dataset_kwargs:\n  revision: {source.revision}\n" if source.hub_revision({}) else ""
            text = f"dataset_path: {source.hub_path}\n{pinned}" + text
        return text
    text = _DATA_KEYS.sub("", text)
    return text.rstrip("\n") + "\n" + _data_block(splits)


# ---- README --------------------------------------------------------------------------------------------------------


def _readme(source: Path, bench: str, package: str, modules: list[str], data_files: dict[str, dict[str, str]]) -> str:
    from scifig_tasks.core import registry

    text = (
        _rewrite((source / "README.md").read_text(encoding="utf-8"), package)
        if (source / "README.md").exists()
        else f"# {bench}\n"
    )
    sections = re.split(r"(?m)^(?=## )", text)
    # the package README's data sections describe the plugin's loading (SCIFIG_*_DATA): replaced below
    kept = [part for part in sections if not re.match(r"## (Local data|Data)\b", part)]
    citation = [part for part in kept if part.startswith("## Citation")]
    body = [part for part in kept if not part.startswith("## Citation")]
    data = ["## Data\n", "The YAMLs load data with lmms-eval's own loader (`datasets.load_dataset`).\n"]
    for name, src in registry.sources().items():
        if not any(f"scifig_source: {name}" in path.read_text(encoding="utf-8") for path in _yaml_files(source)):
            continue
        if name in data_files:
            files = data_files[name]
            data.append(
                f"* {src.name}: local parquet files (`dataset_path: parquet`, `dataset_kwargs.data_files`), one per "
                f"split: " + ", ".join(f"`{split}`" for split in files) + ". Edit the paths in the YAML that sets "
                "them to your copy; every file needs the columns "
                + ", ".join(f"`{c.name}`" for c in src.columns)
                + ".\n"
            )
        else:
            data.append(
                f"* {src.name}: the Hugging Face dataset `{src.hub_path}` (`dataset_path`), splits "
                + ", ".join(f"`{split}`" for split in src.splits)
                + ". For a local copy with the same features, replace `dataset_path` with `dataset_path: parquet` and "
                "`dataset_kwargs: {data_files: {<split>: /path/to/<split>.parquet}}`.\n"
            )
    vendored = [
        "## Code layout\n",
        f"`utils.py` holds the lmms-eval hooks. The protocol code (prompts, answer extraction, metrics, judge client) "
        f"is in `{package}/` ({', '.join(f'`{m}.py`' for m in modules)}), imported absolutely after `utils.py` adds "
        "its own folder to `sys.path`, because lmms-eval loads `utils.py` by file path. The judge reads "
        "`SCIFIG_JUDGE_BASE_URL` / `SCIFIG_JUDGE_MODEL` / `SCIFIG_JUDGE_API_KEY` (falling back to `OPENAI_*`) or "
        f"`SCIFIG_JUDGE=<preset>` with the presets in `{package}/judges/`; `SCIFIG_JUDGE=off` disables it.\n",
    ]
    parts = [*body, "\n".join(data) + "\n", "\n".join(vendored) + "\n", *citation]
    return "".join(part if part.endswith("\n\n") else part.rstrip("\n") + "\n\n" for part in parts).rstrip() + "\n"


def _yaml_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.yaml"), *folder.glob("_*template_yaml")])


# ---- export --------------------------------------------------------------------------------------------------------


def export(bench: str, out: Path, data: Mapping[str, Path] | None = None) -> Exported:
    """Write ``out/<bench>/``; ``data`` maps a source name (e.g. ``grab``, ``plot_twist_chartqa``) to local data."""
    if bench not in benchmarks():
        raise ExportError(f"unknown benchmark {bench!r}; available: {', '.join(benchmarks())}")
    source = Path(registry.benchmark(bench).task_folder)
    dest = out / bench
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty")
    data_files: dict[str, dict[str, str]] = {}
    for name, path in (data or {}).items():
        if name not in registry.sources():
            raise ExportError(f"--data {name}=...: unknown data source (known: {', '.join(registry.sources())})")
        data_files[name] = local_splits(registry.sources()[name], Path(path))
    package = f"{bench}_core"
    dest.mkdir(parents=True, exist_ok=True)
    modules = _vendor(source, dest, package)
    yamls = []
    for path in _yaml_files(source):
        (dest / path.name).write_text(_export_yaml(path.read_text(encoding="utf-8"), path, data_files, bench))
        yamls.append(path.name)
    unused = set(data or {}) - set(data_files)
    if unused:
        raise ExportError(f"--data {', '.join(sorted(unused))}: no task of {bench} reads that source")
    (dest / "README.md").write_text(_readme(source, bench, package, modules, data_files), encoding="utf-8")
    return Exported(dest, modules, yamls, data_files)


def _data_args(values: Iterable[str], bench: str) -> dict[str, Path]:
    parsed = {}
    for value in values:
        name, sep, path = value.partition("=")
        parsed[name if sep else bench] = Path(path if sep else value)
    return parsed


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "export-upstream",
        help="write a self-contained lmms-eval task folder (lmms_eval/tasks/<bench>/) for upstream contribution",
        description=(
            "Write OUT/<bench>/: a task folder for the lmms-eval repository (lmms_eval/tasks/<bench>/) that works "
            "without scifig installed: the task files of this package with the scoring code they need copied in, "
            "and plain lmms-eval data loading (the Hub id, or local parquet files given with --data)."
        ),
        epilog=(
            "examples:\n"
            "  scifig export-upstream --bench grab --out upstream\n"
            "  scifig export-upstream --bench grab --out upstream --data grab-data/   "
            "# local data written by scifig curate grab"
        ),
    )
    parser.add_argument("--bench", required=True, help=f"one of: {', '.join(benchmarks())}")
    parser.add_argument("--out", type=Path, required=True, help="folder that receives <bench>/")
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="[SOURCE=]PATH",
        help="local parquet file or folder of <split>.parquet written into the YAMLs as data_files "
        "(SOURCE defaults to the benchmark, e.g. plot_twist_chartqa=chartqa.parquet)",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    exported = export(args.bench, args.out, _data_args(args.data, args.bench))
    print(f"exported {args.bench} to {exported.folder}")
    print(f"vendored core modules: {', '.join(exported.vendored)}")
    for name, splits in exported.data_files.items():
        for split, path in splits.items():
            print(f"data {name} {split}: {path}")
    return 0
