"""Several questions per source row: a source's ``questions`` rule applied to its checked rows
(:attr:`scifig_tasks.core.schema.BenchmarkSource.questions`).

Applied where the data is loaded (:func:`scifig_tasks.core.data.load_benchmark`), after the row checks, so every reader
sees one document per question; ``scifig export-upstream`` vendors this module for the exported tasks'
``process_docs``, so an exported task makes the same documents.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets

from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import undecoded
from scifig_tasks.core.schema import Questions


def expand_questions(rows: datasets.Dataset, questions: Questions, origin: str) -> datasets.Dataset:
    """The question documents of checked ``rows``: each row's ``questions(row)`` in row order (the rule of
    :attr:`scifig_tasks.core.schema.BenchmarkSource.questions`).

    Rule: the rule sees each row with its images as stored cells (nothing decoded) and its documents keep them so;
    a field a document shares with the row keeps the row's feature (an image stays an image), any other is inferred
    from the first document. A row the rule fails on, or whose documents do not all have the first document's
    fields, is a :class:`DataError` naming ``origin``, the row and the field; no documents at all, too."""
    stored = undecoded(rows)
    first = next(
        ((position, documents) for position, documents in _documents(stored, questions, origin) if documents), None
    )
    if first is None:
        raise DataError(origin, None, None, "its rows hold no questions (the source's `questions` rule gave none)")
    names = list(first[1][0])
    inferred = datasets.Dataset.from_list([{name: first[1][0][name] for name in names if name not in rows.features}])
    features = datasets.Features(
        {name: rows.features[name] if name in rows.features else inferred.features[name] for name in names}
    )

    def expand(batch: dict[str, list[Any]], positions: list[int]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {name: [] for name in names}
        row_batch = [{name: batch[name][offset] for name in batch} for offset in range(len(positions))]
        for position, row in zip(positions, row_batch, strict=True):
            for document in _questions_of(row, position, questions, origin):
                if list(document) != names:
                    differing = sorted(set(document) ^ set(names)) or names
                    raise DataError(
                        origin, position, differing[0], f"its questions have fields {list(document)}, not {names}"
                    )
                for name in names:
                    out[name].append(document[name])
        return out

    return stored.map(
        expand,
        batched=True,
        batch_size=64,
        with_indices=True,
        remove_columns=stored.column_names,
        features=features,
        load_from_cache_file=False,
        desc=f"questions of {Path(origin).name}",
    )


def _documents(
    stored: datasets.Dataset, questions: Questions, origin: str
) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    for position in range(len(stored)):
        yield position, _questions_of(stored[position], position, questions, origin)


def _questions_of(row: dict[str, Any], position: int, questions: Questions, origin: str) -> list[dict[str, Any]]:
    """``questions(row)``, a failure located at the row."""
    try:
        documents = questions(row)
    except Exception as exc:  # the benchmark's rule: any failure is this row's
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise DataError(origin, position, None, f"the source's `questions` rule failed on this row ({reason})") from exc
    if not isinstance(documents, list) or not all(isinstance(document, dict) for document in documents):
        raise DataError(origin, position, None, "the source's `questions` rule must return a list of dicts")
    return documents
