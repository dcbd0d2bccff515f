"""``scifig_chance``: the offline chance baseline as an lmms-eval model (see :mod:`scifig_tasks.core.chance`),
answering from the prompt text only, seeded per task, split and document.

Manual: docs/lmms-eval.md, "Offline chance baseline" and "Data-parallel runs of the baseline models".
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from tqdm import tqdm

from scifig_tasks.core import chance, task_files


@cache
def task_sources() -> Mapping[str, str]:
    """Task name -> the ``metadata.scifig_source`` of its YAML (``include`` templates resolved), for every task of a
    registered benchmark's task folder (:func:`scifig_tasks.core.task_files.scifig_tasks`)."""
    return {name: info.source for name, info in task_files.scifig_tasks().items() if info.source is not None}


def guesser_for(task: str) -> chance.Guesser:
    """The chance rule of ``task``'s benchmark; raises ``ValueError`` naming the task when there is none."""
    source = task_sources().get(task)
    if source is None:
        raise ValueError(
            f"scifig_chance answers scifig's tasks only: task {task!r} is not defined in a registered benchmark's "
            "task folder, so its answer format is unknown"
        )
    try:
        return chance.answer_space(source)
    except ValueError as exc:
        raise ValueError(f"scifig_chance cannot answer task {task!r}: {exc}") from None


def join_data_parallel(model: lmms) -> Any:
    """Give ``model`` its place in lmms-eval's data parallelism, as lmms-eval's own models do; return the device of
    this process (a ``torch.device``: ``cuda:<local rank>`` under ``accelerate launch`` on GPUs, ``cpu`` under
    ``ACCELERATE_USE_CPU=true`` or with no GPU).

    Sets ``model.accelerator`` (one ``Accelerator`` per process; under a launcher it joins the process group:
    NCCL on GPUs, gloo on CPUs), ``model._rank`` (the global process index, as the evaluator sets it) and
    ``model._world_size``. A single process gets rank 0 of 1.
    """
    from accelerate import Accelerator

    accelerator = Accelerator()
    model.accelerator = accelerator
    model._rank = accelerator.process_index
    model._world_size = accelerator.num_processes
    return accelerator.device


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
        self.device = join_data_parallel(self)  # the evaluator gathers each rank's request count on it

    def generate_until(self, requests: list[Instance]) -> list[str]:
        for task in dict.fromkeys(request.task_name for request in requests):
            guesser_for(task)  # every task checked before any answer
        progress = tqdm(requests, desc="scifig_chance", disable=self.rank != 0)
        return [self._answer(request) for request in progress]

    def _answer(self, request: Instance) -> str:
        # args of a simple generation request: (context, gen_kwargs, doc_to_visual, doc_id, task, split); doc_id is
        # the document's index in its split on every rank (the evaluator shards by index, it does not renumber)
        prompt, task, split, doc_id = request.args[0], request.task_name, request.args[5], request.doc_id
        try:
            return chance.guess(prompt, task_sources()[task], self.seed, salt=chance.salt(task, split, doc_id))
        except ValueError as exc:
            raise ValueError(f"scifig_chance: task {task!r}, split {split!r}, doc {doc_id}: {exc}") from None

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("scifig_chance answers single-turn generation tasks only")

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("scifig_chance answers generation tasks only")
