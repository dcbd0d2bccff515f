"""Turn SFT examples into Qwen2-VL training tensors with the loss on assistant tokens only, prompts rendered with the
model's own chat template, sequences capped at ``max_length`` (MMSci paper, Table 9: 4096).
Manual: finetune/README.md, "What is trained".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scifig_finetune.data import IMAGE_PLACEHOLDER, SftExample, image_size, open_rgb

IGNORE_INDEX = -100


def chat_messages(example: SftExample) -> list[dict[str, Any]]:
    """The example as processor chat messages: ``<image>`` placeholders become image parts, in order."""
    messages = []
    for message in example.messages:
        parts: list[dict[str, Any]] = []
        pieces = message["content"].split(IMAGE_PLACEHOLDER)
        for index, piece in enumerate(pieces):
            if index:
                parts.append({"type": "image"})
            if piece:
                parts.append({"type": "text", "text": piece})
        messages.append({"role": message["role"], "content": parts})
    return messages


@dataclass(frozen=True)
class Plan:
    """Token length of an example before truncation and what :func:`encode` will do with it."""

    length: int
    image_tokens_end: int  # index after the last image token (0 without images)
    action: str  # "keep" | "truncate" | "drop"


class Encoder:
    """Encodes examples for one processor (Qwen2-VL / Qwen2.5-VL style: ``image_token`` + ``merge_size``)."""

    def __init__(self, processor: Any, max_length: int) -> None:
        for attribute in ("image_token", "tokenizer", "image_processor", "apply_chat_template"):
            if not hasattr(processor, attribute):
                raise TypeError(f"unsupported processor {type(processor).__name__}: no {attribute!r} (Qwen2-VL-style)")
        if max_length < 8:
            raise ValueError(f"max_length must be >= 8, got {max_length}")
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.max_length = max_length
        self.image_token = processor.image_token
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(self.image_token)
        self.merge_size = int(processor.image_processor.merge_size)

    def _render(self, messages: Sequence[Mapping[str, Any]], generation_prompt: bool) -> str:
        return self.processor.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt
        )

    def _token_ids(self, text: str, image_tokens: Sequence[int]) -> list[int]:
        pieces = text.split(self.image_token)
        if len(pieces) - 1 > len(image_tokens):
            raise ValueError(f"rendered text holds {len(pieces) - 1} image tokens for {len(image_tokens)} image(s)")
        expanded = pieces[0] + "".join(
            self.image_token * count + piece for count, piece in zip(image_tokens, pieces[1:], strict=False)
        )
        return self.tokenizer(expanded, add_special_tokens=False)["input_ids"]

    def predicted_image_tokens(self, example: SftExample) -> list[int]:
        """Vision tokens per image from the image sizes alone (the processor's resize rule), without decoding."""
        from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

        image_processor = self.processor.image_processor
        size = image_processor.size
        patch = int(image_processor.patch_size)
        factor = patch * self.merge_size
        counts = []
        for ref in example.images:
            width, height = image_size(ref)
            resized_height, resized_width = smart_resize(
                height, width, factor=factor, min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"]
            )
            counts.append((resized_height // patch) * (resized_width // patch) // self.merge_size**2)
        return counts

    def plan(self, example: SftExample) -> Plan:
        """Length and truncation decision from text and image sizes only (cheap; used to filter the data)."""
        counts = self.predicted_image_tokens(example)
        ids = self._token_ids(self._render(chat_messages(example), False), counts)
        return self._plan(ids)

    def _plan(self, ids: Sequence[int]) -> Plan:
        positions = [index for index, token in enumerate(ids) if token == self.image_token_id]
        end = positions[-1] + 1 if positions else 0
        if len(ids) <= self.max_length:
            action = "keep"
        elif end <= self.max_length - 1:  # at least one position left after the images
            action = "truncate"
        else:
            action = "drop"
        return Plan(len(ids), end, action)

    def encode(self, example: SftExample) -> dict[str, Any]:
        """Tensors for one example: ``input_ids``, ``attention_mask``, ``labels`` (1-D) plus the processor's vision
        inputs. Raises ValueError for an example that :meth:`plan` would drop."""
        import torch

        messages = chat_messages(example)
        images = [open_rgb(ref) for ref in example.images]
        text = self._render(messages, False)
        batch = self.processor(text=[text], images=images or None, return_tensors="pt")
        ids = batch["input_ids"][0].tolist()
        grid = batch.get("image_grid_thw")
        counts = [] if grid is None else [int(math.prod(row)) // self.merge_size**2 for row in grid.tolist()]
        if self._token_ids(text, counts) != ids:
            raise ValueError(f"example {example.id!r}: tokenizer and processor disagree on the token ids")
        labels = [IGNORE_INDEX] * len(ids)
        for turn, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            start = len(self._token_ids(self._render(messages[:turn], True), counts))
            upto = self._token_ids(self._render(messages[: turn + 1], False), counts)
            if ids[: len(upto)] != upto or start > len(upto):
                raise ValueError(
                    f"example {example.id!r}: the chat template's renderings are not prefixes of each other; "
                    f"cannot locate assistant turn {turn}"
                )
            labels[start : len(upto)] = ids[start : len(upto)]
        plan = self._plan(ids)
        if plan.action == "drop":
            raise ValueError(f"example {example.id!r}: {plan.length} tokens, images end at {plan.image_tokens_end}")
        keep = min(len(ids), self.max_length)
        encoded: dict[str, Any] = {
            "input_ids": torch.tensor(ids[:keep]),
            "attention_mask": torch.ones(keep, dtype=torch.long),
            "labels": torch.tensor(labels[:keep]),
        }
        if "mm_token_type_ids" in batch:
            encoded["mm_token_type_ids"] = batch["mm_token_type_ids"][0][:keep]
        for key in ("pixel_values", "image_grid_thw"):
            if key in batch:
                encoded[key] = batch[key]
        return encoded


class Collator:
    """Right-pads a batch of encoded examples; vision inputs are concatenated in example order."""

    def __init__(self, pad_token_id: int) -> None:
        self.pad_token_id = pad_token_id

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        longest = max(len(feature["input_ids"]) for feature in features)
        pads = {"input_ids": self.pad_token_id, "attention_mask": 0, "labels": IGNORE_INDEX, "mm_token_type_ids": 0}
        batch: dict[str, Any] = {}
        for key, value in pads.items():
            if key not in features[0]:
                continue
            rows = []
            for feature in features:
                row = feature[key]
                rows.append(torch.cat([row, torch.full((longest - len(row),), value, dtype=row.dtype)]))
            batch[key] = torch.stack(rows)
        for key in ("pixel_values", "image_grid_thw"):
            parts = [feature[key] for feature in features if key in feature]
            if parts:
                batch[key] = torch.cat(parts)
        return batch
