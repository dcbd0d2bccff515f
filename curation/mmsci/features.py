"""The MMSci local data layout's parquet features (``SCIFIG_MMSCI_DATA``): ``mcq/<split>.parquet`` and
``captioning/<split>.parquet``, exactly these columns in this order, images stored as bytes.
"""

from __future__ import annotations

import datasets

_LIST = getattr(datasets, "List", None) or datasets.Sequence  # datasets >= 4 names it List

MCQ_FEATURES = datasets.Features(
    {
        "uid": datasets.Value("string"),
        "figure_index": datasets.Value("int64"),
        "setting": datasets.Value("string"),
        "category": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": _LIST(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "subfigure": datasets.Value("string"),
    }
)
CAPTIONING_FEATURES = datasets.Features(
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
TABLES = {"mcq": MCQ_FEATURES, "captioning": CAPTIONING_FEATURES}
