"""Plot Twist's rows as VLMEvalKit TSV columns and back (written without VLMEvalKit: ``scifig export-tsv``).
Manual: docs/vlmeval.md, "How the TSV files are written"."""

from __future__ import annotations

from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.vlmeval.tsv_layout import FLOAT, Field, TsvFormat

TSV_LAYOUT = TsvFormat(
    "image",
    (
        *(Field(name) for name in ("question", "answer", "q_id", "figure_id", "chart_type", "question_type")),
        Field("x_range", FLOAT),
        Field("y_range", FLOAT),
        Field("variant", default=plot_twist.BASE),
    ),
)
