"""``scifig_chance``: the offline chance baseline as an lmms-eval model (see :mod:`scifig_tasks.core.chance`).

It answers from the prompt text only, seeded per task, split and document: no image is decoded and no ground truth
is read, so it runs anywhere without network or weights. Model args: ``seed`` (default 0).
"""

from __future__ import annotations

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from tqdm import tqdm

from scifig_tasks.core import chance


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
        # args of a simple generation request: (context, gen_kwargs, doc_to_visual, doc_id, task, split)
        return [
            chance.guess(request.args[0], self.seed, salt=f"{request.args[4]}/{request.args[5]}/{request.args[3]}")
            for request in tqdm(requests, desc="scifig_chance")
        ]

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("scifig_chance answers single-turn generation tasks only")

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("scifig_chance answers generation tasks only")
