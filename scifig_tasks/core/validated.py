"""Data are checked once: once per source in a process, and once across runs while the files stay the same.

A split that passed :func:`scifig_tasks.core.validation.validate` gets a record, a small JSON file in
``<datasets cache>/scifig_validated/`` (the folder where ``datasets`` keeps its Arrow copies of the same data). The
record's name is a digest of everything the verdict depends on:

* the files the rows come from, each with its size and modification time in nanoseconds: the local parquet or
  ``save_to_disk`` files, or the Arrow files ``datasets`` cached for a Hub dataset (and the dataset's fingerprint);
* the benchmark, the split, the columns checked and the names of the rules checking them;
* the validator's version: a digest of the source of every module in ``scifig_tasks/core`` (where the checks and
  the schemas live), so a release that changes any check sees no old record.

A later run, or ``scifig rescore``, of unchanged data therefore reads no image to check it. A changed file, a
different scifig, or data whose image cells name files (those files are read at load and are not in the key) is
checked again. Only passes are recorded: bad data stops every run with its file, row and column.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import datasets

_CORE = Path(__file__).parent


@cache
def validator_version() -> str:
    """Digest of the checks' source: every module of ``scifig_tasks/core``, by name and content."""
    digest = hashlib.blake2b(digest_size=16)
    for module in sorted(_CORE.rglob("*.py")):
        digest.update(module.relative_to(_CORE).as_posix().encode())
        digest.update(module.read_bytes())
    return digest.hexdigest()


def files_identity(paths: Iterable[Path]) -> list[list[Any]]:
    """Each file under ``paths`` (a file, or every file below a folder) with its size and modification time (ns)."""
    found: list[list[Any]] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(file for file in path.rglob("*") if file.is_file())
        for file in files:
            stat = file.stat()
            found.append([str(file.resolve()), stat.st_size, stat.st_mtime_ns])
    return found


def record_key(benchmark: str, split: str, checks: Sequence[str], dataset: datasets.Dataset, local: Path | None) -> str:
    """The record name of a split: the data's files (``local``, else the Arrow files of the loaded ``dataset``), the
    benchmark, split, the checks applied (columns and the names of their rules) and the validator's version."""
    cached = [Path(entry["filename"]) for entry in dataset.cache_files]
    identity = {
        "benchmark": benchmark,
        "split": split,
        "checks": list(checks),
        "files": files_identity([local] if local is not None else cached),
        "fingerprint": None if local is not None else dataset._fingerprint,
        "validator": validator_version(),
    }
    return hashlib.blake2b(json.dumps(identity, sort_keys=True).encode(), digest_size=20).hexdigest()


def _folder() -> Path:
    return Path(datasets.config.HF_DATASETS_CACHE) / "scifig_validated"


def is_recorded(key: str) -> bool:
    """Whether a split with this key passed validation before."""
    return (_folder() / f"{key}.json").is_file()


def record(key: str, origin: str, rows: int) -> None:
    """Record that the split ``key`` (read from ``origin``, ``rows`` rows) passed; a cache folder that cannot be
    written only costs the next run a check."""
    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".partial", delete=False, encoding="utf-8") as file:
            json.dump({"origin": origin, "rows": rows, "validator": validator_version()}, file)
        os.replace(file.name, folder / f"{key}.json")
    except OSError:
        return
