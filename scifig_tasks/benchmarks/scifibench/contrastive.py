"""What the contrastive (CLIP) baseline compares in a SciFIBench row (paper §4: the CLIP rows of Tables 2-3): the
figure against the option captions, or the caption against the option figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.scifibench.rules import caption_of
from scifig_tasks.core.clip_baseline import ChoiceQuery
from scifig_tasks.core.multiple_choice import strip_label


def choice_query(doc: Mapping[str, Any], n_images: int) -> ChoiceQuery:
    """The comparison for one row; raises for rows that are not image↔text multiple choice."""
    options = doc.get("Options")
    if not options:
        raise ValueError("a contrastive baseline needs a multiple-choice row with an 'Options' column")
    if n_images == 1:
        return ChoiceQuery("image_to_texts", texts=tuple(strip_label(option) for option in options))
    if n_images == len(options):
        return ChoiceQuery("text_to_images", text=caption_of(doc["Question"]))
    raise ValueError(f"{n_images} images for {len(options)} options: not an image↔text multiple-choice row")
