"""MMSci's rows as VLMEvalKit TSV columns and back (written without VLMEvalKit: ``scifig export-tsv``).
Manual: docs/vlmeval.md, "How the TSV files are written"."""

from __future__ import annotations

from scifig_tasks.vlmeval.tsv_layout import INT, JSON_LIST, Field, OptionLetters, TsvFormat

MCQ_TSV_LAYOUT = TsvFormat(
    "image",
    (
        Field("question"),
        OptionLetters("options"),
        Field("answer"),
        Field("options", JSON_LIST),
        Field("uid"),
        Field("figure_index", INT),
        *(Field(name) for name in ("setting", "category", "subject", "subfigure")),
    ),
)

CAPTION_TSV_LAYOUT = TsvFormat(
    "image",
    (
        Field("answer", key="caption"),  # VLMEvalKit's name for the reference
        Field("abstract"),
        Field("uid"),
        Field("figure_index", INT),
        Field("category"),
        Field("subject"),
    ),
)
