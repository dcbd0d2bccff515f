"""``scifig_chance``: the offline chance baseline as an lmms-eval model (see :mod:`scifig_tasks.core.chance`).

It answers from the prompt text only, seeded per task, split and document: no image is decoded and no ground truth
is read, so it runs anywhere without network or weights. Model args: ``seed`` (default 0).

Which benchmark's rule answers a request is decided by the task lmms-eval names with it (``Instance.task_name``):
the ``metadata.scifig_source`` that task's YAML under this package's task folder declares (:func:`task_sources`).
Before answering anything, every task of the batch is checked: a task that is not this package's, or whose
benchmark has no chance answer (MMSci captioning), stops the run with one line naming the task.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from tqdm import tqdm

from scifig_tasks.core import chance
from scifig_tasks.lmms_eval import TASKS_DIR


@cache
def task_sources() -> Mapping[str, str]:
    """Task name -> the ``metadata.scifig_source`` of its YAML, for every task defined under this package's task
    folder (read with lmms-eval's own YAML loader, ``include`` templates resolved)."""
    from lmms_eval.utils import load_yaml_config

    found: dict[str, str] = {}
    for path in sorted(TASKS_DIR.rglob("*.yaml")):
        config = load_yaml_config(str(path), mode="simple")
        metadata = config.get("metadata")
        if isinstance(config.get("task"), str) and isinstance(metadata, dict) and "scifig_source" in metadata:
            found[config["task"]] = str(metadata["scifig_source"])
    return found


def guesser_for(task: str) -> chance.Guesser:
    """The chance rule of ``task``'s benchmark; raises ``ValueError`` naming the task when there is none."""
    source = task_sources().get(task)
    if source is None:
        raise ValueError(
            f"scifig_chance answers scifig's tasks only: task {task!r} is not defined under {TASKS_DIR}, so its "
            "answer format is unknown"
        )
    try:
        return chance.answer_space(source)
    except ValueError as exc:
        raise ValueError(f"scifig_chance cannot answer task {task!r}: {exc}") from None


class ScifigChance(lmms):
    is_simple = True

    # lmms-eval passes these to every model; a guesser has no use for them.
    _FRAMEWORK_ARGS = frozenset({"batch_size", "max_batch_size", "device"})

    def __init__(self, seed: int | str = 0, **kwargs: object) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - self._FRAMEWORK_ARGS)
        if unknown:
            raise ValueError(f"scifig_chance: unknown model_args {unknown} (supported: seed)")
        self.seed = int(seed)

    def generate_until(self, requests: list[Instance]) -> list[str]:
        for task in dict.fromkeys(request.task_name for request in requests):
            guesser_for(task)  # every task checked before any answer
        return [self._answer(request) for request in tqdm(requests, desc="scifig_chance")]

    def _answer(self, request: Instance) -> str:
        # args of a simple generation request: (context, gen_kwargs, doc_to_visual, doc_id, task, split)
        prompt, task, split, doc_id = request.args[0], request.task_name, request.args[5], request.doc_id
        try:
            return chance.guess(prompt, task_sources()[task], self.seed, salt=f"{task}/{split}/{doc_id}")
        except ValueError as exc:
            raise ValueError(f"scifig_chance: task {task!r}, split {split!r}, doc {doc_id}: {exc}") from None

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("scifig_chance answers single-turn generation tasks only")

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("scifig_chance answers generation tasks only")
