"""A Hugging Face Hub cache laid out as ``huggingface_hub`` writes it, for loading Hub datasets offline in tests.

``datasets--<owner>--<name>/`` holds ``blobs/<sha256>`` (the files' bytes), ``snapshots/<commit>/<path>`` (relative
symlinks to the blobs) and ``refs/<branch>`` (the commit a branch names). With ``HF_HUB_OFFLINE`` set,
``huggingface_hub.snapshot_download`` resolves a commit by its ``snapshots/`` folder and a branch by its ``refs/`` file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import huggingface_hub
import pytest


def card(splits: Mapping[str, str]) -> bytes:
    """A dataset card whose ``configs`` name each split's data files (``split -> glob``), as ``push_to_hub`` writes."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split, pattern in splits.items():
        lines += [f"  - split: {split}", f"    path: {pattern}"]
    return ("\n".join([*lines, "---", ""])).encode()


def hub_dataset(cache: Path, repo_id: str, commit: str, files: Mapping[str, bytes], ref: str | None = "main") -> Path:
    """Put the snapshot ``commit`` of dataset ``repo_id`` (``files``: path in the repository -> bytes) into the Hub
    cache ``cache``; ``ref`` names the branch that points at it. Returns the snapshot folder."""
    folder = cache / f"datasets--{repo_id.replace('/', '--')}"
    snapshot = folder / "snapshots" / commit
    for name, content in files.items():
        blob = folder / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref is not None:
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return snapshot


def offline_hub(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """This process reads the Hub cache ``cache`` offline (the constants ``huggingface_hub`` read at import, and the
    variables for subprocesses)."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    for name, value in {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}.items():
        monkeypatch.setenv(name, value)
