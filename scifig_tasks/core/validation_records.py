"""Data are checked once: once per source in a process, and once across runs while the files stay the same.

A passed split leaves a record keyed by its files, the checks and scifig's checks' source; content digests name local
data in the results files. Manual: docs/data.md, 'Checked once'.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
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


def files_identity(paths: Iterable[Path], content: bool = True) -> list[list[Any]]:
    """Each file under ``paths`` (a file, or every file below a folder) with its size, modification time (ns) and,
    when ``content``, the digest of its bytes (:func:`content_digest`): a rewrite that keeps the size and sets the
    modification time back still changes the identity."""
    found: list[list[Any]] = []
    for path in paths:
        files = [path] if path.is_file() else sorted(file for file in path.rglob("*") if file.is_file())
        for file in files:
            stat = file.stat()
            entry: list[Any] = [str(file.resolve()), stat.st_size, stat.st_mtime_ns]
            found.append([*entry, content_digest(file)] if content else entry)
    return found


def data_digest(path: Path) -> str:
    """Which local data this is, by content alone: ``blake2b:`` and the digest of each file's name (relative to
    ``path``) and content digest (:func:`content_digest`, the digest the data checks compute and remember), so the
    same files give the same value wherever they lie and whatever their times."""
    root = path if path.is_dir() else path.parent
    files = [path] if path.is_file() else sorted(file for file in path.rglob("*") if file.is_file())
    digest = hashlib.blake2b(digest_size=20)
    for file in files:
        digest.update(f"{file.relative_to(root).as_posix()}\0{content_digest(file)}\n".encode())
    return f"blake2b:{digest.hexdigest()}"


_SETTLED_NS = 2 * 10**9
"""How old a file's change time must be for its digest to be remembered: a file system that keeps coarse times (a
second, two on FAT) could give a rewrite within that time the same ``stat``, so such a file is hashed again."""

_HASH_CHUNK = 2**20
"""Bytes read at a time when hashing a file."""

_DIGESTS: dict[tuple[str, tuple[int, ...]], str] = {}
"""The digests computed or read in this process, by path and version."""


def _version(stat: os.stat_result) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: device, inode, size, modification time and change time (ns).
    The change time is set by the kernel on every write and every ``utime``, and no call sets it back."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def content_digest(file: Path) -> str:
    """The blake2b digest of ``file``'s bytes (hex, 40 characters), computed once per version of the file
    (:func:`_version`) and remembered in this process and in ``<datasets cache>/scifig_digests/`` -- but only for a
    version whose change time is :data:`_SETTLED_NS` old and that did not change while it was read."""
    resolved = str(file.resolve())
    version = _version(file.stat())
    known = _DIGESTS.get((resolved, version)) or _remembered(resolved, version)
    if known is not None:
        _DIGESTS[resolved, version] = known
        return known
    digest = hashlib.blake2b(digest_size=20)
    buffer = bytearray(_HASH_CHUNK)
    view = memoryview(buffer)
    with open(file, "rb") as handle:
        before = _version(os.fstat(handle.fileno()))
        while read := handle.readinto(buffer):
            digest.update(view[:read])
        after = _version(os.fstat(handle.fileno()))
    found = digest.hexdigest()
    if before == after and time.time_ns() - before[-1] >= _SETTLED_NS:
        _DIGESTS[resolved, before] = found
        _remember(resolved, before, found)
    return found


def _digest_file(resolved: str) -> Path:
    name = hashlib.blake2b(resolved.encode(), digest_size=20).hexdigest()
    return Path(datasets.config.HF_DATASETS_CACHE) / "scifig_digests" / f"{name}.json"


def _remembered(resolved: str, version: tuple[int, ...]) -> str | None:
    """The digest remembered for this version of the file, if any (an unreadable memo is no memo)."""
    try:
        memo = json.loads(_digest_file(resolved).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(memo, dict) or memo.get("path") != resolved or memo.get("version") != list(version):
        return None
    digest = memo.get("digest")
    return digest if isinstance(digest, str) else None


def _remember(resolved: str, version: tuple[int, ...], digest: str) -> None:
    """Remember a version's digest for later runs; a cache folder that cannot be written only costs a hash."""
    path = _digest_file(resolved)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".partial", delete=False, encoding="utf-8") as f:
            json.dump({"path": resolved, "version": list(version), "digest": digest}, f)
        os.replace(f.name, path)
    except OSError:
        return


def record_key(benchmark: str, split: str, checks: Sequence[str], dataset: datasets.Dataset, local: Path | None) -> str:
    """The record name of a split: the data's files (``local``, with their content digests, else the Arrow files of
    the loaded ``dataset``, which its fingerprint names), the benchmark, split, the checks applied (columns and the
    names of their rules) and the validator's version."""
    cached = [Path(entry["filename"]) for entry in dataset.cache_files]
    identity = {
        "benchmark": benchmark,
        "split": split,
        "checks": list(checks),
        "files": files_identity([local]) if local is not None else files_identity(cached, content=False),
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
