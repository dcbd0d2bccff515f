"""A Dask cluster for the curation steps that outgrow one machine (``scifig curate scifibench --cluster``): a local
one on this machine by default, or a running one by its scheduler's address; tasks run there with their results
back in order, and every worker checked to see the files the tasks read.
Manual: docs/scale-out.md, "SciFIBench curation on a Dask cluster".
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

LOCAL = "local"
"""``--cluster local``: a cluster of worker processes on this machine, started and stopped by the command."""
FROM_DASK_CONFIG = ""
"""A bare ``--cluster``: Dask's own ``scheduler-address`` setting (``DASK_SCHEDULER_ADDRESS``, a Dask config file),
else a local cluster."""
CONNECT_TIMEOUT_S = 30
"""How long a scheduler that does not answer is waited for (Dask's own default)."""
LOCAL_HOST = "127.0.0.1"  # the local cluster listens on the loopback interface only


class ClusterError(ValueError):
    """A cluster that cannot do the work (unreachable, or a worker that does not see the files): one line."""


def cluster_address(choice: str) -> str:
    """The scheduler address ``--cluster CHOICE`` means: ``local``, an address as given, or for a bare ``--cluster``
    (``FROM_DASK_CONFIG``) Dask's ``scheduler-address`` setting, else ``local``."""
    if choice != FROM_DASK_CONFIG:
        return choice
    import dask

    return str(dask.config.get("scheduler-address", None) or LOCAL)


def local_workers() -> int:
    """Worker processes of a local cluster: one per CPU this process may use (each runs one task at a time)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class Cluster:
    """The cluster ``--cluster`` chose, started (or reached) on first use by :meth:`client` and let go by
    :meth:`close`: a run whose embeddings and neighbours are all cached starts nothing. ``workers``: the local
    cluster's worker processes (default :func:`local_workers`), one thread each."""

    choice: str = LOCAL
    workers: int | None = None
    _client: Any = field(default=None, init=False, repr=False)
    _local: Any = field(default=None, init=False, repr=False)

    @property
    def address(self) -> str:
        return cluster_address(self.choice)

    def client(self) -> Any:
        if self._client is None:
            self._client = self._start()
        return self._client

    def _start(self) -> Any:
        from dask.distributed import Client, LocalCluster

        address = self.address
        if address != LOCAL and self.workers is not None:
            raise ClusterError(f"--cluster-workers sizes a local cluster; the one at {address} has its own workers")
        if address == LOCAL:
            workers = self.workers or local_workers()
            log(f"starting a local Dask cluster: {workers} worker processes, 1 thread each, on {LOCAL_HOST}")
            before = dict(os.environ)
            try:
                self._local = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    host=LOCAL_HOST,
                    dashboard_address=None,
                    scheduler_kwargs={"dashboard_address": f"{LOCAL_HOST}:0"},  # its health page: any free port
                    silence_logs=logging.CRITICAL,  # a task's error is said once, by the command
                )
            finally:  # Dask's nanny sets OMP_NUM_THREADS=1 (and more) here to start its workers with them: Faiss,
                # loaded after it in this process, ran its k-means, re-ranking and recall check on one thread
                os.environ.clear()
                os.environ.update(before)
            client = Client(self._local, set_as_default=False)
            client.register_plugin(_quick_exit(), name="scifig-quick-exit")
            return client
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {address} ({type(exc).__name__}: {exc}); start it "
                "(dask scheduler, then dask worker ADDRESS on each machine) or give another --cluster"
            ) from None
        threads = worker_threads(client)
        if not threads:
            client.close()
            raise ClusterError(f"the Dask scheduler at {address} has no workers: start some (dask worker {address})")
        log(f"Dask cluster at {address}: {len(client.nthreads())} workers, {threads} threads")
        return client

    def threads(self) -> int:
        """Threads of every worker together (how many tasks run at once)."""
        return worker_threads(self.client())

    def map(
        self,
        function: Callable[..., Any],
        calls: Sequence[tuple[Any, ...]],
        desc: str,
        unit: str = "task",
        sizes: Sequence[int] | None = None,
    ) -> list[Any]:
        """``function(*call)`` for every call, as a task on the cluster: :func:`run_tasks`."""
        return run_tasks(self.client(), function, calls, desc, unit, sizes)

    def check_shared(self, folder: Path, what: str, option: str) -> None:
        check_shared(self.client(), folder, what, option)

    def check_input(self, path: Path, option: str) -> None:
        check_input(self.client(), path, option)

    def close(self) -> None:
        for part in (self._client, self._local):
            if part is not None:
                with contextlib.suppress(Exception):  # a cluster already gone is closed
                    part.close()
        self._client = self._local = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _quick_exit() -> Any:
    """A worker plugin of the local cluster: its worker processes end without tearing down their modules once
    closed. A spawned worker that imported torch spent seconds in the interpreter's teardown, past the 4 s after
    which Dask's nanny kills it: every local run's end waited for that."""
    from dask.distributed import WorkerPlugin

    class QuickExit(WorkerPlugin):
        def setup(self, worker: Any) -> None:
            import atexit

            atexit.register(_exit_now)  # the last registered, the first run: before any module is torn down

    return QuickExit()


def log(message: str) -> None:
    tqdm.write(f"cluster: {message}", file=sys.stderr)


def worker_threads(client: Any) -> int:
    """Threads of every worker of ``client``'s cluster together (how many tasks run at once)."""
    return int(sum(client.nthreads().values()))


def _read_probe(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return None


def check_shared(client: Any, folder: Path, what: str, option: str) -> None:
    """Raise :class:`ClusterError` unless every worker reads the file this process writes into ``folder`` (made if
    missing): the tasks read and write their files there by this process's path."""
    folder = Path(folder).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    probe = folder / f".scifig-cluster-probe-{token}"
    probe.write_text(token, encoding="utf-8")
    try:
        seen = client.run(_read_probe, str(probe))
    finally:
        probe.unlink(missing_ok=True)
    blind = sorted(worker for worker, text in seen.items() if text != token)
    if blind:
        raise ClusterError(
            f"Dask worker {blind[0]}{f' (and {len(blind) - 1} more)' if len(blind) > 1 else ''} does not see {what} "
            f"{folder}: give every worker the same {option} on a shared file system"
        )


def _exists(path: str) -> bool:
    return Path(path).exists()


def check_input(client: Any, path: Path, option: str) -> None:
    """Raise :class:`ClusterError` unless every worker finds ``path`` (the input the tasks read by this path)."""
    path = Path(path).absolute()
    missing = sorted(worker for worker, found in client.run(_exists, str(path)).items() if not found)
    if missing:
        raise ClusterError(
            f"Dask worker {missing[0]} does not find {option} {path}: give every worker the same path (a shared file "
            "system), or a Hub dataset id"
        )


def run_tasks(
    client: Any,
    function: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    desc: str,
    unit: str = "task",
    sizes: Sequence[int] | None = None,
) -> list[Any]:
    """``function(*call)`` for every call on the cluster, their results in the calls' order; a progress bar counts
    ``sizes`` (one per call, default 1) as they finish. At most :func:`in_flight` calls are with the scheduler at once
    (each new one as another finishes), so a corpus of thousands of shards does not hold every task's arguments
    there. A task that fails stops the rest and raises its error here."""
    from dask.distributed import as_completed

    weights = list(sizes) if sizes is not None else [1] * len(calls)
    results: list[Any] = [None] * len(calls)
    numbers: dict[str, int] = {}
    pending = iter(enumerate(calls))

    def submit() -> Any:
        number, call = next(pending, (None, None))
        if number is None:
            return None
        future = client.submit(function, *call, pure=False)
        numbers[future.key] = number
        return future

    started = [future for future in (submit() for _ in range(in_flight(client))) if future is not None]
    try:
        with tqdm(total=sum(weights), desc=desc, unit=unit) as progress:
            running = as_completed(started, loop=client.loop)
            for future in running:
                number = numbers[future.key]
                results[number] = future.result()  # raises the task's error
                progress.update(weights[number])
                following = submit()
                if following is not None:
                    running.add(following)
    except BaseException:
        client.cancel([future for future in started if not future.done()])
        raise
    return results


def in_flight(client: Any) -> int:
    """How many tasks :func:`run_tasks` keeps with the scheduler: four per worker thread, at least 8."""
    return max(8, 4 * worker_threads(client))


def task_error(exc: BaseException) -> BaseException:
    """An error a task raises, as one that crosses to the main process whole: Dask sends errors pickled, and an
    exception whose constructor takes other arguments than its message (``DataError``) does not unpickle."""
    if type(exc) in (ValueError, OSError, RuntimeError) or not isinstance(exc, ValueError | OSError):
        return exc
    return (ValueError if isinstance(exc, ValueError) else OSError)(str(exc))


def call_in_task(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with its error made to cross to the main process (:func:`task_error`)."""
    try:
        return function(*args)
    except (ValueError, OSError) as exc:
        raise task_error(exc) from None
