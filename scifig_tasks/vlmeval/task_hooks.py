"""A registered lmms-eval task (or group) as a VLMEvalKit dataset, driven by the task's own YAML hooks: its documents,
prompt, score and aggregation as lmms-eval makes them from the same YAML.

Manual: docs/vlmeval.md, "How a task's YAML becomes a dataset".
"""

from __future__ import annotations

import functools
import inspect
import io
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import judge, registry, task_files, task_yaml
from scifig_tasks.core.schema import BenchmarkSource
from scifig_tasks.core.task_options import for_task, refuse_disagreement

if TYPE_CHECKING:
    import datasets
    from PIL import Image

Segment = str | int
"""A prompt segment: text, or the position of an image in the question's image list."""


@dataclass(frozen=True)
class Leaf:
    """One lmms-eval task: its name, its resolved YAML and the data it reads."""

    name: str
    config: Mapping[str, Any]

    @property
    def source_key(self) -> str:
        return str(offered()[self.name].source)

    @property
    def source(self) -> BenchmarkSource:
        found = registry.sources().get(self.source_key)
        if found is None:
            path = task_files.scifig_tasks()[self.name].path
            raise ValueError(f"{path}: metadata.scifig_source {self.source_key!r} is not a registered data source")
        return found

    @property
    def split(self) -> str:
        return str(self.config.get("test_split") or self.source.default_split)

    def hook(self, key: str) -> Any:
        """The YAML's ``key``: a ``!function`` resolved, anything else as written (``None`` when absent)."""
        value = self.config.get(key)
        return value.resolve() if isinstance(value, task_yaml.FunctionTag) else value

    @property
    def prompt_kwargs(self) -> dict[str, Any] | None:
        """``lmms_eval_specific_kwargs`` as lmms-eval hands it to the prompt hooks: the YAML's mapping with its
        ``default`` entry merged in (``None`` when the YAML has none)."""
        given = self.config.get("lmms_eval_specific_kwargs")
        if not isinstance(given, dict):
            return None
        return {**given, **(given.get("default") or {})}


def offered() -> dict[str, task_files.TaskInfo]:
    """Every task and group of the registered benchmarks' task folders, by name."""
    return task_files.scifig_tasks()


def leaves(name: str) -> list[str]:
    """The leaf tasks of task or group ``name``, in the group's order."""
    tasks = offered()
    if name not in tasks:
        raise KeyError(f"{name}: no task or group of that name in the registered benchmarks' task folders")
    info = tasks[name]
    return [leaf for member in info.members for leaf in leaves(member)] if info.is_group else [name]


@functools.cache
def leaf(name: str) -> Leaf:
    """The task ``name`` with its YAML resolved (:func:`scifig_tasks.core.task_yaml.resolved`)."""
    info = offered()[name]
    if info.is_group:
        raise ValueError(f"{info.path}: {name} is a group, not a task")
    return Leaf(name, task_yaml.resolved(info.path))


# ---- documents -----------------------------------------------------------------------------------------------------

_DOCUMENTS: dict[str, tuple[int, datasets.Dataset]] = {}
_lock = threading.Lock()


def documents(name: str) -> datasets.Dataset:
    """The documents of leaf task ``name`` as lmms-eval's data loading gives them (docs/vlmeval.md, "How a task's
    YAML becomes a dataset"), images as stored cells; kept while the loaded data is the same."""
    from scifig_tasks.core.data import load_benchmark
    from scifig_tasks.core.image_cells import undecoded

    task = leaf(name)
    loaded = load_benchmark(task.source, task.split, hub_path=task.config.get("dataset_path"), reader=name)
    with _lock:
        kept = _DOCUMENTS.get(name)
        if kept is not None and kept[0] == id(loaded):
            return kept[1]
        found = undecoded(loaded)
        process = task.hook("process_docs")
        if callable(process):
            found = process(found)
        _DOCUMENTS[name] = (id(loaded), found)
        return found


def scoring_document(name: str, position: int) -> dict[str, Any]:
    """Document ``position`` of task ``name`` as lmms-eval gives it to ``process_results``: without its image and
    audio columns unless the YAML sets ``process_results_use_image``."""
    from scifig_tasks.core.data import without_media

    found = documents(name)
    if not leaf(name).config.get("process_results_use_image"):
        found = without_media(found)
    return found[position]


def questions(name: str) -> Iterator[tuple[str, int]]:
    """``(leaf task, document index)`` of every question of task or group ``name``, in lmms-eval's order."""
    for task in leaves(name):
        for position in range(len(documents(task))):
            yield task, position


# ---- prompts -------------------------------------------------------------------------------------------------------


def _call_prompt_hook(task: Leaf, hook: Callable[..., Any], doc: Mapping[str, Any]) -> Any:
    kwargs = task.prompt_kwargs
    if kwargs is None:
        return hook(doc)
    parameters = inspect.signature(hook).parameters
    takes = "lmms_eval_specific_kwargs" in parameters or any(
        parameter.kind is parameter.VAR_KEYWORD for parameter in parameters.values()
    )
    if takes:
        return hook(doc, lmms_eval_specific_kwargs=kwargs)
    return hook(doc, kwargs) if len(parameters) >= 2 else hook(doc)


def prompt(name: str, position: int) -> tuple[list[Segment], list[Image.Image]]:
    """The prompt of document ``position`` of leaf task ``name``: its segments in order (text, or an index into the
    images) and its images, from the YAML's ``doc_to_messages``, else ``doc_to_visual`` + ``doc_to_text``."""
    task, doc = leaf(name), documents(name)[position]
    to_messages = task.hook("doc_to_messages")
    if callable(to_messages):
        return _from_messages(name, _call_prompt_hook(task, to_messages, doc))
    to_visual, to_text = task.hook("doc_to_visual"), task.hook("doc_to_text")
    path = offered()[name].path
    if not callable(to_visual):
        raise ValueError(f"{path}: set doc_to_visual (or doc_to_messages) to a !function: VLMEvalKit needs images")
    if callable(to_text):
        text = _call_prompt_hook(task, to_text, doc)
    elif isinstance(to_text, str) and to_text in doc:
        text = doc[to_text]
    else:
        raise ValueError(f"{path}: set doc_to_text to a !function or a document field (it is {to_text!r})")
    images = [_image(item, path) for item in to_visual(doc)]
    return [*range(len(images)), str(text)], images


def _from_messages(name: str, messages: Any) -> tuple[list[Segment], list[Image.Image]]:
    path = offered()[name].path
    segments: list[Segment] = []
    images: list[Image.Image] = []
    for message in messages:
        role = message.get("role", "user") if isinstance(message, Mapping) else None
        if role != "user":
            raise ValueError(f"{path}: doc_to_messages gave a {role!r} message; VLMEvalKit datasets ask one user turn")
        content = message.get("content")
        for item in [content] if isinstance(content, str) else content or []:
            kind = "text" if isinstance(item, str) else item.get("type")
            if kind == "text":
                segments.append(item if isinstance(item, str) else str(item.get("text", "")))
            elif kind == "image":
                segments.append(len(images))
                images.append(_image(item.get("url", item.get("image")), path))
            else:
                raise ValueError(
                    f"{path}: doc_to_messages gave {kind!r} content; VLMEvalKit datasets take text and images"
                )
    return segments, images


def _image(value: Any, path: Any) -> Image.Image:
    from PIL import Image

    from scifig_tasks.core.images import open_image

    if isinstance(value, Image.Image):
        return value
    if isinstance(value, Mapping) and (value.get("bytes") or value.get("path")):
        return open_image(value)
    if isinstance(value, bytes):
        return Image.open(io.BytesIO(value))
    raise ValueError(f"{path}: a prompt hook gave an image as {type(value).__name__}; give a PIL image or a cell")


def image_file_bytes(image: Image.Image) -> bytes:
    """The bytes of a prompt image as a file: its stored bytes when it was opened from them
    (:func:`scifig_tasks.core.images.for_upload`), else a PNG."""
    buffer = io.BytesIO()
    image.save(buffer, format=image.format or "PNG")
    return buffer.getvalue()


# ---- scoring -------------------------------------------------------------------------------------------------------


def _pipeline(task: Leaf) -> list[Callable[[list[list[Any]], list[Any]], Any]]:
    """The ``apply`` of each filter of the task's pipeline (docs/vlmeval.md, "How a task's YAML becomes a dataset")."""
    given = task.config.get("filter_list")
    if not given:
        return [lambda responses, docs: [response[0] for response in responses]]  # lmms-eval's take_first
    chosen = next((entry for entry in given if entry.get("name") == "none"), given[0])
    found = []
    for step in chosen.get("filter") or []:
        function = step.get("function")
        kwargs = {key: value for key, value in step.items() if key != "function"}
        if isinstance(function, task_yaml.FunctionTag):
            function = function.resolve()
        elif isinstance(function, str):
            from lmms_eval.filters import get_filter

            function = get_filter(function)
        found.append(function(**kwargs).apply)
    return found


def filtered(name: str, doc: Mapping[str, Any], reply: str | None) -> Any:
    """The reply after the task's filter pipeline: what ``process_results`` gets for the one request."""
    responses: Any = [[reply]]
    for apply in _pipeline(leaf(name)):
        responses = list(apply(responses, [doc]))
    return responses[0]


def score(name: str, position: int, reply: str | None) -> dict[str, Any]:
    """The per-document metrics of leaf task ``name``'s YAML ``process_results`` for ``reply`` to document
    ``position``, charged to the task in the judge's accounting."""
    task = leaf(name)
    process = task.hook("process_results")
    if not callable(process):
        raise ValueError(f"{offered()[name].path}: process_results must be a !function")
    refuse_disagreement(name, process, offered()[name].options)
    process = for_task(process, offered()[name].options)
    doc = scoring_document(name, position)
    with judge.task_scope(name, hook=process):
        return dict(process(doc, [filtered(name, doc, reply)]))


def _aggregation(value: Any, where: str) -> Callable[..., Any]:
    if isinstance(value, task_yaml.FunctionTag):
        return value.resolve()
    if value == "mean":
        return lambda items: sum(items) / len(items)
    if isinstance(value, str):
        from lmms_eval.api.registry import get_aggregation

        return get_aggregation(value)
    raise ValueError(f"{where}: aggregation {value!r} is neither a name nor a !function")


def aggregate(name: str, records: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Leaf task ``name``'s metrics: each ``metric_list`` aggregation over its documents' per-document metrics."""
    path = offered()[name].path
    metrics: dict[str, Any] = {}
    for entry in leaf(name).config.get("metric_list") or []:
        metric = entry["metric"]
        values = [record[metric] for record in records if metric in record]
        if values:
            metrics[metric] = _aggregation(entry.get("aggregation", "mean"), str(path))(values)
    return metrics


def aggregate_group(name: str, results: Mapping[str, Mapping[str, Any]], sizes: Mapping[str, int]) -> dict[str, Any]:
    """Group ``name``'s metrics from its leaf tasks' (``results``, ``sizes``: documents): its YAML's
    ``aggregate_metric_list`` as lmms-eval applies it (each listed metric's aggregation over the leaves holding a
    metric whose name contains it; ``mean`` weighted by size when ``weight_by_size``, off by default); empty without
    one."""
    info = offered()[name]
    listed = task_yaml.resolved(info.path).get("aggregate_metric_list") or []
    found: dict[str, Any] = {}
    tasks = leaves(name)
    for metric in sorted({key for task in tasks for key in results[task]}):
        values = [results[task][metric] for task in tasks if metric in results[task]]
        counts = [sizes[task] for task in tasks if metric in results[task]]
        for entry in listed:
            if entry["metric"] not in metric:
                continue
            weight = bool(entry.get("weight_by_size", False))
            aggregation = entry.get("aggregation", "mean")
            if aggregation == "mean":
                weights = counts if weight else [1] * len(counts)
                found[metric] = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
            else:
                found[metric] = _aggregation(aggregation, str(info.path))(values, counts, weight)
    return found
