"""The default Plot Twist data: no published copy exists, so the tasks build the seeded synthetic set (paper
composition) once, into a cache, when ``SCIFIG_PLOT_TWIST_DATA`` is unset.
Manual: curation/plot_twist/README.md, "Default data for the tasks".
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from scifig_tasks.benchmarks.plot_twist.source import CACHE
from scifig_tasks.core import settings

GENERATOR_VERSION = 2
"""2: question wording as the paper's Table 6 (bar axis-range questions without "approximate", pie
``among the set of categories in the figure``)."""
DEFAULT_SEED = 0


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``SCIFIG_PLOT_TWIST_CACHE`` (:mod:`scifig_tasks.core.settings`; of ``environ``, or the process's settings)."""
    return settings.chosen(environ).get(CACHE)


def ensure_default_data(
    root: Path | None = None,
    *,
    seed: int = DEFAULT_SEED,
    plots_per_type: int | None = None,
    variants: Sequence[str] | None = None,
    workers: int | None = None,
    base_only: bool = False,
) -> Path:
    """The cached default set's parquet file, built on first use: every row, or with ``base_only`` the base charts'
    rows alone (arguments other than ``root`` and ``base_only`` are for tests)."""
    root = cache_root() if root is None else Path(root)
    if base_only and variants is not None:
        raise ValueError("base_only builds no robustness variant: give no variants")
    name = f"v{GENERATOR_VERSION}-seed{seed}" + ("-base" if base_only else "")
    if plots_per_type is not None or variants is not None:
        name += f"-plots{plots_per_type}" + ("" if base_only else f"-variants{'+'.join(variants or ['all'])}")
    target = root / name
    data = target / "test.parquet"
    if data.is_file():
        return data
    from curation.plot_twist.build import build_plot_twist

    root.mkdir(parents=True, exist_ok=True)
    _clear_stale(root, name)
    what = "the base charts of the seeded synthetic set" if base_only else "the seeded synthetic set"
    print(
        f"Plot Twist has no published copy and SCIFIG_PLOT_TWIST_DATA is not set: building {what} once into "
        f"{target} (later runs reuse it)",
        file=sys.stderr,
        flush=True,
    )
    staging = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(name)}{os.getpid()}-", dir=root))
    chosen = ["none"] if base_only else variants
    try:
        build_plot_twist(staging, seed=seed, plots_per_type=plots_per_type, variants=chosen, workers=workers)
        if target.exists() and not data.is_file():  # left by an interrupted older build: not a set
            aside = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(name)}{os.getpid()}-", dir=root))
            os.replace(target, aside / "incomplete")
            shutil.rmtree(aside, ignore_errors=True)
        try:
            os.rename(staging, target)
        except OSError:
            if not data.is_file():  # not a concurrent build that finished first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return data


def _staging_prefix(name: str) -> str:
    return f".{name}.partial-{socket.gethostname()}-"


def _clear_stale(root: Path, name: str) -> None:
    """Remove the staging directories of ``name`` that this host's builds left when they were killed."""
    prefix = _staging_prefix(name)
    for folder in root.glob(f"{glob.escape(prefix)}*"):
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True
