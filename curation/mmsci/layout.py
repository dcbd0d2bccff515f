"""An import of a public MMSci copy written in the local layout of ``SCIFIG_MMSCI_DATA``, the layout
``scifig curate mmsci`` writes (:mod:`.build`): ``mcq/<split>.parquet`` and ``captioning/<split>.parquet`` in the
features ``mmsci_*_features()`` of :mod:`scifig_tasks.benchmarks.mmsci.source`, ``curation.json`` (questions and
answer letters per setting, captioning items, items dropped) and the dataset card (:mod:`.card`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from curation.mmsci.card import write_card
from curation.mmsci.items import Caption, Mcq
from curation.parquet import ParquetRows
from scifig_tasks.benchmarks.mmsci.rules import SETTINGS
from scifig_tasks.benchmarks.mmsci.source import mmsci_captioning_features, mmsci_mcq_features


def write_split(out: Path, split: str, mcq: Sequence[Mcq] | None, captions: Sequence[Caption] | None) -> None:
    """Write the split's tables (a table whose source was not given, ``None``, is not written)."""
    for table, features, items in (
        ("mcq", mmsci_mcq_features(), mcq),
        ("captioning", mmsci_captioning_features(), captions),
    ):
        if items is None:
            continue
        writer = ParquetRows(out / table / f"{split}.parquet", features)
        try:
            for item in tqdm(items, desc=f"mmsci: {table}/{split}", unit="row"):
                writer.add(item.row())
        except BaseException:
            writer.abort()
            raise
        writer.close()


def summarise(mcq: Sequence[Mcq], captions: Sequence[Caption]) -> tuple[dict[str, Any], dict[str, Any]]:
    per_setting = {
        setting: {
            "questions": sum(1 for item in mcq if item.setting == setting),
            "answers": dict(sorted(Counter(item.answer for item in mcq if item.setting == setting).items())),
        }
        for setting in SETTINGS
    }
    return per_setting, {"items": len(captions)}


def finish(out: Path, summary: dict[str, Any]) -> dict[str, Any]:
    (out / "curation.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(out, summary)
    return summary


def dropped_note(dropped: dict[str, dict[str, int]]) -> str:
    counts = {split: entries.get("subcap2fig not convertible", 0) for split, entries in dropped.items()}
    text = ", ".join(f"{split} {count}" for split, count in counts.items())
    return (
        "Setting III: the source holds the authors' within-figure variant (sub-figure -> sub-caption); items were "
        "converted to the paper's setting III (sub-caption -> sub-figure label) where the figure's caption is known "
        f"and every option is one of its sub-captions; dropped otherwise: {text}."
    )
