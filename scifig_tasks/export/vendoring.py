"""The code an export copies into a framework's source tree: the import closure of a benchmark's hooks, found by
parsing the sources, and where each module lands.

Two packages are followed: this package's core (``scifig_tasks.core``), vendored once into a folder every exported
benchmark shares (``lmms_eval/tasks/_task_utils/scifig/``, ``vlmeval/dataset/utils/scifig/``), and the package holding
the benchmark's task folder (``scifig_tasks.benchmarks.grab``; a plugin's, e.g. ``toy_bench``), vendored beside the
benchmark's own files. Only modules the hooks reach are copied (transitively); an import of anything else of the scifig
distribution stops the export naming the file and line. A shared module already in the tree must be byte-identical to
the one this export writes: the same scifig version exported every benchmark in it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from scifig_tasks.core.resources import shipped_config_dir

CORE_DIR = Path(__file__).resolve().parents[1] / "core"
BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"
CORE = "scifig_tasks.core"
FORBIDDEN_ROOTS = ("scifig_tasks", "curation", "scifig_model_configs", "scifig_finetune")
JUDGE_PRESETS = 'resources.files("scifig_model_configs")'
PRESET_SUFFIX = ".yml"
"""The judge presets' suffix in the tree: frameworks scan their task folders for ``*.yaml`` task files, and a preset
is no task."""


class ExportError(ValueError):
    """The folder cannot be made self-contained (names the file and line)."""


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


def module_of(path: Path, package: Package) -> str:
    """The dotted module name of ``path``, a file of ``package``."""
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
        for line, module, names in _imports(path, module_of(path, owner) if owner is not None else None):
            follow(f"{path}, line {line}", module, names)
    own = needed[plugin.name] if plugin is not None else []
    return sorted(needed[CORE]), sorted(own)


@dataclass(frozen=True)
class Placement:
    """Where vendored code lands in a framework's tree, as dotted package names: the shared core
    (``lmms_eval.tasks._task_utils.scifig``) and the benchmark's own package (``lmms_eval.tasks.grab.grab``)."""

    core: str
    own: str
    plugin: Package | None

    def rename(self, text: str) -> str:
        """``text`` with every name of this package's core and of the benchmark's package (in imports, strings and
        docstrings) replaced by its place in the tree."""
        if self.plugin is not None:
            text = re.sub(rf"(?<![\w./-]){re.escape(self.plugin.name)}(?![\w/-])", self.own, text)
        return re.sub(r"\bscifig_tasks\.core\b", self.core, text)


def folder_of(root: Path, dotted: str) -> Path:
    """The folder of package ``dotted`` under the tree's ``root``."""
    return root.joinpath(*dotted.split("."))


Formatter = Callable[[str, Path], str]
"""Python source -> the framework's formatting of it (:mod:`scifig_tasks.export.style`); the path names it in errors."""


@dataclass
class Written:
    """What :func:`vendor` wrote: the shared core modules (relative to their package, ``judge/client.py``), the
    benchmark's own files (relative to its package folder) and every file path."""

    core: list[str]
    own: list[str]
    files: list[Path]


def write_shared(path: Path, text: str) -> bool:
    """Write a file of the shared folder; one already there must hold the same text (the same scifig version
    exported it). Whether it was new."""
    if path.exists():
        if path.read_text(encoding="utf-8") != text:
            raise ExportError(
                f"{path} already exists with other content: the shared folder {path.parent} was written by another "
                "scifig version; export every benchmark with one version (remove the folder and export them again)"
            )
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def _is_package_data(path: Path) -> bool:
    """A data file a vendored module reads beside it (CharXiv's ``authors_text.json``): no code, docs or hidden file."""
    return path.is_file() and not path.name.startswith(".") and path.suffix not in (".py", ".pyc", ".md")


SHARED_INIT = (
    '"""scifig\'s shared scoring code (prompts, answer rules, judge client) for the benchmarks exported beside it."""\n'
)


def vendor(
    hooks: Iterable[Path],
    root: Path,
    placement: Placement,
    formatted: Formatter,
    imports: Iterable[tuple[str, str, list[str]]] = (),
) -> Written:
    """Copy into the tree at ``root`` the core modules and the benchmark package's modules that ``hooks`` (and the
    extra ``imports``, :func:`closure`) reach, renamed to their places and formatted; the judge presets ship with the
    core (``judges/*.yml``), found where the vendored ``resources`` looks."""
    core_names, own_names = closure(hooks, placement.plugin, imports)
    core_folder, files = folder_of(root, placement.core), []
    write_shared(core_folder / "__init__.py", formatted(SHARED_INIT, core_folder / "__init__.py"))
    for name in core_names:
        source = CORE_PACKAGE.file(name)
        text = placement.rename(source.read_text(encoding="utf-8"))
        if name == "resources":
            if JUDGE_PRESETS not in text:
                raise ExportError(f"{source}: presets lookup {JUDGE_PRESETS} not found")
            text = text.replace(JUDGE_PRESETS, f'resources.files("{placement.core}")')
            for preset in sorted(shipped_config_dir("judges").glob("*.yaml")):
                write_shared(core_folder / "judges" / f"{preset.stem}{PRESET_SUFFIX}", preset.read_text("utf-8"))
        target = core_folder / source.relative_to(CORE_DIR)
        if target.parent != core_folder:
            write_shared(
                target.parent / "__init__.py",
                formatted(
                    placement.rename((source.parent / "__init__.py").read_text(encoding="utf-8")),
                    target.parent / "__init__.py",
                ),
            )
        write_shared(target, formatted(text, target))
        files.append(target)
    own: list[str] = []
    plugin = placement.plugin
    if plugin is not None:
        own_folder = folder_of(root, placement.own)
        for name in own_names:
            source = plugin.file(name)
            target = own_folder / source.relative_to(plugin.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(formatted(placement.rename(source.read_text(encoding="utf-8")), target), "utf-8")
            files.append(target)
            own.append(source.relative_to(plugin.folder).as_posix())
        for folder in sorted({plugin.file(name).parent for name in own_names}):
            for data in sorted(path for path in folder.iterdir() if _is_package_data(path)):
                target = own_folder / data.relative_to(plugin.folder)
                target.write_bytes(data.read_bytes())
                own.append(data.relative_to(plugin.folder).as_posix())
    core_files = [CORE_PACKAGE.file(name).relative_to(CORE_DIR).as_posix() for name in core_names]
    return Written(core_files, sorted(own), files)


def check_self_contained(files: Iterable[Path], forbidden: tuple[str, ...]) -> None:
    """No exported file imports this distribution or the plugin (by name)."""
    for path in files:
        for line, module, _ in _imports(path, "exported"):
            if module.split(".")[0] in forbidden:
                raise ExportError(f"{path}, line {line}: exported code still imports {module}")
