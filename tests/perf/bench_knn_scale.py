"""SciFIBench curation's neighbour search with the vectors on disk (``curation.scifibench.ondisk``): time and peak
memory against the corpus size, in one and in two processes, on a local Dask cluster (``--cluster``), and the
in-memory search as the baseline.

What it measures. For each size in ``--sizes`` (default 100,000, 300,000 and 1,000,000) it writes ``--dim``
(default 256) -dimensional clustered joint vectors (``bench_faiss_index.clustered_joint_vectors``: 100 topics x 10
sub-topics, ``--spread`` 1.5) to a ``.npy`` file under ``--dir``, then runs, each in a fresh Python process. d = 256
keeps the 10^6 run to minutes on 2 cores (the scan costs ~ N^1.5 x d). Spread 1.5, not ``bench_faiss_index``'s 2.0:
at d = 256 and spread 2.0 the pipeline's cells themselves reach recall@5 0.969 at 10^5 (in memory and on disk
alike) and 0.983 at 3 x 10^5 (on disk) with the default probe budget; at 1.5 they reach 1.0, as at d = 2,048 with
2.0:

* ``disk``: ``disk_neighbours`` on the mapped file, the pipeline's default plan (IVF cells above 50,000 vectors), 16
  neighbours, with ``--processes`` (default ``1,2``; 2: two spawned processes share the cells, one Faiss thread each,
  where 1 uses both threads);
* ``cluster``: the same search with its cell groups scanned on a local Dask cluster of ``--cluster-workers``
  (default ``2``) worker processes, one thread each (``scifig curate scifibench --cluster local``), the cluster's
  start and stop included in the time;
* ``memory``: ``nearest_neighbours`` on the vectors loaded whole (the pipeline's default), for the sizes in
  ``--memory-sizes`` (default 100,000 and 300,000), the baseline (its time printed as a ratio to the one-process
  on-disk run's).

Printed per run: wall seconds of the search (the recall check excluded), the process tree's peak anonymous memory
(``RssAnon``, summed over the process and its children, sampled every 20 ms: what has to fit in memory; the mapped
file's pages are the kernel's page cache and are printed separately as the peak of ``RssFile``), the largest single
child process's peak (a cluster's worker: the memory per worker), recall@5 against
exact search on 1,000 sampled pairs, and whether the neighbours equal the one-process on-disk run's (and the share of
rows equal to the in-memory run's). The runs of one size are interleaved ``--repeats`` times (default 1); medians
and ranges over the repeats. Then the growth exponent in N (least-squares slope of log time and log peak memory
against log N over the sizes) and the memory each further vector costs (the per-vector column includes the
interpreter's fixed ~70 MB).

The file is read from the page cache when it fits there (it does at these sizes on a 24 GB machine); a corpus larger
than memory reads it from disk, which the figures here do not time. Run from the repository root:
``python -m tests.perf.bench_knn_scale`` (about 30-45 minutes on 2 cores with the cluster runs;
``--sizes 100000,300000`` about 10; ``--cluster-workers ''`` leaves the cluster out). Needs ``N x dim x 4`` bytes
free under ``--dir`` for the largest size; the files are removed at the end.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

MB = 1024 * 1024


def status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class TreeSampler:
    """Peak ``RssAnon`` and ``RssFile`` summed over this process and its children, sampled every 20 ms."""

    def __init__(self) -> None:
        self.anon = self.file = self.child = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.02):
            children = [child.pid for child in me.children(recursive=True)]
            anon = {pid: status_kb(pid, "RssAnon") * 1024 for pid in [me.pid, *children]}
            self.anon = max(self.anon, sum(anon.values()))
            self.child = max(self.child, *(anon[pid] for pid in children)) if children else self.child
            pids = [me.pid, *children]
            self.file = max(self.file, sum(status_kb(pid, "RssFile") for pid in pids) * 1024)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def child(args: argparse.Namespace) -> None:
    """One run, in this fresh process: search, then the recall check outside the clock; a JSON line on stdout."""
    import faiss

    from curation.scifibench.neighbours import nearest_neighbours, plan_index
    from curation.scifibench.ondisk import disk_neighbours, open_vectors, sampled_recall

    path = Path(args.child)
    n = len(open_vectors(path))
    plan = plan_index(n)
    with TreeSampler() as sampler:
        start = time.perf_counter()
        if args.mode == "memory":
            vectors = np.load(path)
            found = nearest_neighbours(vectors, 16, plan)
            del vectors
        elif args.mode == "cluster":
            from curation.cluster import Cluster
            from curation.scifibench.distributed import search_on_cluster

            with Cluster("local", args.child_processes) as cluster:
                search = functools.partial(search_on_cluster, cluster)
                found = disk_neighbours(path, 16, plan, scratch=path.parent, recall_sample=0, cluster_search=search)
        else:
            found = disk_neighbours(
                path, 16, plan, processes=args.child_processes, scratch=path.parent, recall_sample=0
            )
        seconds = time.perf_counter() - start
    recall = sampled_recall(open_vectors(path), found.indices, 1000, 0)
    out = path.with_name(f"{path.stem}-{args.mode}-{args.child_processes}.npy")
    np.save(out, found.indices)
    figures = {"seconds": seconds, "anon": sampler.anon, "file": sampler.file, "recall": recall, "indices": str(out)}
    figures["child"] = sampler.child
    figures["plan"] = found.plan.describe()
    figures["threads"] = faiss.omp_get_max_threads()
    print(json.dumps(figures), flush=True)


def run_child(path: Path, mode: str, processes: int) -> dict:
    command = [sys.executable, "-m", "tests.perf.bench_knn_scale", "--child", str(path), "--mode", mode]
    command += ["--child-processes", str(processes)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench child failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def spread_of(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f}" + (f" [{min(values):.1f}-{max(values):.1f}]" if len(values) > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--spread", type=float, default=1.5, help="noise norm relative to a unit sub-topic centre")
    parser.add_argument("--processes", default="1,2")
    parser.add_argument("--cluster-workers", default="2", help="local Dask clusters' sizes to run ('' for none)")
    parser.add_argument("--memory-sizes", default="100000,300000", help="sizes also searched in memory (baseline)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None, help="where the vector files go (default: temp dir)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="disk", help=argparse.SUPPRESS)
    parser.add_argument("--child-processes", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    from tests.perf.bench_faiss_index import clustered_joint_vectors

    sizes = [int(size) for size in args.sizes.split(",")]
    counts = [int(count) for count in args.processes.split(",")]
    clusters = [int(count) for count in args.cluster_workers.split(",") if count]
    memory_sizes = {int(size) for size in args.memory_sizes.split(",") if size}
    work = Path(tempfile.mkdtemp(prefix="knn-scale-", dir=args.dir))
    print(
        f"machine: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 1024**3:.1f} GB memory, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"data: clustered joint vectors, d = {args.dim}, 100 topics x 10 sub-topics, spread {args.spread}; k = 16")
    rows: dict[tuple[int, str], list[dict]] = {}
    try:
        for n in sizes:
            path = work / f"vectors-{n}.npy"
            np.save(path, clustered_joint_vectors(n, args.dim, 100, 10, args.spread, 0))
            runs = [("disk", count) for count in counts] + [("cluster", count) for count in clusters]
            runs += [("memory", 1)] if n in memory_sizes else []
            for _ in range(args.repeats):
                for mode, count in runs:  # interleaved: every configuration once per repeat
                    rows.setdefault((n, f"{mode} x{count}"), []).append(run_child(path, mode, count))
            base = np.load(rows[(n, f"disk x{counts[0]}")][0]["indices"])
            vector_mb = n * args.dim * 4 / MB
            print(f"\nN = {n:,} ({vector_mb:,.0f} MB of vectors), {rows[(n, f'disk x{counts[0]}')][0]['plan']}")
            print(
                "  run          seconds (median [range])  peak anon MB  per vector  largest child MB  peak file MB"
                "  recall@5  same"
            )
            for mode, count in runs:
                got = rows[(n, f"{mode} x{count}")]
                same = np.load(got[0]["indices"])
                agree = "yes" if np.array_equal(same, base) else f"{(same == base).all(axis=1).mean():.4%} rows"
                anon = statistics.median(run["anon"] for run in got)
                largest = statistics.median(run["child"] for run in got) / MB
                print(
                    f"  {mode + ' x' + str(count):<12} {spread_of([run['seconds'] for run in got]):>26}  "
                    f"{anon / MB:12,.0f}  {anon / n:7,.0f} B  {largest:16,.0f}  "
                    f"{statistics.median(run['file'] for run in got) / MB:12,.0f}  {got[0]['recall']:.4f}  {agree}"
                )
            for mode, count in runs[1:]:
                ratio = statistics.median(r["seconds"] for r in rows[(n, f"{mode} x{count}")]) / statistics.median(
                    r["seconds"] for r in rows[(n, f"disk x{counts[0]}")]
                )
                print(f"  {mode} x{count} / disk x{counts[0]}: {ratio:.2f}x the time")
            path.unlink()
        if len(sizes) > 1:
            print("\ngrowth in N (least-squares slope of log figure against log N over the sizes):")
            for label in [f"disk x{count}" for count in counts] + [f"cluster x{count}" for count in clusters]:
                seconds = [statistics.median(r["seconds"] for r in rows[(n, label)]) for n in sizes]
                anon = [statistics.median(r["anon"] for r in rows[(n, label)]) for n in sizes]
                marginal = (anon[-1] - anon[-2]) / (sizes[-1] - sizes[-2])
                print(
                    f"  {label}: time ~ N^{slope(sizes, seconds):.2f}, "
                    f"peak anonymous memory ~ N^{slope(sizes, anon):.2f} "
                    f"({marginal:,.0f} B per vector between the two largest sizes)"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
