"""SciFIBench curation's approximate neighbour search against exact search, on clustered and on broad joint vectors.

What it measures. ``--n`` (default 100,000) joint vectors of ``--dim`` (default 2,048) dimensions built like the
pipeline's (two L2-normalised halves, image and text, side by side), in two settings (``--data``, default both):

* ``clustered``: ``--topics`` topics (default 100) of ``--subtopics`` sub-topics each (default 10), every vector a
  noisy copy of its sub-topic's centre (``--spread``, angular noise). Its 1,000 tight sub-topics (about two per cell
  at the default 512 cells) mostly stay whole inside cells: this setting flatters recall;
* ``broad``: ``--broad-topics`` wide, overlapping topics (default 10; the topic centres share a common direction,
  cosine about 0.5 between topics), every vector its topic's centre moved within a ``--latent``-dimensional subspace
  of the topic (default 32 dimensions, scales decaying as 1/sqrt(j), norm about 1) plus isotropic noise (norm 0.5),
  per half. Neighbours vary continuously across a topic, so cell borders cut through them: most of a vector's exact
  neighbours lie outside its own cell (printed).

Then, per setting:

* exact search: ``faiss.IndexFlatL2`` over all vectors, timed on ``--queries`` sampled queries (default 2,000) for
  the 6 nearest (the query itself + 5) and extrapolated linearly to all ``n`` queries (flat search cost is linear in
  the number of queries; ``--queries N`` times them all);
* the approximate search the pipeline uses above ``--exact-max`` (``curation.scifibench.neighbours.plan_index``: an
  IVF over k-means cells, default nlist / probe budget), built and searched for all ``n`` vectors exactly as the
  pipeline does (``build_index`` + ``search_index``: 5 neighbours, exact distances re-ranked);
* recall@5: the fraction of each sampled query's exact 5 nearest neighbours (itself excluded) the approximate search
  returned, averaged; speed-up: exact time / approximate time, for the search alone and for build + search (wall
  time, as the goal counts it, and process CPU time, which other work on the machine moves less);
* memory: process RSS sampled every 20 ms during each phase, and each index's size (between settings the heap
  memory the first one freed is handed back to the system, so each setting's figures are its own);
* a probe-budget sweep on the sampled queries: recall@5 from whether each exact neighbour's pair is compared at that
  budget (it is iff the neighbour lies in a cell the query probes or the query in a cell the neighbour probes), and
  the vectors compared per vector, to show the trade-off without searching again.

Goal, in both settings: recall@5 >= 0.99 at >= 10x the speed of ``IndexFlatL2`` (build + search) on the same
machine, with the process's peak RSS (the larger of the sampled peak and ``ru_maxrss``) at most 2.5x the vectors'
size. The figures are printed, never asserted. Timings depend on the machine and on what else runs on it (the load
average is printed before and after each setting).

Run from the repository root: ``python -m tests.perf.bench_faiss_index`` (options ``--data``, ``--n``,
``--dim``, ``--queries``, ``--nlist``, ``--nprobe``, ``--threads``). The default run takes a minute or two on 2 cores
(exact search is timed on 2,000 queries only); ``--n 20000`` takes seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import math
import os
import resource
import threading
import time
from dataclasses import dataclass

import numpy as np
import psutil
from tqdm.auto import tqdm

from curation.scifibench.neighbours import CellIndex, build_index, limit_probes, plan_index, search_index

MB = 1024 * 1024
GOAL_RECALL = 0.99
GOAL_SPEEDUP = 10.0
GOAL_RSS_RATIO = 2.5
BROAD_SPREAD = 1.0  # norm of a broad vector's move within its topic's subspace, per half (the centre has norm 1)
BROAD_NOISE = 0.5  # norm of its isotropic noise, per half
SWEEP_CELLS = (4, 8, 10, 12, 14, 16, 20, 24)  # probe budgets swept, in average cells' worth of vectors


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def clustered_joint_vectors(n: int, dim: int, topics: int, subtopics: int, spread: float, seed: int) -> np.ndarray:
    """``n`` joint vectors: per half, unit(sub-topic centre + noise); sub-topic centres scatter around topic centres."""
    rng = np.random.default_rng(seed)
    half = dim // 2
    noise = spread / np.sqrt(half)
    centres = []
    for _ in range(2):  # image half, text half
        topic = unit(rng.standard_normal((topics, half), dtype=np.float32))
        sub = unit(
            np.repeat(topic, subtopics, axis=0)
            + rng.standard_normal((topics * subtopics, half), dtype=np.float32) / np.sqrt(half)
        )
        centres.append(sub.astype(np.float32))
    labels = rng.integers(0, topics * subtopics, n)
    vectors = np.empty((n, 2 * half), dtype=np.float32)
    for start in tqdm(range(0, n, 10_000), desc="generating clustered joint vectors", unit="x10k"):
        chunk = labels[start : start + 10_000]
        for part, centre in enumerate(centres):
            jitter = rng.standard_normal((len(chunk), half), dtype=np.float32) * noise
            vectors[start : start + len(chunk), part * half : (part + 1) * half] = unit(centre[chunk] + jitter)
    return vectors


def broad_joint_vectors(n: int, dim: int, topics: int, latent: int, seed: int) -> np.ndarray:
    """``n`` joint vectors over few wide, overlapping topics: per half, unit(topic centre + a move within the topic's
    ``latent``-d subspace + isotropic noise). The move's coordinates (scales decaying as 1/sqrt(j), norm about
    ``BROAD_SPREAD``) are shared by both halves, as a figure's content is by its image and caption."""
    rng = np.random.default_rng(seed)
    half = dim // 2
    scales = np.arange(1, latent + 1, dtype=np.float32) ** -0.5
    scales *= BROAD_SPREAD / np.sqrt((scales**2).sum())
    labels = rng.integers(0, topics, n)
    moves = rng.standard_normal((n, latent), dtype=np.float32) * scales
    parts = []
    for _ in range(2):  # image half, text half
        common = unit(rng.standard_normal((1, half), dtype=np.float32))
        centres = unit(common + rng.standard_normal((topics, half), dtype=np.float32) / np.sqrt(half))
        bases = [np.linalg.qr(rng.standard_normal((half, latent), dtype=np.float32))[0] for _ in range(topics)]
        parts.append((centres.astype(np.float32), [basis.astype(np.float32) for basis in bases]))
    vectors = np.empty((n, 2 * half), dtype=np.float32)
    for start in tqdm(range(0, n, 10_000), desc="generating broad joint vectors", unit="x10k"):
        stop = min(n, start + 10_000)
        chunk = labels[start:stop]
        for part, (centres, bases) in enumerate(parts):
            block = centres[chunk] + rng.standard_normal((stop - start, half), dtype=np.float32) * (
                BROAD_NOISE / np.sqrt(half)
            )
            for topic in range(topics):
                rows = np.flatnonzero(chunk == topic)
                block[rows] += moves[start + rows] @ bases[topic].T
            vectors[start:stop, part * half : (part + 1) * half] = unit(block)
    return vectors


def rss() -> int:
    return psutil.Process().memory_info().rss


class RssSampler:
    """The process's RSS sampled every ``interval`` seconds in a thread; ``peak`` since the last ``reset``."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak = rss()
        self.overall = self.peak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        process = psutil.Process()
        while not self._stop.wait(self.interval):
            value = process.memory_info().rss
            self.peak = max(self.peak, value)
            self.overall = max(self.overall, value)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.peak = rss()


def ru_maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def release_freed_memory() -> None:
    """Hand the heap memory freed by the previous setting back to the system (glibc ``malloc_trim``), so that the
    next setting's RSS figures are its own; a no-op where there is no glibc."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def flat_bytes(index: object) -> int:
    """An ``IndexFlatL2``'s stored vectors (its serialised size less a small header), computed without copying them."""
    return int(index.ntotal) * int(index.d) * 4  # type: ignore[attr-defined]


def approx_bytes(index: object) -> int:
    if isinstance(index, CellIndex):
        return int(index.quantizer.ntotal) * int(index.quantizer.d) * 4 + index.probes.nbytes
    return flat_bytes(index)


def recall_at(found: np.ndarray, exact: np.ndarray, queries: np.ndarray, k: int = 5) -> float:
    hits = 0
    for row, query in enumerate(queries):
        truth = [j for j in exact[row] if j != query][:k]
        got = [j for j in found[row] if j != query][:k]
        hits += len(set(truth) & set(got))
    return hits / (k * len(queries))


def exact_truth(exact: np.ndarray, queries: np.ndarray, k: int = 5) -> np.ndarray:
    """Each sampled query's exact ``k`` nearest other vectors."""
    return np.array([[j for j in row if j != query][:k] for row, query in zip(exact, queries, strict=True)])


def probe_sweep(
    index: CellIndex, vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, nprobe: int
) -> list[tuple[int, float, float]]:
    """Per budget in ``SWEEP_CELLS``: (cells, recall@5, vectors compared per vector) on the sampled queries. An exact
    neighbour is found iff its pair is compared: it lies in a cell the query probes, or the query in a cell it
    probes (the search keeps every compared pair's nearest, re-ranked exactly)."""
    ids = np.unique(np.concatenate([queries, truth.ravel()]))
    _, nearest = index.quantizer.search(vectors[ids], nprobe)
    own, sizes = index.probes[:, 0], index.cell_sizes()
    per_cell = math.ceil(index.ntotal / index.nlist)
    rows = []
    for cells in SWEEP_CELLS:
        probes = limit_probes(nearest.copy(), sizes, cells * per_cell)
        of_query = probes[np.searchsorted(ids, queries)]
        of_truth = probes[np.searchsorted(ids, truth)]
        forward = (of_query[:, None, :] == own[truth][:, :, None]).any(axis=2)
        backward = (of_truth == own[queries][:, None, None]).any(axis=2)
        compared = np.where(of_query >= 0, sizes[np.maximum(of_query, 0)], 0).sum(axis=1).mean()
        rows.append((cells, float((forward | backward).mean()), float(compared)))
    return rows


@dataclass(frozen=True)
class Outcome:
    """One setting's figures against the goal."""

    data: str
    recall: float
    speedup: float
    search_speedup: float
    cpu_speedup: float
    peak: int

    def met(self) -> bool:
        return self.recall >= GOAL_RECALL and self.speedup >= GOAL_SPEEDUP


def make_vectors(data: str, args: argparse.Namespace) -> tuple[np.ndarray, str]:
    if data == "clustered":
        vectors = clustered_joint_vectors(args.n, args.dim, args.topics, args.subtopics, args.spread, args.seed)
        return vectors, f"{args.topics} topics x {args.subtopics} sub-topics, spread {args.spread}"
    vectors = broad_joint_vectors(args.n, args.dim, args.broad_topics, args.latent, args.seed)
    return vectors, (
        f"{args.broad_topics} broad topics, {args.latent}-d latent moves of norm {BROAD_SPREAD}, noise {BROAD_NOISE}"
    )


def run_setting(data: str, args: argparse.Namespace, sampler: RssSampler) -> Outcome:
    import faiss

    print(f"\n=== {data} ===   load average {load_average()}")
    sampler.reset()
    vectors, description = make_vectors(data, args)
    vector_mb = vectors.nbytes / MB
    print(f"data: {args.n:,} x {args.dim} float32 joint vectors ({vector_mb:,.0f} MB), {description}")
    queries = np.sort(np.random.default_rng(args.seed + 1).choice(args.n, min(args.queries, args.n), replace=False))

    # exact search
    sampler.reset()
    start, cpu = time.perf_counter(), time.process_time()
    flat = faiss.IndexFlatL2(args.dim)
    flat.add(vectors)
    flat_build = time.perf_counter() - start
    start, search_cpu = time.perf_counter(), time.process_time()
    _, exact = flat.search(vectors[queries], 6)
    flat_sample = time.perf_counter() - start
    flat_search = flat_sample * args.n / len(queries)
    flat_cpu = search_cpu - cpu + (time.process_time() - search_cpu) * args.n / len(queries)
    flat_size = flat_bytes(flat)
    del flat
    flat_peak = sampler.peak

    # the pipeline's approximate search, built and searched for every vector
    plan = plan_index(args.n, args.exact_max, args.nlist, args.nprobe)
    sampler.reset()
    start, cpu = time.perf_counter(), time.process_time()
    index = build_index(vectors, plan, seed=args.seed, use_gpu=False)
    approx_build = time.perf_counter() - start
    start = time.perf_counter()
    found = search_index(index, vectors, 5, plan)
    approx_search = time.perf_counter() - start
    approx_cpu = time.process_time() - cpu
    approx_peak = sampler.peak
    recall = recall_at(found.indices[queries], exact, queries)
    truth = exact_truth(exact, queries)

    total_speedup = (flat_build + flat_search) / (approx_build + approx_search)
    print(
        f"exact  IndexFlatL2: build {flat_build:6.1f} s, search {flat_search:8.1f} s for {args.n:,} queries "
        f"(timed on {len(queries):,}: {flat_sample:.1f} s), index {flat_size / MB:,.0f} MB, "
        f"peak RSS {flat_peak / MB:,.0f} MB"
    )
    print(f"approx {plan.describe()}:")
    print(
        f"       build {approx_build:6.1f} s, search {approx_search:8.1f} s for {args.n:,} queries "
        f"(incl. exact re-ranking), index {approx_bytes(index) / MB:,.0f} MB, peak RSS {approx_peak / MB:,.0f} MB"
    )
    print(f"recall@5 vs exact (on {len(queries):,} queries): {recall:.4f}")
    print(
        f"speed-up: search only {flat_search / approx_search:.1f}x, build + search {total_speedup:.1f}x "
        f"(CPU time of all threads, build + search: exact {flat_cpu:,.0f} s, approx {approx_cpu:,.1f} s, "
        f"{flat_cpu / approx_cpu:.1f}x)"
    )
    if isinstance(index, CellIndex):
        own = index.probes[:, 0]
        print(
            f"exact neighbours in the query's own cell: {(own[truth] == own[queries][:, None]).mean():.3f} "
            f"(cells per vector probed: mean {(index.probes >= 0).sum(axis=1).mean():.1f})"
        )
        print("probe-budget sweep (sampled queries; recall from the pairs compared, see the module docstring):")
        print("  budget (cells)  recall@5  vectors compared per vector  share of exact search")
        for cells, value, compared in probe_sweep(index, vectors, queries, truth, plan.nprobe):
            default = plan.max_codes == cells * math.ceil(args.n / plan.nlist)
            marker = "  <- pipeline default" if default else ""
            print(f"  {cells:14d}  {value:8.4f}  {compared:27,.0f}  {compared / args.n:20.2%}{marker}")
    print(f"load average after: {load_average()}")
    return Outcome(
        data, recall, total_speedup, flat_search / approx_search, flat_cpu / approx_cpu, max(flat_peak, approx_peak)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", choices=("both", "clustered", "broad"), default="both")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--topics", type=int, default=100, help="clustered: topics")
    parser.add_argument("--subtopics", type=int, default=10, help="clustered: sub-topics per topic")
    parser.add_argument("--spread", type=float, default=2.0, help="clustered: noise norm relative to a unit centre")
    parser.add_argument("--broad-topics", type=int, default=10, help="broad: topics")
    parser.add_argument("--latent", type=int, default=32, help="broad: dimensions of a topic's subspace")
    parser.add_argument("--queries", type=int, default=2000, help="exact-search queries timed (then extrapolated)")
    parser.add_argument("--exact-max", type=int, default=0, help="plan_index threshold (0: always approximate)")
    parser.add_argument("--nlist", type=int, default=None)
    parser.add_argument("--nprobe", type=int, default=None, help="probe exactly this many cells (no max_codes)")
    parser.add_argument("--threads", type=int, default=None, help="Faiss OpenMP threads (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} CPUs, Faiss {faiss.__version__} with {faiss.omp_get_max_threads()} threads")
    print(f"         load average {load_average()} (other work slows both searches)")
    settings = ("clustered", "broad") if args.data == "both" else (args.data,)
    vector_mb = args.n * args.dim * 4 / MB
    with RssSampler() as sampler:
        start_rss = rss()
        outcomes = []
        for data in settings:
            outcomes.append(run_setting(data, args, sampler))
            release_freed_memory()
    peak = max(sampler.overall, ru_maxrss())
    ratio = peak / MB / vector_mb

    print(
        f"\nsummary (goal per setting: recall@5 >= {GOAL_RECALL}, build + search >= {GOAL_SPEEDUP:g}x IndexFlatL2; "
        f"process peak RSS <= {GOAL_RSS_RATIO:g}x the vectors):"
    )
    print("  data       recall@5  build+search  search only  CPU time  peak RSS")
    for outcome in outcomes:
        print(
            f"  {outcome.data:9s}  {outcome.recall:8.4f}  {outcome.speedup:11.1f}x  {outcome.search_speedup:10.1f}x  "
            f"{outcome.cpu_speedup:7.1f}x  {outcome.peak / MB:,.0f} MB"
        )
    print(
        f"memory: process peak RSS {peak / MB:,.0f} MB = max(sampled {sampler.overall / MB:,.0f} MB, ru_maxrss "
        f"{ru_maxrss() / MB:,.0f} MB) = {ratio:.2f}x the vectors' {vector_mb:,.0f} MB (start {start_rss / MB:,.0f} MB)"
    )
    verdicts = [
        f"{o.data}: recall {'met' if o.recall >= GOAL_RECALL else 'NOT met'}, "
        f"speed {'met' if o.speedup >= GOAL_SPEEDUP else 'NOT met'}"
        for o in outcomes
    ]
    verdicts.append(f"memory {'met' if ratio <= GOAL_RSS_RATIO else 'NOT met'}")
    every = all(o.met() for o in outcomes) and ratio <= GOAL_RSS_RATIO
    print(
        f"goal (recall@5 >= {GOAL_RECALL}, >= {GOAL_SPEEDUP:g}x, peak RSS <= {GOAL_RSS_RATIO:g}x) on "
        f"{' + '.join(settings)}: {'met' if every else 'NOT met'} ({'; '.join(verdicts)})"
    )


if __name__ == "__main__":
    main()
