"""What made a score: the environment block every scifig results file carries.

scifig's version and commit, Python, the libraries that can move a score, the judge (model and host only) and the
data read. Manual: docs/protocols.md, 'What a results file records'.
"""

from __future__ import annotations

import copy
import importlib.metadata
import platform
import subprocess
import threading
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from scifig_tasks.core.release import VERSION

KEY = "scifig_environment"
FRAMEWORKS: dict[str, str] = {"lmms-eval": "lmms-eval", "vlmeval": "ms-vlmeval"}
"""The framework a run used -> its distribution."""
SCORE_LIBRARIES: tuple[str, ...] = (
    "datasets",  # data loading and the Hub copies
    "transformers",  # local models, tokenisation
    "torch",
    "open-clip-torch",  # the CLIP baseline
    "openai",  # the API models and the judge client
    "sacrebleu",  # MMSci captioning metrics
    "rouge-score",
    "pycocoevalcap",
    "bert-score",
    "numpy",
    "pillow",  # image decoding
    "matplotlib",  # generated data (GRAB, Plot Twist)
)
"""Distributions whose version can change a number scifig reports."""
SOURCE_ROOT = Path(__file__).resolve().parents[2]
NOT_RECORDED = f"no {KEY} recorded (written before scifig 0.2.0, or not by scifig)"
DATA = "data"
"""The block's entry naming the data each source read."""
UNKNOWN = "unknown"
"""The data revision of a results file that recorded none (written before scifig recorded it)."""

_DATA: dict[str, dict[str, Any]] = {}
"""What each source (by its :class:`scifig_tasks.core.schema.BenchmarkSource` name) loaded in this process."""
_DATA_LOCK = threading.Lock()


def note_data(source: str, record: Mapping[str, Any], split: str, rows: int) -> None:
    """Note that ``source`` loaded ``split`` (``rows`` rows) from ``record`` (``origin``, ``revision`` and where);
    a later load of the source at another revision replaces what it noted."""
    with _DATA_LOCK:
        known = _DATA.get(source)
        if known is None or known.get("revision") != record.get("revision"):
            known = _DATA[source] = {**record, "rows": {}}
        known["rows"][split] = rows


def loaded_data(names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """What the benchmark sources loaded in this process, by registry name (only ``names`` when given)."""
    from scifig_tasks.core import registry

    wanted = None if names is None else set(names)
    with _DATA_LOCK:
        return {
            name: copy.deepcopy(_DATA[source.name])
            for name, source in registry.sources().items()
            if source.name in _DATA and (wanted is None or name in wanted)
        }


def data_revisions(block: Any) -> dict[str, str]:
    """Source -> the data revision a block records (:data:`UNKNOWN` for a source recorded without one)."""
    record = block.get(DATA) if isinstance(block, Mapping) else None
    if not isinstance(record, Mapping):
        return {}
    return {
        str(name): str(entry.get("revision") or UNKNOWN) if isinstance(entry, Mapping) else UNKNOWN
        for name, entry in record.items()
    }


def short_revision(revision: str) -> str:
    """A revision for a line of text: a commit's first 12 digits, ``local <12 digits>`` for a digest of files."""
    if revision.startswith("blake2b:"):
        return f"local {revision.removeprefix('blake2b:')[:12]}"
    return revision[:12] if len(revision) == 40 else revision


def data_differences(first: Any, second: Any) -> dict[str, tuple[str, str]]:
    """The sources both blocks read whose data revision differs: name -> (first's, second's); a block's own
    :data:`UNKNOWN` is a difference only where the other side knows its revision."""
    a, b = data_revisions(first), data_revisions(second)
    return {name: (a[name], b[name]) for name in a if name in b and a[name] != b[name]}


def data_words(differences: Mapping[str, tuple[str, str]]) -> str:
    """``grab 6ad380242274 -> 0123456789ab, scifibench unknown -> ...`` for a line of text."""
    return ", ".join(f"{name} {short_revision(a)} -> {short_revision(b)}" for name, (a, b) in differences.items())


def scifig_version() -> str:
    """The version of this package (:data:`scifig_tasks.core.release.VERSION`, which pyproject reads)."""
    return VERSION


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@cache
def checkout() -> tuple[str | None, bool]:
    """``(commit, modified)`` of the git checkout this package is imported from; ``(None, False)`` otherwise."""
    if not (SOURCE_ROOT / ".git").exists():
        return None, False

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    return commit or None, bool(commit and git("status", "--porcelain", "--untracked-files=no"))


def judge_identity(environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The configured judge's model and host (``None`` when judging is off or not configured)."""
    from scifig_tasks.core.judge import JudgeConfig, endpoint_host

    try:
        config = JudgeConfig.from_env(environ)
    except (ValueError, OSError):  # the run itself reports the configuration error; its text may hold the URL
        return {"model": "unreadable configuration", "host": ""}
    if config is None:
        return None
    return {"model": config.model, "host": endpoint_host(config.base_url)}


def environment(framework: str | None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The block for a results file written now by a run under ``framework`` (``lmms-eval``, ``vlmeval``, None)."""
    names = ([FRAMEWORKS[framework]] if framework else []) + list(SCORE_LIBRARIES)
    versions = {name: installed_version(name) for name in names}
    commit, modified = checkout()
    return {
        "scifig": {"version": scifig_version(), "commit": commit, "modified": modified},
        "python": platform.python_version(),
        "libraries": {name: version for name, version in versions.items() if version is not None},
        "judge": judge_identity(environ),
        DATA: loaded_data(),
    }


def flat(block: Mapping[str, Any]) -> dict[str, str]:
    """A block as ``name -> value`` lines for comparison and display (absent entries left out)."""
    scifig = block.get("scifig") or {}
    judge = block.get("judge") or {}
    items = {
        "scifig": scifig.get("version"),
        "scifig commit": (scifig.get("commit") or "")[:12] + (" (modified)" if scifig.get("modified") else ""),
        "python": block.get("python"),
        **dict(sorted((block.get("libraries") or {}).items())),
        "judge": f"{judge.get('model')} at {judge.get('host')}" if judge else "none",
    }
    return {name: str(value) for name, value in items.items() if value}


def differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``name: recorded -> current`` for every entry that differs (a library present on one side only included)."""
    before, after = flat(recorded), flat(current)
    return [
        f"{name} {before.get(name, 'absent')} -> {after.get(name, 'absent')}"
        for name in [*before, *(name for name in after if name not in before)]
        if before.get(name) != after.get(name)
    ]


def summary(block: Mapping[str, Any] | None) -> str:
    """One line for reports: ``scifig 0.2.0 (commit 1a2b3c4d5e6f), python 3.11.7, datasets 5.2.0, ...``."""
    if not block:
        return NOT_RECORDED
    return ", ".join(f"{name} {value}" for name, value in flat(block).items())
