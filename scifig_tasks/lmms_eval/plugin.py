"""lmms-eval plugin: the ``lmms_eval.models`` entry point that registers ``scifig_chance`` and ``scifig_clip`` and
installs task discovery (every registered benchmark's task folder on lmms-eval's search path), scifig data loading and
the environment block. Manual: docs/lmms-eval.md, "How lmms-eval finds the tasks"."""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from functools import wraps
from pathlib import Path
from typing import Any

from scifig_tasks.lmms_eval import task_folders


def manifests() -> list[Any]:
    """Entry-point payload for the ``lmms_eval.models`` group. The patches are installed when ``lmms_eval.tasks`` is
    imported (:func:`install_with_lmms_eval`; at once when it already is): no lmms-eval module is imported here, so
    loading the entry point costs a process that never builds a task (``lmms-eval --help``, another tool listing
    lmms-eval's models) nothing but this package's import."""
    from lmms_eval.models.registry_v2 import ModelManifest

    install_with_lmms_eval()
    return [
        ModelManifest(model_id="scifig_chance", simple_class_path="scifig_tasks.lmms_eval.chance_model.ScifigChance"),
        ModelManifest(model_id="scifig_clip", simple_class_path="scifig_tasks.lmms_eval.clip_model.ScifigClip"),
    ]


def install() -> None:
    """Apply scifig's lmms-eval patches (task discovery, data loading, printed tables, results environment, judge
    accounting), each checked against the installed lmms-eval first (:mod:`scifig_tasks.lmms_eval.patches`);
    safe to call twice."""
    from scifig_tasks.lmms_eval import patches

    patches.install()


def wrap_match_tasks(match_tasks: Any) -> Any:
    """``TaskManager.match_tasks`` that stops the run when a requested name is a task of a benchmark left out at
    registration (:func:`scifig_tasks.core.registry.refuse_left_out`)."""

    @wraps(match_tasks)
    def match_or_refuse(self: Any, task_list: Any) -> Any:
        from scifig_tasks.core import registry

        registry.refuse_left_out(name for name in task_list if isinstance(name, str))
        return match_tasks(self, task_list)

    return match_or_refuse


def wrap_initialize_tasks(find_tasks: Any) -> Any:
    """``TaskManager.initialize_tasks`` that also searches the registered task folders, after the caller's
    ``include_path``, and
    warns once per scifig name another folder's task replaces."""

    @wraps(find_tasks)
    def initialize_tasks(self: Any, include_path: Any = None, include_defaults: bool = True) -> Any:
        paths = [] if include_path is None else [include_path] if isinstance(include_path, str) else list(include_path)
        given = {Path(path).resolve() for path in paths}
        ours = [folder for folder in task_folders() if folder not in given]
        index = find_tasks(self, include_path=paths, include_defaults=include_defaults)
        # lmms-eval's own merge of the folders searched after those (an earlier folder's entry wins), each of ours
        # indexed once: its entries are both merged and checked for replacement
        own = [self._get_task_and_group(str(folder)) for folder in ours]
        for entries in own:
            index = {**entries, **index}
        for entries in own:
            for message in shadowed(index, entries):
                if message not in _WARNED:
                    _WARNED.add(message)
                    self.logger.warning(message)
        return index

    return initialize_tasks


def wrap_download(download: Any) -> Any:
    """``ConfigurableTask.download`` that loads the data of scifig tasks with :func:`load_task_data`, and notes every
    task built while :func:`noting_tasks` (called once per task, as lmms-eval builds it)."""

    @wraps(download)
    def download_scifig_source(self: Any, dataset_kwargs: Any = None) -> None:
        if _noted is not None:
            _noted.append(self)
        if scifig_source(self.config) is None:
            return download(self, dataset_kwargs)
        return load_task_data(self)

    return download_scifig_source


def wrap_get_task_and_group(index_folder: Any) -> Any:
    """``TaskManager._get_task_and_group`` (the index of one folder's task YAMLs) kept on disk while the folder's
    YAMLs and the files they include are unchanged (:func:`kept_index`)."""

    @wraps(index_folder)
    def get_task_and_group(self: Any, task_dir: str) -> Any:
        return kept_index(self, task_dir, index_folder)

    return get_task_and_group


_noted: list[Any] | None = None
"""Where :func:`wrap_download` notes the tasks built while :func:`noting_tasks` (None: nowhere)."""


@contextlib.contextmanager
def noting_tasks(into: list[Any]) -> Iterator[None]:
    """Within the block, every lmms-eval task built (scifig's and any other) is appended to ``into``: what ``scifig
    eval`` reads each request's reply from after the run (:func:`scifig_tasks.lmms_eval.output_folder.
    count_requests`), so a run whose model requests failed is told without ``--log_samples``."""
    global _noted
    saved, _noted = _noted, into
    try:
        yield
    finally:
        _noted = saved


INDEX_KIND = "lmms_eval_index"
"""The findings of :func:`kept_index` in :mod:`scifig_tasks.core.registration_cache`."""
_IGNORED_DIRS = ("__pycache__", ".ipynb_checkpoints")
"""The folders lmms-eval's indexing skips."""
_index_lock = threading.Lock()


def kept_index(manager: Any, task_dir: str, index_folder: Any) -> Any:
    """``index_folder(manager, task_dir)`` (lmms-eval's index of a folder: each task, group and tag name -> its type
    and YAML), read from :mod:`scifig_tasks.core.registration_cache` while it holds. Every lmms-eval process indexes
    lmms-eval's own few thousand task YAMLs, parsing each (seconds); the index depends only on those files, the files
    they include and which files the folder holds, so it is stored with their sizes and modification times, keyed
    by the folder, the walk's list of YAMLs (in its order) and lmms-eval's version, together with the lines indexing
    logged (said again, at their level and with lmms-eval's place in the code, when the stored index is used). It is
    not stored, and the folder is indexed as lmms-eval does it, when the folder is given relative to the working
    directory, when an ``include`` was found relative to the working directory, when indexing logged otherwise than
    with one plain message, or when the index is not plain JSON; a stored index is not used when an ``include``
    resolved beside its YAML now names a file relative to the working directory (lmms-eval would read that one)."""
    from scifig_tasks.core.registration_cache import remembered

    if not os.path.isabs(task_dir):
        return index_folder(manager, task_dir)
    listing = _yaml_files(task_dir)

    called: list[bool] = []

    def find() -> tuple[dict[str, Any], list[str] | None]:
        called.append(True)
        index, read, beside, logged = _indexed(manager, task_dir, index_folder)
        value = {"index": index, "beside": sorted(beside), "logged": logged}
        return value, read if logged is not None and _plain(index) else None

    def holds(value: Any) -> bool:
        return {"index", "logged"} <= value.keys() and not any(os.path.isfile(path) for path in value["beside"])

    digest = hashlib.sha256("\n".join(listing).encode()).hexdigest()
    key = f"{_lmms_eval_version()}|{task_dir}|{digest}"
    found = remembered(INDEX_KIND, key, find, listing, holds)
    if called:  # indexed now: lmms-eval's own lines were logged as it went
        return found["index"]
    if found["logged"] and not hasattr(manager.logger, "patch"):  # lines that could not be said as lmms-eval's
        return index_folder(manager, task_dir)
    for line in found["logged"]:
        _say_again(manager.logger, *line)
    if listing:  # a stored index leaves yaml's !function constructor as lmms-eval's indexing does
        from lmms_eval import utils

        utils.load_yaml_config(yaml_config={}, yaml_dir=task_dir, mode="simple")
    return collections.defaultdict(None, found["index"])


def _yaml_files(task_dir: str) -> list[str]:
    """The YAMLs lmms-eval's indexing reads in ``task_dir``, in its order (its walk, skipping the same folders)."""
    found = []
    for root, dirs, files in os.walk(task_dir):
        dirs[:] = [d for d in dirs if d not in _IGNORED_DIRS]
        found += [os.path.join(root, file) for file in files if file.endswith(".yaml")]
    return found


def _plain(index: Any) -> bool:
    """Whether ``index`` comes back from JSON as it is (text keys, no tuples)."""
    try:
        return bool(json.loads(json.dumps(index)) == index)
    except (TypeError, ValueError):
        return False


def _indexed(manager: Any, task_dir: str, index_folder: Any) -> tuple[Any, list[str], set[str], list[Any] | None]:
    """lmms-eval's index of ``task_dir``, the files it read, the ``include`` values it resolved beside their YAML
    (none of them a file relative to the working directory), and the lines it logged (:class:`_Listening`); None
    for those when the index may not be kept (a line logged otherwise, an ``include`` found relative to the working
    directory)."""
    from lmms_eval import utils

    load = utils.load_yaml_config
    read: list[str] = []
    beside: set[str] = set()
    opened: list[str] = []
    relative = False

    def recorded(yaml_path: Any = None, yaml_config: Any = None, yaml_dir: Any = None, mode: str = "full") -> Any:
        nonlocal relative
        if yaml_path is None:
            return load(yaml_path=yaml_path, yaml_config=yaml_config, yaml_dir=yaml_dir, mode=mode)
        path = str(yaml_path)
        if opened:  # an include of the file being read: beside it, unless found from the working directory
            parent = os.path.join(os.path.dirname(opened[-1]), "")
            if path.startswith(parent):
                beside.add(path[len(parent) :])
            elif not os.path.isabs(path):
                relative = True
        read.append(os.path.abspath(path))
        opened.append(path)
        try:
            return load(yaml_path=yaml_path, yaml_config=yaml_config, yaml_dir=yaml_dir, mode=mode)
        finally:
            opened.pop()

    logger = _Listening(manager.logger)
    with _index_lock:
        utils.load_yaml_config = recorded
        manager.logger = logger
        try:
            index = index_folder(manager, task_dir)
        finally:
            utils.load_yaml_config = load
            manager.logger = logger.logger
    return index, read, beside, None if relative or not logger.plain else logger.lines


_LEVELS = frozenset({"trace", "debug", "info", "success", "warning", "error", "critical"})


class _Listening:
    """A logger that passes every call on (to a loguru logger, from its caller's place in the code) and notes each
    line: ``[level, message, module name, function, line, file]``; :attr:`plain` turns false at any other use (another
    method, arguments to format, a logger that is not loguru's), and the index is then not kept."""

    def __init__(self, logger: Any) -> None:
        self.logger = logger
        self.lines: list[list[Any]] = []
        self.plain = hasattr(logger, "opt") and hasattr(logger, "patch")

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.logger, name)
        if name not in _LEVELS or not self.plain:
            self.plain = False
            return method

        def say(*args: Any, **kwargs: Any) -> Any:
            if len(args) != 1 or kwargs or not isinstance(args[0], str):
                self.plain = False
                return method(*args, **kwargs)
            caller = sys._getframe(1)
            code = caller.f_code
            self.lines.append(
                [name, args[0], caller.f_globals.get("__name__"), code.co_name, caller.f_lineno, code.co_filename]
            )
            return getattr(self.logger.opt(depth=1), name)(args[0])

        return say


def _say_again(logger: Any, level: str, message: str, module: str, function: str, line: int, file: str) -> None:
    """Log a line noted by :class:`_Listening` again, at its level and with the place in the code it came from."""

    def place(record: Any) -> None:
        record.update(name=module, function=function, line=line, module=os.path.splitext(os.path.basename(file))[0])
        record["file"] = type(record["file"])(os.path.basename(file), file)

    getattr(logger.patch(place), level)(message)


@functools.cache
def _lmms_eval_version() -> str:
    from scifig_tasks.lmms_eval.patches import installed_lmms_eval

    return installed_lmms_eval()


class _InstallAfterTasksImport(importlib.abc.MetaPathFinder):
    """Runs :func:`install` right after ``lmms_eval.tasks`` (where ``TaskManager`` lives) is first imported."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != LMMS_TASKS:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_then_install(module: Any) -> None:
                exec_module(module)
                install()

            spec.loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


LMMS_TASKS = "lmms_eval.tasks"


def install_with_lmms_eval() -> None:
    """Make every ``TaskManager`` see this package's tasks once lmms-eval is used, without importing lmms-eval here:
    at once when ``lmms_eval.tasks`` is already imported, else right after its first import (``import scifig_tasks``
    calls this, so a plain ``TaskManager()`` in a user's script lists the scifig tasks)."""
    loaded = sys.modules.get(LMMS_TASKS)
    if loaded is not None:
        if hasattr(loaded, "TaskManager"):
            install()
    elif not any(isinstance(finder, _InstallAfterTasksImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _InstallAfterTasksImport())


_WARNED: set[str] = set()


def shadowed(index: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """One warning per entry of ``ours`` (one registered folder's task index) that another folder's entry replaced in
    ``index`` (lmms-eval's merged index), naming the file that won and ours."""

    def where(entry: dict[str, Any]) -> str:
        path = entry.get("yaml_path")
        return str(path) if isinstance(path, str) else f"a {entry.get('type')} made of tasks {entry.get('task')}"

    return [
        f"scifig: {name!r} from {where(index[name])} replaces scifig's {where(entry)} "
        "(tasks of lmms-eval and of --include_path folders take precedence; rename yours to keep ours)"
        for name, entry in sorted(ours.items())
        if name in index and not _same_entry(index[name], entry)
    ]


def _same_entry(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Index entries match when they come from the same file (however the folder was spelled) or are equal."""
    path_a, path_b = a.get("yaml_path"), b.get("yaml_path")
    if isinstance(path_a, str) and isinstance(path_b, str):
        return Path(path_a).resolve() == Path(path_b).resolve()
    return a == b


def scifig_source(config: Any) -> str | None:
    """The ``metadata.scifig_source`` of a task config, lmms-eval's or a YAML read as a mapping (``None`` for tasks
    that are not this package's)."""
    metadata = getattr(config, "metadata", None)
    if metadata is None and isinstance(config, dict):
        metadata = config.get("metadata")
    entries = metadata if isinstance(metadata, list) else [metadata]
    for entry in entries:
        if isinstance(entry, dict) and "scifig_source" in entry:
            return str(entry["scifig_source"])
    return None


def check_task_data(names: Sequence[str]) -> None:
    """Load, and so validate, the data of the scifig tasks among ``names`` (a group by its tasks; other names are
    lmms-eval's to find) as :func:`load_task_data` will load it, before lmms-eval is imported: bad or missing data is
    refused in a second or two instead of after lmms-eval's start-up. The splits stay loaded for the run
    (:func:`scifig_tasks.core.data.load_benchmark` keeps each one per process). Raises
    :class:`~scifig_tasks.core.errors.DataError`."""
    from scifig_tasks.core import registry, task_files, task_yaml
    from scifig_tasks.core.data import load_benchmark

    tasks = task_files.scifig_tasks()

    def leaves(name: str) -> list[str]:
        info = tasks.get(name)
        if info is None:
            return []
        return [leaf for member in info.members for leaf in leaves(member)] if info.is_group else [name]

    for name in dict.fromkeys(leaf for requested in names for leaf in leaves(requested)):
        source = tasks[name].source
        if source is None:
            continue
        config = task_yaml.resolved(tasks[name].path)
        split, hub_path = config.get("test_split"), config.get("dataset_path")
        load_benchmark(registry.sources()[source], split=split, hub_path=hub_path, reader=name)


def load_task_data(task: Any) -> None:
    """Fill ``task.dataset`` / ``task.dataset_no_image`` the way lmms-eval's own loader does, from our source."""
    import datasets

    from scifig_tasks.core import registry
    from scifig_tasks.core.data import load_benchmark, without_media
    from scifig_tasks.core.image_cells import undecoded

    config = task.config
    split = config.test_split
    source = registry.sources()[scifig_source(config)]
    evaluated = undecoded(load_benchmark(source, split=split, hub_path=task.DATASET_PATH, reader=config.task))
    if config.process_docs is not None:
        evaluated = config.process_docs(evaluated)
    task.dataset = datasets.DatasetDict({split: evaluated})
    if config.process_results_use_image:
        task.dataset_no_image = task.dataset
    else:
        task.dataset_no_image = datasets.DatasetDict({split: without_media(evaluated)})
