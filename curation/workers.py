"""Worker processes that die with the process that started them, however it ends (SIGKILL included): the kernel's
parent-death signal on Linux, a watcher thread elsewhere; pools started with ``fork`` or ``spawn`` only.
Manual: docs/curation.md, "Worker processes".
"""

from __future__ import annotations

import ctypes
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

START_METHODS = ("fork", "spawn")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_S = 0.2  # the fallback watcher's polling interval


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _parent_death_signal() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    _kill_self()


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the pid of the process that started it) ends; end it now if it has."""
    if not _parent_death_signal():
        threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        _kill_self()


def _start_worker(parent: int, initializer: Callable[[], None] | None) -> None:
    die_with_parent(parent)
    if initializer is not None:
        initializer()


def process_pool(workers: int, start: str, initializer: Callable[[], None] | None = None) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes started with ``start`` (``fork`` or ``spawn``), each of
    which dies with this process and then runs ``initializer`` (a module-level function under ``spawn``)."""
    if start not in START_METHODS:
        raise ValueError(f"start method must be one of {', '.join(START_METHODS)}, got {start!r}")
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(start),
        initializer=_start_worker,
        initargs=(os.getpid(), initializer),
    )


def _dataloader_worker(parent: int, worker_id: int) -> None:
    die_with_parent(parent)


def dataloader_init() -> Callable[[int], None]:
    """A torch ``DataLoader`` ``worker_init_fn`` under which each worker dies with this process."""
    return functools.partial(_dataloader_worker, os.getpid())
