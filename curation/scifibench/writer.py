"""Questions written in exactly the published SciFIBench schema (paper §3.3; the Hub dataset's features and split
names), plus metadata columns.
Manual: curation/scifibench/README.md, "Output (``--out DIR``)" (columns, files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from curation.scifibench.pairs import Pairs
from curation.scifibench.questions import Question, Task, render
from scifig_tasks.benchmarks.scifibench.source import scifibench_features
from scifig_tasks.core.schema import list_feature

FEATURES = datasets.Features(
    {
        **scifibench_features(),
        "source_figure_id": datasets.Value("string"),
        "source_paper_id": datasets.Value("string"),
        "option_figure_ids": list_feature(datasets.Value("string")),
        "difficulty": datasets.Value("float64"),
        "tier": datasets.Value("string"),
        "negatives": datasets.Value("string"),
    }
)
DOMAINS = ("CS", "General")
ROW_GROUP = 64


def split_name(domain: str, task: Task) -> str:
    """The Hub split name of ``task`` in ``domain``: ``CS_Figure2Caption``, ``General_Caption2Figure``, ..."""
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r} (expected one of {', '.join(DOMAINS)})")
    return f"{domain}_{task}"


def rows_for(questions: Sequence[Question], task: Task, tier: str, pairs: Pairs, seed: int) -> list[dict[str, Any]]:
    """The output rows of ``questions`` (images included)."""
    rendered = [render(question, task, pairs.captions, pairs.figure_ids, seed) for question in questions]
    needed = sorted({pair for item in rendered for pair in item.images})
    images = dict(zip(needed, pairs.image_bytes(needed), strict=True))
    return [
        {
            "ID": question.pair,
            "Question": item.Question,
            "Options": item.Options,
            "Answer": item.Answer,
            "Category": question.category,
            "Images": [{"bytes": images[pair], "path": None} for pair in item.images],
            "source_figure_id": pairs.figure_ids[question.pair],
            "source_paper_id": pairs.paper_ids[question.pair],
            "option_figure_ids": [pairs.figure_ids[pair] for pair in item.option_pairs],
            "difficulty": question.difficulty,
            "tier": tier,
            "negatives": question.variant,
        }
        for question, item in zip(questions, rendered, strict=True)
    ]


class ParquetOut:
    """A parquet file with :data:`FEATURES`, written in row groups under a temporary name, renamed on close."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.partial = path, path.with_name(path.name + ".partial")
        self.schema = FEATURES.arrow_schema
        self.writer = pq.ParquetWriter(str(self.partial), self.schema)
        self.rows = 0

    def write(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.writer.write_table(pa.Table.from_pylist(rows, schema=self.schema))
            self.rows += len(rows)

    def close(self) -> None:
        self.writer.close()
        os.replace(self.partial, self.path)

    def abort(self) -> None:
        self.writer.close()
        self.partial.unlink(missing_ok=True)


def write_questions(
    path: Path, groups: Sequence[tuple[str, Sequence[Question]]], task: Task, pairs: Pairs, seed: int
) -> int:
    """Write the ``(tier, questions)`` groups for ``task`` to ``path``, in order; returns the number of rows."""
    out = ParquetOut(path)
    total = sum(len(questions) for _, questions in groups)
    try:
        with tqdm(total=total, desc=f"scifibench: writing {path.parent.name}/{path.name}", unit="q") as bar:
            for tier, questions in groups:
                for start in range(0, len(questions), ROW_GROUP):
                    chunk = questions[start : start + ROW_GROUP]
                    out.write(rows_for(chunk, task, tier, pairs, seed))
                    bar.update(len(chunk))
    except BaseException:
        out.abort()
        raise
    out.close()
    return out.rows


def write_table(path: Path, table: pa.Table) -> int:
    """Write an already built table of :data:`FEATURES` rows (used for the gold split) in row groups."""
    out = ParquetOut(path)
    try:
        for batch in table.cast(out.schema).to_batches(max_chunksize=ROW_GROUP):
            out.writer.write_batch(batch)
            out.rows += batch.num_rows
    except BaseException:
        out.abort()
        raise
    out.close()
    return out.rows
