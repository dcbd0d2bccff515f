"""A registered benchmark's VLMEvalKit datasets written into a VLMEvalKit source tree, as VLMEvalKit holds its own
(``scifig export-upstream --framework vlmeval``; docs/contributing-upstream-vlmeval.md):

* ``vlmeval/dataset/scifig_<bench>.py``: the benchmark's dataset classes (subclasses of VLMEvalKit's
  ``ImageBaseDataset`` through the exported base), each with ``TYPE``, ``DATASET_URL`` / ``DATASET_MD5`` keyed by
  dataset name, ``build_prompt`` and ``evaluate``. A benchmark with classes of its own (its description's ``vlmeval``
  block) gets those classes, their source copied from its package's ``vlmeval.py``; a benchmark without gets one
  class serving each of its tasks and groups through the tasks' own scoring hooks (the hooks module vendored, the
  prompt and the scored document written into its TSV: :func:`write_tsv`).
* ``vlmeval/dataset/utils/scifig/``: shared by every exported benchmark, written once (a second export must find the
  same bytes): the ``scifig_tasks.core`` modules the classes reach, the base classes (:mod:`scifig_tasks.vlmeval.base`,
  the one VLMEvalKit plumbing scifig's own classes subclass too) and the parts of scifig's VLMEvalKit adapter they use
  (TSV layouts, the judge VLMEvalKit's options choose, prediction files read as exact text). Nothing else of the
  adapter is copied: it finds datasets through scifig's registry and task YAMLs, which an exported tree does not
  hold.
* ``vlmeval/dataset/utils/scifig_<bench>/``: the modules of the benchmark's package the classes reach.

Every file is formatted as VLMEvalKit's pre-commit leaves it (:data:`scifig_tasks.export.style.VLMEVAL`). The export
does not edit ``vlmeval/dataset/__init__.py``: registering a class there takes an import in its sorted import block
and the class in the hand-kept ``IMAGE_DATASET`` list, a change to a shared file that belongs in the pull request's
own diff; :attr:`VlmevalExport.registration` gives the two lines.

TSV files: VLMEvalKit's ``prepare_tsv`` uses ``LMUDataRoot()/<name>.tsv`` when it exists and its MD5 is the one
``DATASET_MD5`` records (or none is recorded), else downloads ``DATASET_URL[name]``. The export records the MD5 of each
TSV found with ``data`` and writes a placeholder URL (:data:`PLACEHOLDER_URL`) for every dataset: the TSVs are
uploaded where VLMEvalKit's maintainers host them, and the URL set then.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry, task_files, task_yaml
from scifig_tasks.core.benchmark import Benchmark
from scifig_tasks.core.judge.required import Requirement
from scifig_tasks.export.style import VLMEVAL, replace_lines
from scifig_tasks.export.vendoring import (
    FORBIDDEN_ROOTS,
    ExportError,
    Package,
    Placement,
    check_self_contained,
    folder_of,
    module_of,
    plugin_package,
    vendor,
    write_shared,
)

SHARED = "vlmeval.dataset.utils.scifig"
"""Where the shared code lands (in the package VLMEvalKit's own datasets keep their helpers in)."""
DATASET_PACKAGE = "vlmeval.dataset"
PLACEHOLDER_URL = "https://scifig-tsv-not-uploaded-yet.invalid/{name}.tsv"
"""``DATASET_URL`` until the TSV is hosted: a reserved top-level domain (``.invalid``, RFC 2606) that never resolves,
so a missing TSV fails at download naming the file, never fetches anything."""

ADAPTER = Path(__file__).resolve().parents[1] / "vlmeval"
ADAPTER_MODULE_BASE = "scifig_tasks.vlmeval.base"
"""The VLMEvalKit plumbing scifig's own classes are written on, copied whole as the exported classes' base."""
ADAPTER_MODULES = {
    "scifig_tasks.vlmeval.tsv_layout": ADAPTER / "tsv_layout.py",
    "scifig_tasks.vlmeval.judging": ADAPTER / "judging.py",
    "scifig_tasks.vlmeval.prediction_tables": ADAPTER / "prediction_tables.py",
    ADAPTER_MODULE_BASE: ADAPTER / "base.py",
}
"""The modules outside ``scifig_tasks.core`` the exported classes use -> their source; each lands in the shared
folder under :data:`SHARED_NAMES`."""
SHARED_NAMES = {
    "scifig_tasks.vlmeval.tsv_layout": "tsv_layout",
    "scifig_tasks.vlmeval.judging": "vlmeval_judging",
    "scifig_tasks.vlmeval.prediction_tables": "prediction_tables",
    ADAPTER_MODULE_BASE: "dataset",
}
DATASETS_MODULE = "scifig_tasks.vlmeval.datasets"
"""The base a benchmark's own classes are written on (the plumbing of :data:`ADAPTER_MODULE_BASE` over scifig's
registry and task YAMLs); the exported base stands in for it."""
TASK_TSV_COLUMNS = ("segments", "document")
"""Columns a hook-served dataset's exported TSV adds to scifig's (:func:`write_tsv`)."""


@dataclass
class VlmevalExport:
    """What :func:`export_vlmeval` wrote."""

    bench: str
    class_file: Path
    classes: tuple[str, ...]
    datasets: tuple[str, ...]
    shared: list[str]
    """The shared folder's modules (relative to it), every one this benchmark needs (written now or already there)."""
    own: list[str]
    """The benchmark package's files copied (relative to its package)."""
    md5: dict[str, str] = field(default_factory=dict)
    """Dataset -> the MD5 of its TSV found with ``data`` (recorded in ``DATASET_MD5``)."""
    files: list[Path] = field(default_factory=list)

    @property
    def registration(self) -> list[str]:
        """The lines that register the classes in ``vlmeval/dataset/__init__.py``: the import (into its import block)
        and the classes added to ``IMAGE_DATASET``."""
        module = self.class_file.stem
        names = ", ".join(self.classes)
        return [f"from .{module} import {names}", f"IMAGE_DATASET += [{names}]"]

    def lines(self) -> list[str]:
        """What the command prints."""
        without = [name for name in self.datasets if name not in self.md5]
        found = [
            f"VLMEvalKit datasets of {self.bench}: {', '.join(self.datasets)}",
            f"classes: {self.class_file} ({', '.join(self.classes)})",
            f"shared code: {len(self.shared)} modules in vlmeval/dataset/utils/scifig/; "
            f"{self.bench}'s own: {', '.join(self.own) or 'none'}",
        ]
        found += [f"TSV {name}: md5 {digest}" for name, digest in self.md5.items()]
        if without:
            found.append(f"no TSV given (--data) for {', '.join(without)}: DATASET_MD5 has no entry for them")
        found.append(
            f"DATASET_URL is a placeholder ({PLACEHOLDER_URL.format(name='<name>')}): host each TSV and set its URL"
        )
        found.append("register the classes in vlmeval/dataset/__init__.py (the import among its imports):")
        found += [f"  {line}" for line in self.registration]
        return found


@dataclass(frozen=True)
class _Class:
    """One exported dataset class: its name and the names it serves."""

    name: str
    names: tuple[str, ...]


def own_package(bench: str) -> str:
    """Where benchmark ``bench``'s own modules land."""
    return f"{SHARED}_{bench}"


def class_module(bench: str) -> str:
    """The module of ``bench``'s dataset classes (``scifig_`` in front: VLMEvalKit has datasets of its own named
    after some of the same papers, ``charxiv.py`` among them)."""
    return f"{DATASET_PACKAGE}.scifig_{bench}"


# ---- which datasets -------------------------------------------------------------------------------------------------


def datasets_of(bench: str) -> tuple[str, ...]:
    """The VLMEvalKit datasets exported for ``bench``: those its description's ``vlmeval`` block names (served by its
    own classes), else every task and group of its task folder (served through the tasks' hooks)."""
    described = registry.benchmark(bench)
    if described.vlmeval is not None:
        return tuple(dataset.name for dataset in described.vlmeval.datasets)
    return tuple(name for name, info in task_files.scifig_tasks().items() if info.benchmark == bench)


def _judge_required(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Of ``names``, those scored only with the judge -> the datasets asking the same questions without requiring
    one (:mod:`scifig_tasks.core.judge.required`)."""
    requires = Requirement(None)
    return {
        name: tuple(twin for twin in [requires.instead(name)] if twin is not None)
        for name in dict.fromkeys(names)
        if requires(name)
    }


# ---- TSV files ------------------------------------------------------------------------------------------------------


def write_tsv(name: str, directory: Path) -> Path:
    """``<directory>/<name>.tsv`` as the exported class of dataset ``name`` reads it: scifig's own TSV
    (:func:`scifig_tasks.vlmeval.tsv.write_tsv`, ``scifig export-tsv``) for a dataset its benchmark's classes serve; for
    one served through its task's hooks, scifig's TSV with each question's prompt layout (``segments``) and the
    document its scoring hook reads (``document``, JSON, without images) added, since the exported tree has neither
    the data source nor the task's prompt hooks."""
    from scifig_tasks.vlmeval import task_hooks, tsv

    found = tsv.spec(name)
    if not isinstance(found, tsv.TaskTsv):
        return tsv.write_tsv(name, directory)[0]
    directory.mkdir(parents=True, exist_ok=True)
    table = tsv.table(found)
    columns = [*table.columns, *TASK_TSV_COLUMNS]
    path = directory / f"{name}.tsv"
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write(tsv.tsv_line(columns))
        for row in table.rows:
            task, position = row["task"], int(row["doc"])
            segments, _ = task_hooks.prompt(task, position)
            document = json.dumps(dict(task_hooks.scoring_document(task, position)), ensure_ascii=False)
            row = {**row, "segments": json.dumps(segments, ensure_ascii=False), "document": document}
            out.write(tsv.tsv_line([row.get(column) for column in columns]))
    return path


def _md5(path: Path) -> str:
    """The file's MD5, as VLMEvalKit's ``vlmeval.smp.md5`` computes it."""
    digest = hashlib.md5()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _given_tsvs(data: Path | None, names: tuple[str, ...], columns: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """Dataset -> MD5 of its TSV in ``data`` (a folder of ``<name>.tsv`` files, or one such file), each checked to
    hold the columns its class reads."""
    if data is None:
        return {}
    if data.is_file():
        if data.suffix != ".tsv" or data.stem not in names:
            raise ExportError(
                f"{data}: --data takes <dataset>.tsv for a dataset of this benchmark ({', '.join(names)})"
            )
        files = {data.stem: data}
    elif data.is_dir():
        files = {name: data / f"{name}.tsv" for name in names if (data / f"{name}.tsv").is_file()}
        if not files:
            raise ExportError(f"{data}: no <dataset>.tsv for any of {', '.join(names)} (scifig export-tsv writes them)")
    else:
        raise ExportError(f"{data}: --data names no file or folder")
    for name, path in files.items():
        with path.open(encoding="utf-8") as handle:
            header = handle.readline().rstrip("\r\n").split("\t")
        lacking = [column for column in columns[name] if column not in header]
        if lacking:
            raise ExportError(
                f"{path}: no column {', '.join(lacking)}, which the exported {name} reads: write it with "
                "scifig_tasks.export.vlmeval_datasets.write_tsv"
            )
    return {name: _md5(path) for name, path in files.items()}


# ---- source transformation ------------------------------------------------------------------------------------------


def _shared_module(module: str) -> str:
    return f"{SHARED}.{SHARED_NAMES[module]}"


def _rename_adapter(text: str) -> str:
    """Every name of the vendored adapter modules replaced by its place in the shared folder."""
    for module in sorted(SHARED_NAMES, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(module)}\b", _shared_module(module), text)
    return text


def _scifig_imports(
    path: Path, text: str | None = None, copied: frozenset[str] = frozenset(), plugin: Package | None = None
) -> list[tuple[str, str, list[str]]]:
    """``(where, module, names)`` of each import of ``scifig_tasks`` or of the benchmark's ``plugin`` package in a
    file (for :func:`closure`), leaving out the adapter modules that are vendored whole and the ``copied`` modules
    (dotted names) this export writes itself."""
    tree = ast.parse(text if text is not None else path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [(node.module, [alias.name for alias in node.names])]
        elif isinstance(node, ast.Import):
            modules = [(alias.name, []) for alias in node.names]
        else:
            continue
        for module, names in modules:
            names = [name for name in names if f"{module}.{name}" not in copied]
            if module in copied or (node.names and not names and isinstance(node, ast.ImportFrom)):
                continue
            ours = module.split(".")[0] == "scifig_tasks" or (plugin is not None and plugin.owns(module))
            if ours and module not in ADAPTER_MODULES and module != DATASETS_MODULE:
                found.append((f"{path}, line {node.lineno}", module, names))
    return found


def _literal(value: Any) -> str:
    """A Python literal of ``value`` (options: strings, numbers, booleans, None, lists and mappings of them)."""
    text = repr(value)
    if ast.literal_eval(text) != value:
        raise ExportError(f"{value!r} cannot be written as a Python literal")
    return text


def _class_attributes(
    names: tuple[str, ...], md5: Mapping[str, str], options: Mapping[str, Any], required: Mapping[str, Any]
) -> list[str]:
    """The class body lines naming the datasets, their TSVs and their options."""
    urls = {name: PLACEHOLDER_URL.format(name=name) for name in names}
    return [
        f"NAMES = {_literal(names)}",
        f"DATASET_URL = {_literal(urls)}",
        f"DATASET_MD5 = {_literal({name: md5[name] for name in names if name in md5})}",
        f"OPTIONS = {_literal({name: options[name] for name in names})}",
        f"JUDGE_REQUIRED = {_literal({name: required[name] for name in names if name in required})}",
    ]


def _described_classes(described: Benchmark, md5: Mapping[str, str]) -> tuple[str, list[_Class], list[Path]]:
    """The class file of a benchmark with classes of its own: its ``vlmeval.py`` with the base replaced by the exported
    one and each class's ``NAMES`` written out with the TSVs, options and TSV layout it needs; and the files of its
    package that file needs besides (its TSV layouts)."""
    assert described.vlmeval is not None
    block = described.vlmeval
    references = list(block.classes)
    modules = {reference.partition(":")[0] for reference in references}
    if len(modules) != 1:
        raise ExportError(f"{described.name}: its classes live in several modules ({', '.join(sorted(modules))})")
    module = modules.pop()
    source = _module_file(module)
    text = source.read_text(encoding="utf-8")
    loaded = {reference.partition(":")[2]: registry.load_reference(reference) for reference in references}
    sources_of = {dataset.name: dataset.source for dataset in block.datasets}
    options = {name: task_files.options(name) for name in sources_of}
    required = _judge_required(sources_of)
    layouts: dict[str, str] = {}
    edits: list[tuple[int, int, str]] = []
    classes: list[_Class] = []
    tree = ast.parse(text, filename=str(source))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == DATASETS_MODULE:
            kept = [alias.name for alias in node.names if alias.name != "served"]
            lacking = [name for name in kept if name not in _base_names()]
            if lacking:
                raise ExportError(
                    f"{source}, line {node.lineno}: imports {', '.join(lacking)} of {DATASETS_MODULE}, which the "
                    f"exported base ({ADAPTER_MODULES[ADAPTER_MODULE_BASE].name}) does not define"
                )
            assert node.end_lineno is not None
            base = f"from {_shared_module(ADAPTER_MODULE_BASE)} import {', '.join(kept)}\n"
            edits.append((node.lineno, node.end_lineno, base))
        if isinstance(node, ast.ClassDef) and node.name in loaded:
            cls = loaded[node.name]
            names = tuple(cls.NAMES)
            formats = {block.tsv_formats[sources_of[name]] for name in names}
            if len(formats) != 1:
                raise ExportError(f"{source}: {node.name} serves datasets of several TSV layouts")
            layout = formats.pop()
            layout_module, _, layout_name = layout.partition(":")
            alias = f"{layout_module.rpartition('.')[2]}"
            layouts[layout_module] = alias
            statement = next(
                (
                    item
                    for item in node.body
                    if isinstance(item, ast.Assign)
                    and any(isinstance(target, ast.Name) and target.id == "NAMES" for target in item.targets)
                ),
                None,
            )
            if statement is None or statement.end_lineno is None:
                raise ExportError(f"{source}: class {node.name} does not set NAMES")
            indent = " " * statement.col_offset
            body = [*_class_attributes(names, md5, options, required), f"TSV_LAYOUT = {alias}.{layout_name}"]
            body.append(f"VERSION = {_literal(described.version)}")
            edits.append((statement.lineno, statement.end_lineno, "".join(f"{indent}{line}\n" for line in body)))
            classes.append(_Class(node.name, names))
    missing = sorted(set(loaded) - {found.name for found in classes})
    if missing:
        raise ExportError(f"{source}: no class {', '.join(missing)} defined at the module's top level")
    text = replace_lines(text, edits)
    layout_imports = "".join(
        f"from {module.rpartition('.')[0]} import {alias}\n" for module, alias in sorted(layouts.items())
    )
    text = _after_imports(text, layout_imports)
    layout_files = [_module_file(module) for module in sorted(layouts)]
    return text, classes, layout_files


def _base_names() -> set[str]:
    """The top-level names the exported base module defines."""
    tree = ast.parse(ADAPTER_MODULES[ADAPTER_MODULE_BASE].read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {target.id for target in targets if isinstance(target, ast.Name)}
    return found


def _module_file(module: str) -> Path:
    """The source file of an importable module of this package (or a plugin's)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ExportError(f"{module}: no such module")
    return Path(spec.origin)


def _after_imports(text: str, lines: str) -> str:
    """``text`` with ``lines`` added after its last top-level import."""
    tree = ast.parse(text)
    last = max(node.end_lineno or node.lineno for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom))
    return replace_lines(text, [(last + 1, last, lines)]) if lines else text


def _hook_reference(tag: Any, where: Path, folder: Path) -> str:
    """The ``utils.name`` a ``!function`` tag names, checked to be a module of the task folder."""
    if not isinstance(tag, task_yaml.FunctionTag) or tag.folder.resolve() != folder.resolve():
        raise ExportError(f"{where}: the exported dataset needs a !function of its task folder here, got {tag!r}")
    module, _, attribute = tag.name.rpartition(".")
    if not (folder / f"{module}.py").is_file() or "." in module:
        raise ExportError(f"{where}: !function {tag.name} names no module file beside it")
    return tag.name


def _task_class(described: Benchmark, md5: Mapping[str, str]) -> tuple[str, list[_Class], list[Path]]:
    """The class file of a benchmark served through its tasks' hooks: one class (:class:`SciFigTaskDataset` of the
    exported base) naming each task's scoring hook and metric aggregations from its YAML; the hooks' modules are
    vendored. A YAML the exported class cannot honour (a filter pipeline, a group's aggregated metrics, an
    aggregation by name other than ``mean``) stops the export naming it."""
    tasks = task_files.scifig_tasks()
    names = datasets_of(described.name)
    folder = described.task_folder
    leaves: dict[str, tuple[str, ...]] = {name: tuple(task_files.leaves(name, tasks)) for name in names}
    hooks: dict[str, str] = {}
    metrics: dict[str, dict[str, str | None]] = {}
    for name in names:
        info = tasks[name]
        config = task_yaml.resolved(info.path)
        if info.is_group:
            if config.get("aggregate_metric_list"):
                raise ExportError(f"{info.path}: a group's aggregate_metric_list is not exported (its tasks' are)")
            continue
        if config.get("filter_list"):
            raise ExportError(f"{info.path}: a filter_list is not exported; score the raw reply in process_results")
        hooks[name] = _hook_reference(config.get("process_results"), info.path, folder)
        metrics[name] = {}
        for entry in config.get("metric_list") or []:
            aggregation = entry.get("aggregation", "mean")
            if aggregation == "mean":
                metrics[name][entry["metric"]] = None
            else:
                metrics[name][entry["metric"]] = _hook_reference(aggregation, info.path, folder)
    modules = sorted({reference.rpartition(".")[0] for reference in [*hooks.values(), *_flat(metrics)]})
    plugin = plugin_package(folder)
    assert plugin is not None
    package = ".".join([plugin.name, *folder.resolve().relative_to(plugin.folder.resolve()).parts])
    options = {name: task_files.options(name, tasks) for name in names}
    required = _judge_required(names)
    class_name = "SciFig" + "".join(part.capitalize() for part in described.name.split("_"))

    def hook(reference: str | None) -> str:
        return "None" if reference is None else reference

    body = [
        *_class_attributes(names, md5, options, required),
        f"VERSION = {_literal(described.version)}",
        f"BENCHMARK = {_literal(described.name)}",
        f"TASKS = {_literal(leaves)}",
        f"TASK_OPTIONS = {_literal({name: options[name] for name in hooks})}",
        "PROCESS_RESULTS = {" + ", ".join(f"{name!r}: {hook(value)}" for name, value in hooks.items()) + "}",
        "METRICS = {"
        + ", ".join(
            f"{name!r}: {{" + ", ".join(f"{metric!r}: {hook(value)}" for metric, value in entries.items()) + "}"
            for name, entries in metrics.items()
        )
        + "}",
    ]
    text = (
        f'"""{described.title} as VLMEvalKit datasets: every task and group of its task folder, each question\n'
        "scored by the task's own hook (the verdicts of scifig's lmms-eval tasks and VLMEvalKit datasets of these\n"
        "names).\n"
        '"""\n\n'
        f"from {_shared_module(ADAPTER_MODULE_BASE)} import SciFigTaskDataset\n"
        + "".join(f"from {package} import {module}\n" for module in modules)
        + f"\n\nclass {class_name}(SciFigTaskDataset):\n"
        + f'    """{described.title}: one dataset per task and group, named as the tasks."""\n\n'
        + "".join(f"    {line}\n" for line in body)
    )
    files = [folder / f"{module}.py" for module in modules]
    return text, [_Class(class_name, names)], files


def _flat(metrics: Mapping[str, Mapping[str, str | None]]) -> Iterator[str]:
    for entries in metrics.values():
        yield from (value for value in entries.values() if value is not None)


def _columns(described: Benchmark, names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Dataset -> the TSV columns its exported class reads."""
    from scifig_tasks.vlmeval import tsv
    from scifig_tasks.vlmeval.tsv_layout import Field

    found: dict[str, tuple[str, ...]] = {}
    for name in names:
        spec = tsv.spec(name)
        if isinstance(spec, tsv.TaskTsv):
            found[name] = (*tsv.TASK_COLUMNS, *TASK_TSV_COLUMNS)
        else:
            fields = [item.column for item in spec.format.fields if isinstance(item, Field)]
            found[name] = (*tsv.IMAGE_COLUMNS, *fields)
    return found


# ---- the export -----------------------------------------------------------------------------------------------------


def export_vlmeval(bench: str, root: Path, data: Path | None = None) -> VlmevalExport:
    """Write benchmark ``bench``'s VLMEvalKit datasets into the VLMEvalKit source tree at ``root`` (the folder holding
    ``vlmeval/``): the class file, the shared code (once for every benchmark) and the benchmark's own modules;
    ``data``: a folder of ``<dataset>.tsv`` files (or one), whose MD5 goes into ``DATASET_MD5``. Raises
    :class:`~scifig_tasks.export.vendoring.ExportError` in one line naming the file or setting at fault."""
    VLMEVAL.check_versions()
    known = registry.benchmarks()
    if bench not in known:
        raise ExportError(f"unknown benchmark {bench!r} (registered: {', '.join(known)})")
    if not (root / "vlmeval" / "dataset" / "__init__.py").is_file():
        raise ExportError(f"{root}: no vlmeval/dataset/__init__.py; give the root of a VLMEvalKit checkout")
    described = known[bench]
    names = datasets_of(bench)
    md5 = _given_tsvs(data, names, _columns(described, names))
    try:
        from scifig_tasks.vlmeval import import_vlmeval

        import_vlmeval()  # the classes' dataset names are read from the classes
    except ImportError:
        raise ExportError('exporting VLMEvalKit datasets needs VLMEvalKit: pip install "scifig[vlmeval]"') from None
    plugin = plugin_package(described.task_folder)
    placement = Placement(core=SHARED, own=own_package(bench), plugin=plugin)
    if described.vlmeval is not None:
        text, classes, own_files = _described_classes(described, md5)
    else:
        text, classes, own_files = _task_class(described, md5)
    class_path = folder_of(root, class_module(bench)).with_suffix(".py")
    if class_path.exists():
        raise ExportError(f"{class_path} already exists: remove it to export {bench} again")

    copied = frozenset(_dotted(path, plugin) for path in own_files)
    imports = _scifig_imports(class_path, text, copied, plugin)
    for path in [*own_files, *ADAPTER_MODULES.values()]:
        imports += _scifig_imports(path, copied=copied, plugin=plugin)
    written = vendor([], root, placement, VLMEVAL.format, imports)
    files = list(written.files)
    shared_folder = folder_of(root, SHARED)
    for module, path in ADAPTER_MODULES.items():
        target = shared_folder / f"{SHARED_NAMES[module]}.py"
        write_shared(target, VLMEVAL.format(_rename_adapter(placement.rename(path.read_text("utf-8"))), target))
        files.append(target)
    own_folder = folder_of(root, placement.own)
    own = list(written.own)
    for path in own_files:
        if plugin is None or not path.resolve().is_relative_to(plugin.folder.resolve()):
            raise ExportError(f"{path}: not a module of {bench}'s package")
        relative = path.resolve().relative_to(plugin.folder.resolve())
        target = own_folder / relative
        _write_packages(own_folder, relative, plugin, placement)
        target.write_text(VLMEVAL.format(_rename_adapter(placement.rename(path.read_text("utf-8"))), target), "utf-8")
        files.append(target)
        own.append(relative.as_posix())
    class_text = VLMEVAL.format(_rename_adapter(placement.rename(text)), class_path)
    class_path.write_text(class_text, encoding="utf-8")
    files.append(class_path)
    check_self_contained(files, FORBIDDEN_ROOTS + ((plugin.name.split(".")[0],) if plugin else ()))
    return VlmevalExport(
        bench=bench,
        class_file=class_path,
        classes=tuple(found.name for found in classes),
        datasets=names,
        shared=[*written.core, *(f"{name}.py" for name in SHARED_NAMES.values())],
        own=sorted(set(own)),
        md5=md5,
        files=files,
    )


def _dotted(path: Path, plugin: Package | None) -> str:
    """The dotted module name of a source file of the benchmark's package (a plugin's too:
    ``toy_bench.rules``) or of this package (``scifig_tasks.vlmeval.tsv_layout``)."""
    if plugin is not None and path.resolve().is_relative_to(plugin.folder.resolve()):
        return module_of(path.resolve(), Package(plugin.name, plugin.folder.resolve()))
    package = Path(__file__).resolve().parents[1]
    return ".".join(["scifig_tasks", *path.resolve().relative_to(package).with_suffix("").parts])


def _write_packages(own_folder: Path, relative: Path, plugin: Package, placement: Placement) -> None:
    """The ``__init__.py`` of each package between the benchmark's package and ``relative`` (its own sources, renamed
    and formatted; empty where the source has none)."""
    for depth in range(1, len(relative.parts)):
        part = Path(*relative.parts[:depth])
        target = own_folder / part / "__init__.py"
        if target.exists():
            continue
        source = plugin.folder / part / "__init__.py"
        text = placement.rename(source.read_text("utf-8")) if source.is_file() else ""
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(VLMEVAL.format(text, target) if text else "", "utf-8")
