"""MMSci's data (no published Hub copy): the local layout ``SCIFIG_MMSCI_DATA`` names, its columns and checks.

The folder holds ``mcq/<split>.parquet`` and ``captioning/<split>.parquet`` (splits ``test`` and ``dev``). Multiple
choice rows are keyed by ``uid``, ``figure_index``, ``setting``, ``subfigure`` (one question per figure, setting and
sub-figure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.core.schema import BenchmarkSource, Column, expect_int, expect_str, list_feature
from scifig_tasks.core.settings import Settings

if TYPE_CHECKING:
    import datasets


@dataclass(frozen=True)
class _SubdirSource(BenchmarkSource):
    """A source whose local data is the ``subdir`` folder of the directory its env var names."""

    subdir: str = ""

    def local_path(self, given: Settings | Mapping[str, str] | None = None) -> Path | None:
        base = super().local_path(given)
        return None if base is None else base / self.subdir


_MMSCI_UNSET = (
    "is not set, and MMSci has no Hugging Face copy: build the local layout with "
    "`scifig curate mmsci --articles ARTICLES --out DIR` "
    "(from article records) or convert a public copy with `scifig curate mmsci-from-authors` / "
    "`scifig curate mmsci-from-vlmeval` (these give the dev split: run the mmsci_dev / mmsci_captioning_dev "
    "tasks), then `export SCIFIG_MMSCI_DATA=DIR`; DIR holds mcq/<split>.parquet and captioning/<split>.parquet"
)


def _mmsci_options(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) != len(mmsci.LETTERS):
        return f"expected a list of {len(mmsci.LETTERS)} option strings, got {value!r:.120}"
    for index, option in enumerate(value):
        if not isinstance(option, str) or not option.strip():
            return f"option {index} must be a non-empty string, got {option!r:.80}"
    return None


def _mmsci_mcq_row(row: Mapping[str, Any], split: str) -> tuple[str, str] | None:
    if (row["setting"] == "fig2cap") != (not row["subfigure"].strip()):
        return "subfigure", f"must be empty for fig2cap and a sub-figure label otherwise, got {row['subfigure']!r}"
    if row["setting"] == "subcap2fig" and mmsci.subfigure_option(row["subfigure"]) not in row["options"]:
        return "options", f"setting III options must be sub-figure labels including ({row['subfigure']})"
    return None


_MMSCI_FIGURE = (Column("uid", expect_str()), Column("figure_index", expect_int(low=0)))
"""The columns naming a figure: its article and its place there."""
_MMSCI_ARTICLE = (Column("category", expect_str()), Column("subject", expect_str()), Column("image", image=True))

MMSCI_MCQ = _SubdirSource(
    name="MMSci multiple choice",
    hub_path="",
    splits=("test", "dev"),
    env_var="SCIFIG_MMSCI_DATA",
    build_command="scifig curate mmsci --articles ARTICLES --out DIR",
    columns=(
        *_MMSCI_FIGURE,
        Column("setting", expect_str(mmsci.SETTINGS)),
        *_MMSCI_ARTICLE,
        Column("question", expect_str()),
        Column("options", _mmsci_options),
        Column("answer", expect_str(mmsci.LETTERS)),
        Column("subfigure", expect_str(non_empty=False)),
    ),
    row_check=_mmsci_mcq_row,
    key=("uid", "figure_index", "setting", "subfigure"),
    unset_message=_MMSCI_UNSET,
    subdir="mcq",
)

MMSCI_CAPTIONING = replace(
    MMSCI_MCQ,
    name="MMSci captioning",
    columns=(*_MMSCI_FIGURE, *_MMSCI_ARTICLE, Column("caption", expect_str()), Column("abstract", expect_str())),
    row_check=None,
    key=(),
    subdir="captioning",
)
"""MMSci (no published Hub copy; layout of ``SCIFIG_MMSCI_DATA``: ``mcq/`` and ``captioning/`` folders of
``<split>.parquet`` files, splits ``test`` and ``dev``)."""


def mmsci_mcq_features() -> datasets.Features:
    import datasets

    return datasets.Features(
        {
            "uid": datasets.Value("string"),
            "figure_index": datasets.Value("int64"),
            "setting": datasets.Value("string"),
            "category": datasets.Value("string"),
            "subject": datasets.Value("string"),
            "image": datasets.Image(),
            "question": datasets.Value("string"),
            "options": list_feature(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "subfigure": datasets.Value("string"),
        }
    )


def mmsci_captioning_features() -> datasets.Features:
    import datasets

    return datasets.Features(
        {
            "uid": datasets.Value("string"),
            "figure_index": datasets.Value("int64"),
            "category": datasets.Value("string"),
            "subject": datasets.Value("string"),
            "image": datasets.Image(),
            "caption": datasets.Value("string"),
            "abstract": datasets.Value("string"),
        }
    )


"""The MMSci local layout's parquet features: exactly these columns, in this order, images stored as bytes."""
