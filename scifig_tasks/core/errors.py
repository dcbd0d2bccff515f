"""Loud, precise errors: bad data names the file, the row and the column; a bad configuration the file and key; a
mistake on the command line says what to set or run (:class:`CommandError`)."""

from __future__ import annotations


class DataError(ValueError):
    """A data problem located by file, 0-based row and column (``None`` when the whole file or split is at fault)."""

    def __init__(self, origin: str, row: int | None, column: str | None, problem: str) -> None:
        self.origin, self.row, self.column, self.problem = origin, row, column, problem
        where = origin
        if row is not None:
            where += f", row {row} (0-based)"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {problem}")


class ConfigError(ValueError):
    """A configuration problem located by file (or name) and key (``None`` when the whole file is at fault)."""

    kind = "configuration"
    """What is configured, first word of the message (subclasses name theirs)."""

    def __init__(self, source: str, key: str | None, problem: str) -> None:
        self.source, self.key, self.problem = source, key, problem
        where = source if key is None else f"{source}, key {key!r}"
        super().__init__(f"{self.kind} {where}: {problem}")


class CommandError(Exception):
    """A mistake the user can put right (an unknown name, a wrong argument): ``scifig`` prints it as one line,
    ``scifig COMMAND: WHAT — TODO``, and exits with ``status`` (2, as argparse does for a bad command line)."""

    def __init__(self, what: str, todo: str = "", status: int = 2) -> None:
        super().__init__(what)
        self.what, self.todo, self.status = what, todo, status
