"""SciFIBench's rows as VLMEvalKit TSV columns and back (written without VLMEvalKit: ``scifig export-tsv``).
Manual: docs/vlmeval.md, "How the TSV files are written"."""

from __future__ import annotations

from scifig_tasks.core.multiple_choice import strip_label
from scifig_tasks.vlmeval.tsv_layout import INT, JSON_LIST, Field, OptionLetters, TsvFormat

TSV_LAYOUT = TsvFormat(
    "Images",
    (
        Field("question", key="Question"),
        OptionLetters("Options", strip_label),
        Field("answer", key="Answer"),
        Field("category", key="Category"),
        Field("ID", INT),
        Field("options", JSON_LIST, key="Options"),  # the labelled options, as published
    ),
)
