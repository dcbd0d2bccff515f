"""A benchmark's data schema: where its data lives and the columns every row must have.

Plain checks per cell and per row, the pinned revision, and the rule turning one row into several question documents;
no data library is imported. Manual: docs/data.md, 'A benchmark's data schema'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.core import settings
from scifig_tasks.core.settings import Settings

if TYPE_CHECKING:
    import datasets

UNPINNED = "unpinned"
"""The ``revision`` of a Hub source no commit could be pinned for: its newest revision (``main``) is loaded, and the
results record the commit that was."""

Questions = Callable[[Mapping[str, Any]], list[dict[str, Any]]]
"""Turns one checked source row (images as undecoded cells) into its question documents."""

RowCheck = Callable[[Any], str | None]
"""Returns a problem description for a bad cell value, ``None`` when the value is fine."""

CrossCheck = Callable[[Mapping[str, Any], str], tuple[str, str] | None]
"""Checks a whole row (its checked columns, images as undecoded cells) of the named split: ``(column, problem)`` for a
bad row, ``None`` when the row is fine."""


@dataclass(frozen=True)
class Column:
    """One required column: its name, whether it holds images (a single image or a list of them), a cell check."""

    name: str
    check: RowCheck | None = None
    image: bool = False
    image_list: bool = False


@dataclass(frozen=True)
class BenchmarkSource:
    """Where a benchmark's data lives: Hub id, split names (and older aliases), the env var that overrides it,
    and the columns every row must have."""

    name: str
    hub_path: str
    splits: tuple[str, ...]
    env_var: str
    columns: tuple[Column, ...]
    split_aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    optional_columns: tuple[Column, ...] = ()
    """Columns checked only when the data has them."""
    row_check: CrossCheck | None = None
    """A check across the columns of each row, after its cells passed."""
    key: tuple[str, ...] = ()
    """Columns whose values identify a row: two rows of a split with the same values are an error."""
    default_data: Callable[[], Path] | None = None
    """Builds (once, cached) and returns local data when the env var is unset and there is no Hub copy."""
    build_command: str = ""
    """The ``scifig curate`` command line that builds local data for this benchmark (``--out DIR``)."""
    unset_message: str = ""
    """The error when the env var is unset and there is neither a Hub copy nor default data (a generic one if empty)."""
    revision: str = UNPINNED
    """The pinned commit (40 hex digits) of the Hub dataset ``hub_path`` that scores are made from, or
    :data:`UNPINNED`; the benchmark's docs give its date and how it was chosen."""
    revision_var: str = ""
    """The setting that overrides ``revision`` (``SCIFIG_<BENCH>_REVISION``; ``main`` takes the newest)."""
    questions: Questions | None = None
    """A source row holding several questions: the rule giving one row's question documents, in order (None: each
    row is one question). Each document is a dict of the row's fields it keeps and the question's own, including
    its own value of the benchmark's ``document_id`` fields, so a document is named whatever its position; image
    cells are passed on as they are (shared, never copied). Applied after the row checks
    (:func:`scifig_tasks.core.data.load_benchmark`); the documents of one split must share their field names."""
    local_reader: Callable[[Path, str], datasets.Dataset | None] | None = None
    """A benchmark's own local layout: given the folder the data setting (``env_var``) names and a split name (the
    split's, then its older names), the split's rows with the Hub's columns, or ``None`` when the folder is not in that
    layout. Tried first for a folder, before the ``<split>.parquet`` and ``save_to_disk`` layouts; its rows are checked
    like any others (:func:`scifig_tasks.core.data.load_benchmark`)."""

    @property
    def default_split(self) -> str:
        return self.splits[0]

    def remedy(self) -> str:
        """The ways out when the data cannot be loaded, for the end of a one-line error."""
        built = f" (`{self.build_command}` builds it)" if self.build_command else ""
        return f"set {self.env_var}=DIR to local data{built}, or run `scifig demo` to try scifig offline"

    def split_names(self, split: str) -> tuple[str, ...]:
        """The split's Hub name followed by the older names it may have in earlier revisions or local copies."""
        return (split, *self.split_aliases.get(split, ()))

    def hub_revision(self, given: Settings | Mapping[str, str] | None = None) -> str | None:
        """The revision of ``hub_path`` to load: the ``revision_var`` setting when given, else the pin; ``None`` (the
        newest, ``main``) when unpinned."""
        chosen = settings.chosen(given).get(self.revision_var) if self.revision_var else None
        chosen = chosen or self.revision
        return None if chosen == UNPINNED else chosen

    def local_path(self, given: Settings | Mapping[str, str] | None = None) -> Path | None:
        """The local data the benchmark's setting (``env_var``) names, or None: of ``given`` settings, an environment
        mapping, or the process's settings (:func:`scifig_tasks.core.settings.current`)."""
        return settings.chosen(given).get(self.env_var)


def expect_str(allowed: tuple[str, ...] | None = None, non_empty: bool = True) -> RowCheck:
    """A check for string cells, optionally from a closed vocabulary."""

    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            return f"expected a string, got {type(value).__name__} {value!r}"
        if non_empty and not value.strip():
            return "expected a non-empty string"
        if allowed is not None and value not in allowed:
            return f"unknown value {value!r} (expected one of: {', '.join(allowed)})"
        return None

    return check


def expect_answer() -> RowCheck:
    """A check for gold answer strings: non-empty, and one that Python reads as a number (``float()``, which also reads
    ``nan``, ``inf``, ``Infinity`` and overflows ``1e309`` to ``inf``) must be finite. A non-finite gold is no answer
    to a figure question, and a model answering ``inf`` would match it."""
    text = expect_str()

    def check(value: Any) -> str | None:
        problem = text(value)
        if problem is not None:
            return problem
        try:
            number = float(value)
        except ValueError:
            return None
        if math.isfinite(number):
            return None
        return (
            f"{value!r} reads as {number}, not a finite number "
            "(nan, inf and numbers beyond the float range, such as 1e309, cannot be answers)"
        )

    return check


def expect_int(low: int | None = None, high: int | None = None) -> RowCheck:
    """A check for integer cells within ``[low, high]``."""

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected an integer, got {type(value).__name__} {value!r}"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"value {value} outside [{low}, {high}]"
        return None

    return check


def list_feature(feature: Any) -> Any:
    """A ``datasets`` list feature of ``feature`` (``datasets`` >= 4 names the type ``List``, older ones
    ``Sequence``); the data library is imported only when a feature is built."""
    import datasets

    kind = getattr(datasets, "List", None) or datasets.Sequence
    return kind(feature)
