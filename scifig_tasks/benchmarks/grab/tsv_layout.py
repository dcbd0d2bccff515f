"""GRAB's rows as VLMEvalKit TSV columns and back (written without VLMEvalKit: ``scifig export-tsv``).
Manual: docs/vlmeval.md, "How the TSV files are written"."""

from __future__ import annotations

from scifig_tasks.vlmeval.tsv_layout import INT, Field, TsvFormat

TSV_LAYOUT = TsvFormat(
    "decoded_image",
    (
        Field("question"),
        Field("answer"),
        Field("pid", INT),
        Field("task"),
        Field("category"),
        Field("complexity", INT),
        Field("source_image", key="image"),  # the published image file name; the pixels are in ``image``
    ),
)
