"""Reproducible parquet output for the dataset builders: rows written in fixed-size row groups to ``<name>.partial``
and renamed when complete, so the same rows always give the same bytes and an interrupted build leaves no file
that looks finished."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_SIZE = 100


class ParquetRows:
    """Append rows with :meth:`add`; :meth:`close` publishes the file, :meth:`abort` removes the partial one."""

    def __init__(self, path: Path, features: datasets.Features, row_group_size: int = ROW_GROUP_SIZE) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.partial = path, path.with_name(path.name + ".partial")
        self.schema = features.arrow_schema
        self.row_group_size = row_group_size
        self.writer = pq.ParquetWriter(str(self.partial), self.schema)
        self.pending: list[dict[str, Any]] = []
        self.rows = 0

    def add(self, row: dict[str, Any]) -> None:
        self.pending.append(row)
        if len(self.pending) >= self.row_group_size:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(self.pending, schema=self.schema))
            self.rows += len(self.pending)
            self.pending = []

    def close(self) -> None:
        self.flush()
        self.writer.close()
        os.replace(self.partial, self.path)

    def abort(self) -> None:
        self.writer.close()
        self.partial.unlink(missing_ok=True)
