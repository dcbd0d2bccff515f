"""``scifig export-upstream --bench NAME --out DIR``: a self-contained lmms-eval task folder for the lmms-eval
repository (``lmms_eval/tasks/<bench>/``), generated from this package's own files at export time.

Manual: docs/contributing-upstream.md, "What differs from the packaged task folder".
"""

from __future__ import annotations

import argparse
import ast
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry, task_yaml
from scifig_tasks.core.resources import shipped_config_dir
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.lmms_eval.plugin import scifig_source

CORE_DIR = Path(__file__).resolve().parents[1] / "core"
BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
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
    plugin: list[str] = field(default_factory=list)
    """The plugin's vendored files, relative to ``<bench>_core/`` (``toy_bench/rules.py``); empty for scifig's own."""
    questions: dict[str, str] = field(default_factory=dict)
    """Source -> its questions rule (``toy_bench.rules.questions``), for the sources whose rows hold several."""
    hooks: str = ""
    """The generated questions hook file (``<bench>_questions.py``); empty when no source has a questions rule."""


def benchmarks() -> list[str]:
    """The benchmarks that can be exported: the registered ones (:mod:`scifig_tasks.core.registry`)."""
    return list(registry.benchmarks())


# ---- code ----------------------------------------------------------------------------------------------------------


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` for every import statement (top-level, local and ``TYPE_CHECKING`` ones); a relative
    import is resolved against ``module`` (the file's dotted name: a plugin's module), else refused."""
    found = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                if module is None:
                    raise ExportError(f"{path}, line {node.lineno}: relative import cannot be vendored")
                parts = module.split(".")
                base = parts[: len(parts) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, *filter(None, [node.module])])
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return found


@dataclass(frozen=True)
class Package:
    """A package whose modules an export copies: its import name and its folder. Its modules are named relative to
    it (``grab.rules``; a sub-package's ``__init__`` by the sub-package, ``grab``; the package's own ``__init__``:
    ``""``)."""

    name: str
    folder: Path

    @property
    def short(self) -> str:
        """Its folder's name in the exported ``<bench>_core/`` (the last part of its import name)."""
        return self.name.rpartition(".")[2]

    def owns(self, module: str) -> bool:
        return module == self.name or module.startswith(self.name + ".")

    def is_package(self, relative: str) -> bool:
        return relative == "" or (self.folder.joinpath(*relative.split(".")) / "__init__.py").is_file()

    def file(self, relative: str) -> Path:
        """The source file of module ``relative`` (a package's ``__init__.py``)."""
        if self.is_package(relative):
            return self.folder.joinpath(*filter(None, relative.split("."))) / "__init__.py"
        return self.folder.joinpath(*relative.split(".")).with_suffix(".py")

    def modules(self, module: str, names: list[str]) -> list[str]:
        """The modules of this package that ``from <module> import <names>`` (or ``import <module>``) loads, relative
        to it, its enclosing packages' ``__init__`` included (the package's own only when it is not the core,
        whose ``__init__`` an export writes)."""
        relative = module[len(self.name) + 1 :]
        if self.is_package(relative):  # `from package[.sub] import module_or_attribute, ...`
            dotted = [f"{relative}.{name}".lstrip(".") for name in names]
            found = [name for name in dotted if self.is_package(name) or self.file(name).is_file()]
            found += [relative] if relative else []
        else:
            found = [relative]
        for name in list(found):  # every enclosing package is imported first
            while "." in name:
                name = name.rpartition(".")[0]
                found.append(name)
        if self.name != CORE:
            found.append("")
        return list(dict.fromkeys(found))


CORE_PACKAGE = Package(CORE, CORE_DIR)


def plugin_package(task_folder: Path) -> Package | None:
    """The top-level package holding a benchmark's task folder when it is not this package's (a plugin's:
    ``toy_bench`` for ``.../toy_bench/tasks``): the outermost of the folder's consecutive enclosing folders with an
    ``__init__.py``; for a built-in benchmark, its package (``scifig_tasks.benchmarks.grab``); None for a task folder
    in no package."""
    resolved = task_folder.resolve()
    if resolved.is_relative_to(BENCHMARKS_DIR) and resolved != BENCHMARKS_DIR:
        name = resolved.relative_to(BENCHMARKS_DIR).parts[0]
        return Package(f"scifig_tasks.benchmarks.{name}", BENCHMARKS_DIR / name)
    top = None
    for folder in [task_folder.resolve(), *task_folder.resolve().parents]:
        if (folder / "__init__.py").is_file():
            top = folder
        elif top is not None:
            break
    if top is None or top.name in FORBIDDEN_ROOTS:
        return None
    return Package(top.name, top)


def _module_of(path: Path, package: Package) -> str:
    """The dotted module name of ``path``, a file of ``package`` (for resolving its relative imports)."""
    parts = path.relative_to(package.folder).with_suffix("").parts
    return ".".join([package.name, *(parts[:-1] if parts[-1] == "__init__" else parts)])


def closure(
    files: Iterable[Path], plugin: Package | None = None, imports: Iterable[tuple[str, str, list[str]]] = ()
) -> tuple[list[str], list[str]]:
    """The ``scifig_tasks.core`` modules and the ``plugin``'s modules that ``files`` need, transitively, each as
    dotted names relative to its package (:class:`Package`); ``imports`` are more ``(where, module, names)`` imports
    to follow as if a file made them (``where`` names it in an error). An import of anything else of this package
    is an error naming the file and line."""
    packages = [CORE_PACKAGE, *([plugin] if plugin is not None else [])]
    needed: dict[str, list[str]] = {package.name: [] for package in packages}
    pending: list[tuple[Path, Package | None]] = [(path, None) for path in files]

    def follow(where: str, module: str, names: list[str]) -> None:
        package = next((package for package in packages if package.owns(module)), None)
        if package is None:
            if module.split(".")[0] in FORBIDDEN_ROOTS:
                raise ExportError(f"{where}: imports {module}, which is not part of {CORE}")
            return
        for name in package.modules(module, names):
            file = package.file(name)
            if not file.is_file():
                raise ExportError(f"{where}: {package.name}.{name} is not a module file")
            if name not in needed[package.name]:
                needed[package.name].append(name)
                pending.append((file, package))

    for where, module, names in imports:
        follow(where, module, names)
    while pending:
        path, owner = pending.pop()
        for line, module, names in _imports(path, _module_of(path, owner) if owner is not None else None):
            follow(f"{path}, line {line}", module, names)
    own = needed[plugin.name] if plugin is not None else []
    return sorted(needed[CORE]), sorted(own)


def core_closure(utils: Path) -> list[str]:
    """The ``scifig_tasks.core`` modules ``utils`` needs, transitively (:func:`closure`)."""
    return closure([utils])[0]


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


def _check_self_contained(folder: Path, forbidden: tuple[str, ...]) -> None:
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        for line, module, _ in _imports(path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)):
            if module.split(".")[0] in forbidden:
                raise ExportError(f"{path}, line {line}: exported code still imports {module}")


def _rename_plugin(text: str, plugin: Package | None, package: str) -> str:
    """The plugin package's name, wherever code names it, as its vendored place: ``<bench>_core.<plugin>``."""
    if plugin is None:
        return text
    return re.sub(rf"(?<![\w./-]){re.escape(plugin.name)}(?![\w/-])", f"{package}.{plugin.short}", text)


def _copy_presets(dest: Path) -> None:
    """The judge presets (installed as ``scifig_model_configs/judges``; ``model_configs/judges`` in a checkout)."""
    presets = shipped_config_dir("judges")
    dest.mkdir()
    for entry in presets.iterdir():
        if entry.is_file() and entry.name.endswith((".yaml", ".md")):
            (dest / entry.name).write_bytes(entry.read_bytes())


def _is_package_data(path: Path) -> bool:
    """A data file a vendored module reads beside it (CharXiv's ``authors_text.json``): no code, docs or hidden file."""
    return path.is_file() and not path.name.startswith(".") and path.suffix not in (".py", ".pyc", ".md")


def _vendor(
    source: Path, dest: Path, package: str, imports: Iterable[tuple[str, str, list[str]]] = ()
) -> tuple[list[str], list[str]]:
    """Copy the task folder's Python files and vendor what they import, and what ``imports`` name (the questions
    rules and the expansion: :func:`questions_hooks`): the core modules and the plugin's own
    (docs/contributing-upstream.md, "What differs from the packaged task folder"); the core modules and the plugin's
    files, as listed in the README."""
    plugin = plugin_package(source)
    hooks = [path for path in sorted(source.glob("*.py")) if path.name != "__init__.py"]
    modules, own = closure(hooks, plugin, imports)
    core = dest / package
    core.mkdir(parents=True)
    (core / "__init__.py").write_text(
        f'"""Vendored copy of the scifig core modules this task needs ({", ".join(modules)})."""\n', encoding="utf-8"
    )
    for name in modules:
        source_file = CORE_PACKAGE.file(name)
        text = _rewrite(source_file.read_text(encoding="utf-8"), package)
        if name == "resources":  # where the judge finds its presets (shipped_config_dir)
            if JUDGE_PRESETS not in text:
                raise ExportError(f"{source_file}: presets lookup {JUDGE_PRESETS} not found")
            text = text.replace(JUDGE_PRESETS, f'resources.files("{package}")')
            _copy_presets(core / "judges")
        target = core / source_file.relative_to(CORE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    files = []
    for name in own if plugin is not None else []:
        source_file = plugin.file(name)
        relative = Path(plugin.short) / source_file.relative_to(plugin.folder)
        target = core / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_rename_plugin(_rewrite(source_file.read_text(encoding="utf-8"), package), plugin, package))
        files.append(relative.as_posix())
    for folder in sorted({plugin.file(name).parent for name in own} if plugin is not None else set()):
        for data in sorted(path for path in folder.iterdir() if _is_package_data(path)):
            relative = Path(plugin.short) / data.relative_to(plugin.folder)
            (core / relative).write_bytes(data.read_bytes())
            files.append(relative.as_posix())
    for path in hooks:
        text = _rename_plugin(_rewrite(path.read_text(encoding="utf-8"), package), plugin, package)
        if package in text:
            text = _with_prologue(text, package, path)
        (dest / path.name).write_text(text, encoding="utf-8")
    return modules, sorted(files)


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


# ---- several questions per row ------------------------------------------------------------------------------------

EXPAND = "expand_questions"
"""The function turning checked rows into their question documents (:mod:`scifig_tasks.core.row_questions`)."""
EXPANSION = "row_questions"
"""Its module, vendored as any core module the hooks reach (``<bench>_core/row_questions.py``)."""
HOOKS_FILE = "{bench}_questions"
"""The generated hook module beside the YAMLs (``<bench>_questions.py``)."""


@dataclass(frozen=True)
class QuestionsRule:
    """A data source whose rows hold several questions: its key and where its ``questions`` rule is defined (the
    module's dotted name, relative to the package that owns it, and the function's name)."""

    source: str
    package: Package
    module: str
    name: str

    @property
    def defined_in(self) -> str:
        """The rule's module as the package names it (``toy_bench.rules``)."""
        return ".".join([self.package.name, *filter(None, [self.module])])

    def vendored(self, package: str) -> str:
        """The rule's module in the exported folder: ``<bench>_core[.<plugin>].<module>``."""
        inside = [] if self.package is CORE_PACKAGE else [self.package.short]
        return ".".join([package, *inside, *filter(None, [self.module])])


def _source_of(config: Mapping[str, Any]) -> str | None:
    """A resolved task YAML's ``metadata.scifig_source`` (``None`` for a group or a YAML naming none)."""
    return None if isinstance(config.get("task"), list) else scifig_source(dict(config))


def questions_rules(folder: Path, plugin: Package | None) -> dict[str, QuestionsRule]:
    """The sources with a ``questions`` rule that the folder's YAMLs read (through their ``include`` chains), each
    rule located in the core or in the ``plugin``; a rule defined elsewhere, or not a module-level function, cannot
    be vendored and is an error naming the source and what to do."""
    sources = registry.sources()
    found: dict[str, QuestionsRule] = {}
    for path in _yaml_files(folder):
        name = _source_of(task_yaml.resolved(path))
        source = sources.get(name) if name is not None else None
        if name is None or source is None or source.questions is None or name in found:
            continue
        rule = source.questions
        module, qualname = getattr(rule, "__module__", None), getattr(rule, "__qualname__", "")
        if not isinstance(module, str) or not qualname.isidentifier():
            raise ExportError(
                f"source {name}: its questions rule {rule!r} is not a module-level function; define it with `def` "
                "at the top level of a module of the package holding the task folder"
            )
        owner = next((package for package in (CORE_PACKAGE, plugin) if package and package.owns(module)), None)
        if owner is None or (owner is CORE_PACKAGE and module == CORE):
            where = plugin.name if plugin is not None else CORE
            raise ExportError(
                f"source {name}: its questions rule {module}.{qualname} is outside {where}, so the export cannot "
                f"vendor it; move it into a module of {where}"
            )
        found[name] = QuestionsRule(name, owner, module[len(owner.name) + 1 :], qualname)
    return found


def _docstring(text: str) -> str:
    """A module docstring wrapped at 120 columns."""
    return '"""' + textwrap.fill(text, 114) + '"""'


def _hook_name(source: str, tag: task_yaml.FunctionTag | None) -> str:
    """The generated hook of ``source``'s rows, chained before a YAML's own ``process_docs`` (``tag``)."""
    return source if tag is None else "__".join([source, *tag.name.split(".")])


_HOOK_LOADER = (
    "def _hook(module: str, name: str) -> Any:\n"
    '    """A task\'s own hook, loaded as lmms-eval loads `!function module.name` (`module.py` beside it)."""\n'
    '    spec = importlib.util.spec_from_file_location(module, _os.path.join(_HERE, f"{module}.py"))\n'
    "    loaded = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(loaded)\n"
    "    return getattr(loaded, name)\n"
)


def _hooks_text(package: str, rules: Mapping[str, QuestionsRule], chains: Mapping[str, tuple[str, str]]) -> str:
    """The generated hook module: per source, its rows' question documents; per chain, those documents through a
    YAML's own ``process_docs`` (``name -> (source, "module.function")``)."""
    doc = _docstring(
        "Each source row's question documents, made as the packaged tasks make them: the source's `questions` rule "
        f"through `{package}/{EXPANSION}.py`, before a task's own `process_docs` (chained below). lmms-eval gives "
        "each hook one split as a `datasets.Dataset` and takes the documents back as one."
    )
    rule_imports = "".join(
        f"from {rule.vendored(package)} import {rule.name} as _{source}_questions\n" for source, rule in rules.items()
    )
    parts = [
        f"{doc}\n\nfrom __future__ import annotations\n\nimport importlib.util\nfrom typing import Any\n\n"
        f"{_PATH_PROLOGUE.format(package=package)}from {package}.{EXPANSION} import {EXPAND}\n{rule_imports}",
        _HOOK_LOADER,
    ]
    for source in rules:
        parts.append(
            f"def {source}(dataset: Any) -> Any:\n"
            f'    """The question documents of each row of source `{source}`, in row order."""\n'
            f'    return {EXPAND}(dataset, _{source}_questions, "{source}")\n'
        )
    for name, (source, hook) in chains.items():
        module, _, function = hook.rpartition(".")
        parts.append(
            f"def {name}(dataset: Any) -> Any:\n"
            f'    """The question documents of source `{source}`, then `{hook}`."""\n'
            f'    return _hook("{module}", "{function}")({source}(dataset))\n'
        )
    return "\n\n".join(parts)


_PROCESS_DOCS = re.compile(r"^process_docs:.*\n(?:[ \t]+.*\n)*", re.MULTILINE)


def _with_questions(
    text: str, origin: Path, rules: Mapping[str, QuestionsRule], hooks: str
) -> tuple[str, dict[str, tuple[str, str]]]:
    """A YAML reading a source with a questions rule gets its ``process_docs`` from the generated hooks: the source's
    expansion, chained before the ``process_docs`` it has through its ``include`` chain. The YAML's text, and the
    chain it needs (``hook name -> (source, "module.function")``; empty when there is none to chain)."""
    config = task_yaml.resolved(origin)
    source = _source_of(config)
    if source is None or source not in rules:
        return text, {}
    own = config.get("process_docs")
    if own is not None and not (isinstance(own, task_yaml.FunctionTag) and own.folder == origin.parent):
        raise ExportError(f"{origin}: process_docs must be a `!function module.name` of a file beside the YAML")
    name = _hook_name(source, own)
    text = _PROCESS_DOCS.sub("", text).rstrip("\n") + f"\nprocess_docs: !function {hooks}.{name}\n"
    return text, ({name: (source, own.name)} if own is not None else {})


# ---- scoring hooks bound to their task's options -----------------------------------------------------------------

SCORING_FILE = "{bench}_scoring"
"""The generated module beside the YAMLs holding each task's bound scoring hook (``<bench>_scoring.py``)."""
_PROCESS_RESULTS = re.compile(r"^process_results:.*\n", re.MULTILINE)


def bound_scoring(folder: Path) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """YAML file name -> (task, "module.function", options) for each task whose scoring hook reads its task's
    options (:func:`scifig_tasks.core.task_options.reads_task_options`): stock lmms-eval passes ``process_results`` no
    options, so the exported folder names a hook bound to them, as scifig binds them when it loads the task."""
    from scifig_tasks.core import task_files
    from scifig_tasks.core.task_options import bound, for_task, reads_options

    tasks = task_files.scifig_tasks()
    found = {}
    for path in _yaml_files(folder):
        config = task_yaml.resolved(path)
        task, hook = config.get("task"), config.get("process_results")
        if not isinstance(task, str) or task not in tasks or not isinstance(hook, task_yaml.FunctionTag):
            continue
        function = hook.resolve()
        if reads_options(function):
            found[path.name] = (task, hook.name, bound(for_task(function, tasks[task].options)))
    return found


def _scoring_text(package: str, scoring: Mapping[str, tuple[str, str, dict[str, Any]]]) -> str:
    """The generated module: per task, its scoring hook bound to its options."""
    doc = _docstring(
        "Each task's scoring hook with the options its YAML declares (lmms-eval hands `process_results` no options): "
        "one hook per task, named after it."
    )
    parts = [
        f"{doc}\n\nfrom __future__ import annotations\n\nimport importlib.util\nfrom typing import Any\n\n"
        f"{_PATH_PROLOGUE.format(package=package)}from {package}.task_options import bind\n",
        _HOOK_LOADER,
    ]
    for task, hook, options in scoring.values():
        module, _, function = hook.rpartition(".")
        arguments = "".join(f", {name}={value!r}" for name, value in options.items())
        parts.append(f'{task} = bind(_hook("{module}", "{function}"){arguments})\n')
    return "\n\n".join(parts)


def _with_scoring(text: str, name: str, scoring: Mapping[str, tuple[str, str, dict[str, Any]]], module: str) -> str:
    """A task YAML whose scoring hook reads its options names its bound hook in the generated module instead."""
    if name not in scoring:
        return text
    task = scoring[name][0]
    return _PROCESS_RESULTS.sub("", text).rstrip("\n") + f"\nprocess_results: !function {module}.{task}\n"


# ---- README --------------------------------------------------------------------------------------------------------


def _readme(
    source: Path,
    bench: str,
    package: str,
    modules: list[str],
    data_files: dict[str, dict[str, str]],
    plugin: list[str],
    hooks: str = "",
) -> str:
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
    files = [f"`{CORE_PACKAGE.file(m).relative_to(CORE_DIR).as_posix()}`" for m in modules]
    files += [f"`{name}`" for name in plugin]
    vendored = [
        "## Code layout\n",
        f"`utils.py` holds the lmms-eval hooks. The protocol code (prompts, answer extraction, metrics, judge client) "
        f"is in `{package}/` ({', '.join(files)}), imported absolutely after `utils.py` adds "
        "its own folder to `sys.path`, because lmms-eval loads `utils.py` by file path. The judge reads "
        "`SCIFIG_JUDGE_BASE_URL` / `SCIFIG_JUDGE_MODEL` / `SCIFIG_JUDGE_API_KEY` (falling back to `OPENAI_*`) or "
        f"`SCIFIG_JUDGE=<preset>` with the presets in `{package}/judges/`; `SCIFIG_JUDGE=off` disables it.\n",
    ]
    if hooks:
        vendored.append(
            f"A source row holds several questions: each task's `process_docs` is a hook of `{hooks}.py`, which makes "
            f"every row's question documents with the source's `questions` rule (`{package}/{EXPANSION}.py`), as the "
            "packaged tasks do, then runs the task's own `process_docs`, if it has one.\n"
        )
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
    package, owner = f"{bench}_core", plugin_package(source)
    rules = questions_rules(source, owner)
    hooks = HOOKS_FILE.format(bench=bench)
    if rules and (source / f"{hooks}.py").exists():
        raise ExportError(f"{source / f'{hooks}.py'}: the export writes its questions hooks there; rename that file")
    imports: list[tuple[str, str, list[str]]] = (
        [("questions per row", f"{CORE}.{EXPANSION}", [EXPAND])] if rules else []
    )
    for name, rule in rules.items():
        imports.append((f"source {name}'s questions rule", rule.defined_in, [rule.name]))
    dest.mkdir(parents=True, exist_ok=True)
    modules, plugin = _vendor(source, dest, package, imports)
    yamls = []
    chains: dict[str, tuple[str, str]] = {}
    scoring, scoring_module = bound_scoring(source), SCORING_FILE.format(bench=bench)
    if scoring and (source / f"{scoring_module}.py").exists():
        raise ExportError(f"{source / f'{scoring_module}.py'}: the export writes its scoring hooks there; rename it")
    for path in _yaml_files(source):
        text = _export_yaml(path.read_text(encoding="utf-8"), path, data_files, bench)
        text, chained = _with_questions(text, path, rules, hooks)
        text = _with_scoring(text, path.name, scoring, scoring_module)
        chains |= chained
        (dest / path.name).write_text(text, encoding="utf-8")
        yamls.append(path.name)
    unused = set(data or {}) - set(data_files)
    if unused:
        raise ExportError(f"--data {', '.join(sorted(unused))}: no task of {bench} reads that source")
    if rules:
        (dest / f"{hooks}.py").write_text(_hooks_text(package, rules, chains), encoding="utf-8")
    if scoring:
        (dest / f"{scoring_module}.py").write_text(_scoring_text(package, scoring), encoding="utf-8")
    _check_self_contained(dest, FORBIDDEN_ROOTS + ((owner.name,) if owner is not None else ()))
    (dest / "README.md").write_text(
        _readme(source, bench, package, modules, data_files, plugin, hooks if rules else ""), encoding="utf-8"
    )
    questions = {name: f"{rule.defined_in}.{rule.name}" for name, rule in rules.items()}
    return Exported(dest, modules, yamls, data_files, plugin, questions, f"{hooks}.py" if rules else "")


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
    if exported.plugin:
        print(f"vendored plugin files: {', '.join(exported.plugin)}")
    for name, rule in exported.questions.items():
        print(f"questions per row of {name}: {rule}, applied by {exported.hooks} before each task's own process_docs")
    for name, splits in exported.data_files.items():
        for split, path in splits.items():
            print(f"data {name} {split}: {path}")
    return 0
