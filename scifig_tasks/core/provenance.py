"""What made a score: the environment block every scifig results file carries.

A number is reproducible only with what produced it. Every results file scifig writes or adds to — lmms-eval's
``*_results.json`` for scifig tasks, VLMEvalKit ``*_scifig_scores.json``, ``scifig rescore``'s re-scored runs — holds
one block under :data:`KEY`::

    {"scifig": {"version": "0.2.0", "commit": "<40 hex> or null", "modified": false},
     "python": "3.11.7",
     "libraries": {"lmms-eval": "0.7.3", "datasets": "5.2.0", "numpy": "2.4.6", ...},
     "judge": {"model": "gpt-4o-mini", "host": "api.openai.com"} or null}

``commit`` is the git commit of the source checkout scifig was imported from (``null`` when installed from a wheel),
``modified`` says whether tracked files differed from it. ``libraries`` are the installed distributions that can move
a score (:data:`SCORE_LIBRARIES`, plus the framework that ran), absent ones left out. The judge is named by model and
host only: no key, no user name, no path. What the frameworks record themselves (lmms-eval's task ``versions``,
VLMEvalKit's scores ``version``) is not repeated. ``scifig rescore`` compares the block it reads with the current
one (:func:`differences`) and says which versions differ; ``scifig report`` prints it per results file.
"""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from collections.abc import Mapping
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
