"""``scifig export-upstream --bench NAME --out DIR``: the benchmark as task folders of the lmms-eval repository,
generated from this package's own files at export time, in the repository's own style.

``DIR`` is an lmms-eval checkout (or an empty folder laid out like one). The export writes
``lmms_eval/tasks/<bench>/`` (the YAMLs, ``utils.py``, a generated ``<bench>_hooks.py``, the benchmark's own rule
modules in ``<bench>/<package>/``, a README) and the scoring code every exported benchmark shares, once, in
``lmms_eval/tasks/_task_utils/scifig/``; everything is imported absolutely from the ``lmms_eval`` package, as
upstream tasks import theirs, and formatted with lmms-eval's pre-commit formatters (:mod:`scifig_tasks.export.style`).

Manual: docs/contributing-upstream.md, "What differs from the packaged task folder".
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scifig_tasks.core import registry, task_files, task_yaml
from scifig_tasks.core.judge.required import Requirement
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.export.readme import upstream_readme
from scifig_tasks.export.style import LMMS_EVAL
from scifig_tasks.export.vendoring import (
    CORE,
    CORE_PACKAGE,
    FORBIDDEN_ROOTS,
    ExportError,
    Package,
    Placement,
    check_self_contained,
    folder_of,
    plugin_package,
    vendor,
)
from scifig_tasks.lmms_eval.plugin import scifig_source

TASKS = "lmms_eval.tasks"
SHARED = f"{TASKS}._task_utils.scifig"
"""The shared core's package in the lmms-eval tree (``_task_utils``: where upstream tasks keep shared helpers)."""
HOOKS = "{bench}_hooks"
"""The generated hook module beside the YAMLs."""
PLACEHOLDER_DIR = "/path/to/{bench}"
EXPAND = "expand_questions"
"""The function turning checked rows into their question documents (:mod:`scifig_tasks.core.row_questions`)."""


@dataclass
class Exported:
    folder: Path
    shared: Path
    vendored: list[str]
    """The shared core modules the benchmark needs (``judge/client.py``)."""
    own: list[str]
    """The benchmark package's vendored files, relative to its folder (``rules.py``)."""
    yamls: list[str]
    data_files: dict[str, dict[str, str]]
    """Source name -> split -> parquet path written into the YAMLs."""
    questions: dict[str, str] = field(default_factory=dict)
    """Source -> its questions rule (``toy_bench.rules.questions``), for the sources whose rows hold several."""
    judged: list[str] = field(default_factory=list)
    """The tasks that refuse to start without a judge."""


def benchmarks() -> list[str]:
    """The benchmarks that can be exported: the registered ones (:mod:`scifig_tasks.core.registry`)."""
    return list(registry.benchmarks())


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


_SCIFIG_METADATA = re.compile(r"^[ \t]+scifig_\w+:.*\n", re.MULTILINE)
"""A ``metadata`` key of scifig's own (``scifig_summary``, ``scifig_protocol``, ...); upstream keeps ``version``."""


def _export_yaml(text: str, origin: Path, data_files: dict[str, dict[str, str]], bench: str) -> str:
    """The YAML with scifig's own keys removed and lmms-eval's data loading (the Hub id, or local parquet files)."""
    sources = _SOURCE_LINE.findall(text)
    if not sources:
        return _without_scifig_metadata(text)
    if len(sources) > 1:
        raise ExportError(f"{origin}: more than one scifig_source")
    (name,) = sources
    if name not in registry.sources():
        raise ExportError(f"{origin}: unknown scifig_source {name!r}")
    text = _without_scifig_metadata(text)
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


def _without_scifig_metadata(text: str) -> str:
    text = _SCIFIG_METADATA.sub("", text)
    return re.sub(r"^metadata:[ \t]*\n(?=\S|\Z)", "", text, flags=re.MULTILINE)  # an emptied metadata block


# ---- several questions per row ------------------------------------------------------------------------------------


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

    def vendored(self, placement: Placement) -> str:
        """The rule's module in the tree: in the shared core or the benchmark's vendored package."""
        package = placement.core if self.package is CORE_PACKAGE else placement.own
        return ".".join([package, *filter(None, [self.module])])


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


def bound_scoring(folder: Path) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """YAML file name -> (task, "module.function", options) for each task whose scoring hook reads its task's
    options (:func:`scifig_tasks.core.task_options.reads_task_options`): stock lmms-eval passes ``process_results`` no
    options, so the exported folder names a hook bound to them, as scifig binds them when it loads the task."""
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


# ---- the generated hook module -------------------------------------------------------------------------------------


@dataclass
class Hooks:
    """What the generated ``<bench>_hooks.py`` holds, and the YAML keys that name it (file name -> key -> value)."""

    bench: str
    placement: Placement
    imports: dict[str, dict[str, str]] = field(default_factory=dict)
    """Module -> name imported -> the name the generated code calls it by."""
    lines: list[str] = field(default_factory=list)
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    judged: list[str] = field(default_factory=list)
    """The tasks refused without a judge."""

    @property
    def module(self) -> str:
        return HOOKS.format(bench=self.bench)

    def use(self, module: str, name: str, alias: str | None = None) -> None:
        self.imports.setdefault(module, {})[name] = alias or name

    def imported(self, prefix: str) -> list[tuple[str, list[str]]]:
        """``(module, names)`` the generated code imports from modules under ``prefix`` (for the closure)."""
        return [(module, list(names)) for module, names in self.imports.items() if module.startswith(prefix)]

    def own(self, hook: str) -> str:
        """A ``module.function`` of the task folder as the generated code calls it (``utils.grab_breakdown``)."""
        module, _, function = hook.rpartition(".")
        self.use(f"{TASKS}.{self.bench}", module)
        return f"{module}.{function}"

    def key(self, yaml_name: str, key: str, function: str) -> None:
        self.keys.setdefault(yaml_name, {})[key] = f"!function {self.module}.{function}"

    def text(self) -> str:
        doc = (
            f'"""Hooks generated for the {self.bench} tasks from their YAMLs, one line each '
            "(``_task_utils/scifig/exported_hooks.py``): ``*_docs`` refuse a task that needs an LLM judge before any "
            "request and expand a source whose rows hold several questions; ``*_results`` bind the options a YAML "
            "declares (lmms-eval hands process_results none); ``*_breakdown`` write the breakdown files."
            '"""'
        )
        imports = "\n".join(
            f"from {module} import "
            + ", ".join(name if alias == name else f"{name} as {alias}" for name, alias in names.items())
            for module, names in sorted(self.imports.items())
        )
        return f"{doc}\n\n{imports}\n\n" + "\n".join(self.lines) + "\n"


def _hooks(source: Path, bench: str, placement: Placement, rules: Mapping[str, QuestionsRule]) -> Hooks:
    """The generated hooks of every task and group YAML of ``source`` that needs one."""
    hooks = Hooks(bench, placement)
    scoring = bound_scoring(source)
    requires = Requirement(None)
    for path in _yaml_files(source):
        config = task_yaml.resolved(path)
        task = config.get("task")
        if isinstance(task, str):
            _task_hooks(hooks, path, task, config, rules, scoring, requires)
        elif config.get("group") and config.get("aggregate_metric_list"):
            _group_hooks(hooks, path, str(config["group"]), config)
    return hooks


def _task_hooks(
    hooks: Hooks,
    path: Path,
    task: str,
    config: Mapping[str, Any],
    rules: Mapping[str, QuestionsRule],
    scoring: Mapping[str, tuple[str, str, dict[str, Any]]],
    requires: Requirement,
) -> None:
    """One line per hook the task needs (:mod:`scifig_tasks.core.exported_hooks`)."""
    source = _source_of(config)
    rule = rules.get(source) if source is not None else None
    judged = requires(task)
    own = config.get("process_docs")
    if rule is not None or judged:
        if own is not None and not (isinstance(own, task_yaml.FunctionTag) and own.folder == path.parent):
            raise ExportError(f"{path}: process_docs must be a `!function module.name` of a file beside the YAML")
        hooks.use(placement_module(hooks, "exported_hooks"), "documents")
        arguments = [f'"{task}"', *(["judged=True"] if judged else [])]
        hooks.judged += [task] if judged else []
        if rule is not None:
            hooks.use(rule.vendored(hooks.placement), rule.name, f"{source}_questions")
            arguments += [f"questions={source}_questions", f'source="{source}"']
        if own is not None:
            arguments.append(f"then={hooks.own(own.name)}")
        hooks.lines.append(f"{task}_docs = documents({', '.join(arguments)})")
        hooks.key(path.name, "process_docs", f"{task}_docs")
    if path.name in scoring:
        _, hook, options = scoring[path.name]
        hooks.use(placement_module(hooks, "task_options"), "bind")
        arguments = "".join(f", {name}={value!r}" for name, value in options.items())
        hooks.lines.append(f"{task}_results = bind({hooks.own(hook)}{arguments})")
        hooks.key(path.name, "process_results", f"{task}_results")
    metrics = config.get("metric_list") or []
    breakdown = next((m for m in metrics if m.get("metric") == "breakdown"), None)
    if breakdown is not None and isinstance(breakdown.get("aggregation"), task_yaml.FunctionTag):
        hooks.use(placement_module(hooks, "exported_hooks"), "breakdown_file")
        hooks.use(f"{TASKS}._task_utils.file_utils", "generate_submission_file")
        aggregate = hooks.own(breakdown["aggregation"].name)
        hooks.lines.append(f'{task}_breakdown = breakdown_file("{task}", {aggregate}, generate_submission_file)')
        hooks.keys.setdefault(path.name, {})["metric_list"] = _metric_list(
            "metric_list", metrics, f"{hooks.module}.{task}_breakdown"
        )


def _group_hooks(hooks: Hooks, path: Path, group: str, config: Mapping[str, Any]) -> None:
    metrics = config["aggregate_metric_list"]
    breakdown = next((m for m in metrics if m.get("metric") == "breakdown"), None)
    if breakdown is None or not isinstance(breakdown.get("aggregation"), task_yaml.FunctionTag):
        return
    hooks.use(placement_module(hooks, "exported_hooks"), "group_breakdown")
    merge = hooks.own(breakdown["aggregation"].name)
    hooks.lines.append(f'{group}_group_breakdown = group_breakdown("{group}", {merge})')
    hooks.keys.setdefault(path.name, {})["aggregate_metric_list"] = _metric_list(
        "aggregate_metric_list", metrics, f"{hooks.module}.{group}_group_breakdown"
    )


def placement_module(hooks: Hooks, name: str) -> str:
    """A core module as the generated code imports it (its place in the shared folder)."""
    return f"{hooks.placement.core}.{name}"


def _metric_list(key: str, metrics: list[Mapping[str, Any]], breakdown: str) -> str:
    """The ``key`` block with the breakdown's aggregation replaced by ``breakdown`` (a generated hook)."""
    lines = [f"{key}:"]
    for metric in metrics:
        for number, (name, value) in enumerate(metric.items()):
            if name == "aggregation" and metric.get("metric") == "breakdown":
                text = f"!function {breakdown}"
            elif isinstance(value, task_yaml.FunctionTag):
                text = f"!function {value.name}"
            else:
                text = yaml.safe_dump(value, default_flow_style=True).splitlines()[0]
            lines.append(f"{'  - ' if number == 0 else '    '}{name}: {text}")
    return "\n".join(lines)


_BLOCK = r"^{key}:.*\n(?:[ \t-].*\n|[ \t]*\n)*"


def _with_keys(text: str, keys: Mapping[str, str]) -> str:
    """The YAML with each of ``keys`` (a value, or a whole block starting with the key) replacing its own."""
    for key, value in keys.items():
        text = re.sub(_BLOCK.format(key=key), "", text, flags=re.MULTILINE).rstrip("\n") + "\n"
        text += (value if value.startswith(f"{key}:") else f"{key}: {value}") + "\n"
    return text


# ---- README --------------------------------------------------------------------------------------------------------


def _data_section(source: Path, data_files: Mapping[str, Mapping[str, str]]) -> str:
    lines = ["## Data", "", "The YAMLs load their data with lmms-eval's own loader (`datasets.load_dataset`).", ""]
    for name, src in registry.sources().items():
        if not any(name in _SOURCE_LINE.findall(path.read_text(encoding="utf-8")) for path in _yaml_files(source)):
            continue
        if name in data_files:
            columns = ", ".join(f"`{column.name}`" for column in src.columns)
            lines.append(
                f"* {src.name}: local parquet files, one per split ({', '.join(f'`{s}`' for s in data_files[name])}"
                f"), named in `dataset_kwargs.data_files`: edit the paths to your copy; the columns: {columns}."
            )
        else:
            lines.append(
                f"* {src.name}: the Hugging Face dataset `{src.hub_path}`, splits "
                + ", ".join(f"`{split}`" for split in src.splits)
                + ". For a local copy, `dataset_path: parquet` with `dataset_kwargs: {data_files: {<split>: <file>}}`."
            )
    return _wrapped(lines)


def _wrapped(lines: list[str]) -> str:
    """Markdown lines wrapped at 120 columns (a bullet's continuation indented under its text)."""
    return (
        "\n".join(
            textwrap.fill(line, 120, subsequent_indent="  " if line.startswith("* ") else "", break_on_hyphens=False)
            if line
            else ""
            for line in lines
        )
        + "\n"
    )


def _code_section(bench: str, exported: Exported, placement: Placement) -> str:
    own = f"`{placement.own.rpartition('.')[2]}/`" if exported.own else None
    lines = [
        "## Code layout",
        "",
        f"`utils.py` holds the task hooks and `{HOOKS.format(bench=bench)}.py` the hooks generated from the YAMLs"
        + (f"; the benchmark's rules (prompts, answer extraction, metrics) are in {own}" if own else "")
        + ". The scoring code shared with the other scifig benchmarks (answer rules, statistics, the LLM judge "
        "client) is in `lmms_eval/tasks/_task_utils/scifig/`. The `breakdown` metric's value is a JSON file in the "
        "run's `submissions/` folder (per-type accuracies, intervals, flags); the table prints its path.",
        "",
        "The judge reads `SCIFIG_JUDGE_BASE_URL`, `SCIFIG_JUDGE_MODEL` and `SCIFIG_JUDGE_API_KEY` (falling back to "
        "`OPENAI_*`), or `SCIFIG_JUDGE=<preset>` with the presets in `_task_utils/scifig/judges/`; `SCIFIG_JUDGE=off` "
        "turns it off."
        + (
            f" {', '.join(f'`{task}`' for task in exported.judged)} cannot be scored without it and stop the run "
            "before any model request when none is configured."
            if exported.judged
            else ""
        ),
    ]
    return _wrapped(lines)


def _yaml_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.yaml"), *folder.glob("_*template_yaml")])


# ---- export --------------------------------------------------------------------------------------------------------


def export(bench: str, out: Path, data: Mapping[str, Path] | None = None) -> Exported:
    """Write the benchmark into the lmms-eval tree at ``out``; ``data`` maps a source name (``grab``,
    ``plot_twist_chartqa``) to local data."""
    if bench not in benchmarks():
        raise ExportError(f"unknown benchmark {bench!r}; available: {', '.join(benchmarks())}")
    LMMS_EVAL.check_versions()
    source = Path(registry.benchmark(bench).task_folder)
    folder = folder_of(out, TASKS) / bench
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} exists and is not empty")
    data_files: dict[str, dict[str, str]] = {}
    for name, path in (data or {}).items():
        if name not in registry.sources():
            raise ExportError(f"--data {name}=...: unknown data source (known: {', '.join(registry.sources())})")
        data_files[name] = local_splits(registry.sources()[name], Path(path))
    owner = plugin_package(source)
    placement = Placement(SHARED, f"{TASKS}.{bench}.{owner.short}" if owner else f"{TASKS}.{bench}", owner)
    if (source / f"{HOOKS.format(bench=bench)}.py").exists():
        raise ExportError(f"{source / HOOKS.format(bench=bench)}.py: the export writes its generated hooks there")
    rules = questions_rules(source, owner)
    hooks = _hooks(source, bench, placement, rules)
    generated = folder / f"{hooks.module}.py"
    formatted = LMMS_EVAL.format
    hook_files = [path for path in sorted(source.glob("*.py")) if path.name != "__init__.py"]
    imports = [("generated hooks", module.replace(SHARED, CORE), names) for module, names in hooks.imported(SHARED)]
    if placement.plugin is not None:
        own = hooks.imported(placement.own + ".")
        imports += [("generated hooks", _original(module, placement), names) for module, names in own]
    folder.mkdir(parents=True, exist_ok=True)
    written = vendor(hook_files, out, placement, formatted, imports)
    for path in hook_files:
        (folder / path.name).write_text(formatted(placement.rename(path.read_text("utf-8")), path), "utf-8")
    if hooks.lines:
        generated.write_text(formatted(hooks.text(), generated), encoding="utf-8")
    yamls = []
    for path in _yaml_files(source):
        text = _export_yaml(path.read_text(encoding="utf-8"), path, data_files, bench)
        (folder / path.name).write_text(_with_keys(text, hooks.keys.get(path.name, {})), encoding="utf-8")
        yamls.append(path.name)
    unused = set(data or {}) - set(data_files)
    if unused:
        raise ExportError(f"--data {', '.join(sorted(unused))}: no task of {bench} reads that source")
    forbidden = FORBIDDEN_ROOTS + ((owner.name.split(".")[0],) if owner is not None else ())
    check_self_contained([*folder.rglob("*.py"), *written.files], forbidden)
    exported = Exported(
        folder,
        folder_of(out, SHARED),
        written.core,
        written.own,
        yamls,
        data_files,
        {name: f"{rule.defined_in}.{rule.name}" for name, rule in rules.items()},
        sorted(hooks.judged),
    )
    package_readme = (source / "README.md").read_text(encoding="utf-8") if (source / "README.md").exists() else ""
    readme = upstream_readme(
        package_readme or f"# {bench}\n",
        bench=bench,
        data_section=_data_section(source, data_files),
        code_section=_code_section(bench, exported, placement),
    )
    (folder / "README.md").write_text(readme, encoding="utf-8")
    return exported


def _original(module: str, placement: Placement) -> str:
    """A module of the benchmark's vendored package by its name in this package (for the closure)."""
    assert placement.plugin is not None
    return placement.plugin.name + module[len(placement.own) :]


def python_lines(folder: Path) -> int:
    """The Python lines under ``folder``."""
    return sum(len(path.read_text(encoding="utf-8").splitlines()) for path in folder.rglob("*.py"))
