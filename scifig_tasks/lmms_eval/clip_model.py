"""``scifig_clip``: the SciFIBench CLIP / MetaCLIP zero-shot baseline as an lmms-eval model (paper §4; see
:mod:`scifig_tasks.core.clip_baseline`).

Manual: docs/lmms-eval.md, "CLIP baseline" (model args, offline weights) and "Data-parallel runs of the baseline
models".
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from loguru import logger
from tqdm import tqdm

from scifig_tasks.core import registry
from scifig_tasks.core.clip_baseline import ChoiceQuery, check_weights, clip_model
from scifig_tasks.lmms_eval.chance_model import join_data_parallel, task_sources


def query_of(task: str, doc: dict[str, Any], n_images: int) -> ChoiceQuery:
    """What a row of ``task`` compares: the ``contrastive`` rule its benchmark's description declares for the task's
    data source; ``ValueError`` naming the task when there is none."""
    source = task_sources().get(task)
    rule = registry.of_source(source).contrastive.get(source) if source in registry.sources() else None
    if rule is None:
        raise ValueError(
            f"scifig_clip cannot answer task {task!r}: its benchmark declares no contrastive rule for its data "
            f"({source or 'not a scifig task'}); scifig_clip answers image-text multiple choice such as scifibench"
        )
    return rule(doc, n_images)


class ScifigClip(lmms):
    is_simple = True

    def __init__(
        self,
        model: str = "ViT-H-14-378-quickgelu",
        pretrained: str = "dfn5b",
        model_config: str | None = None,
        device: str | None = None,
        batch_size: int | str = 8,
        seed: int | str = 0,
        max_batch_size: Any = None,
    ) -> None:
        super().__init__()
        choice = clip_model(model, pretrained, model_config)
        check_weights(choice)  # before anything is built: no Hub retries for weights that cannot come
        import open_clip
        import torch

        if choice.model_config:
            open_clip.add_model_config(choice.model_config)
        self.device = self._placement(device, join_data_parallel(self))
        torch.manual_seed(int(seed))
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(
            choice.model,
            pretrained=choice.pretrained,
            device=self.device,
            precision="fp16" if self.device.startswith("cuda") else "fp32",
        )
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(choice.model)
        self.batch_size = max(1, int(batch_size))

    def _placement(self, asked: str | None, own: Any) -> str:
        """The device the model runs on: ``asked`` (default cuda when available) in a single process; with several
        processes, each one's own device (``own``), so that N processes use N GPUs and the evaluator's gather (on
        ``self.device``) runs on the process group's device."""
        import torch

        if self.world_size == 1:
            return asked or ("cuda" if torch.cuda.is_available() else "cpu")
        if asked and torch.device(asked) != own and self.rank == 0:
            logger.warning(f"scifig_clip: device={asked} ignored with {self.world_size} processes: each uses its own")
        return str(own)

    def _embed_images(self, images: list[Any]) -> Any:
        import torch

        chunks = []
        for start in range(0, len(images), self.batch_size):
            pixels = torch.stack([self.preprocess(image) for image in images[start : start + self.batch_size]])
            chunks.append(self.model.encode_image(pixels.to(self.device), normalize=True))
        return torch.cat(chunks).float()

    def _embed_texts(self, texts: list[str]) -> Any:
        import torch

        chunks = []
        for start in range(0, len(texts), self.batch_size):
            tokens = self.tokenizer(texts[start : start + self.batch_size]).to(self.device)
            chunks.append(self.model.encode_text(tokens, normalize=True))
        return torch.cat(chunks).float()

    def choose(self, doc: dict[str, Any], images: list[Any], task: str) -> str:
        """The letter of the option with the highest image–text cosine similarity."""
        import torch

        query = query_of(task, doc, len(images))
        with torch.no_grad():
            if query.mode == "image_to_texts":
                scores = self._embed_images(images) @ self._embed_texts(list(query.texts)).T
            else:
                scores = self._embed_texts([query.text]) @ self._embed_images(images).T
        return chr(ord("A") + int(scores[0].argmax()))

    def generate_until(self, requests: list[Instance]) -> list[str]:
        answers = []
        for request in tqdm(requests, desc="scifig_clip", disable=self.rank != 0):
            _, _, doc_to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            answers.append(self.choose(doc, doc_to_visual(doc), task))
        return answers

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise NotImplementedError("scifig_clip answers single-turn multiple-choice tasks only")

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError("scifig_clip answers multiple-choice generation tasks only")
