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

* tuned Faiss indexes, in the same run and on the same vectors, each at the smallest search parameter whose
  recall@5 on the sampled queries is at least ours less ``RECALL_SLACK`` (0.001; swept on the sampled queries
  outside the clock): ``IndexIVFFlat`` with the same nlist, trained like ours (same seeded sample, same k-means
  iterations), ``nprobe`` swept, all ``n`` queries searched in order of their cell (consecutive queries scan the
  same lists); ``IndexIVFScalarQuantizer`` (8-bit codes, same cells) likewise; ``IndexHNSWFlat`` (``M`` 32,
  ``efConstruction`` 80) with ``efSearch`` swept. Printed per index: build and search seconds for all ``n`` queries
  (the query itself + 5 nearest), recall@5, the ratio of its build + search time to ours (``vs ours``; above 1:
  ours is faster), the index's serialised size and the phase's peak RSS above the RSS before it, over the vectors'
  size (Faiss' flat indexes copy the vectors; ours keeps only centroids and cell lists). Then the rule for our
  hand-written search: it stays only where it is >= ``RULE`` (1.5) times as fast (build + search) as the fastest
  Faiss index that reached the recall; the broad setting is the one that decides (real joint vectors are broad:
  their neighbours cross cell borders).

Goal, in both settings: recall@5 >= 0.99 at >= 10x the speed of ``IndexFlatL2`` (build + search) on the same
machine, with the process's peak RSS (the larger of the sampled peak and ``ru_maxrss``) at most 2.5x the vectors'
size. The figures are printed, never asserted. Timings depend on the machine and on what else runs on it (the load
average is printed before and after each setting).

Run from the repository root: ``python -m tests.perf.bench_faiss_index`` (options ``--data``, ``--n``,
``--dim``, ``--queries``, ``--nlist``, ``--nprobe``, ``--threads``, ``--indexes``, ``--no-faiss-tuned``). With the
tuned Faiss indexes, ``--n 20000 --dim 512 --threads 1`` takes ~2 minutes and ``--data broad --n 60000 --dim 2048
--threads 1 --indexes ivfflat,hnsw`` ~6.5 minutes (IVFFlat's search ~1.5 minutes, HNSW's build + search ~3.5); the
default size (100,000 x 2,048, both settings, all three indexes) ~25-35 minutes on 2 cores; ``--no-faiss-tuned``
brings it back to a minute or two. The pipeline searches approximately only above 50,000 vectors
(``neighbours.DEFAULT_EXACT_MAX``): at 20,000 x 512 the rule's figures show the small-size trend only.
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
RULE = 1.5  # the hand-written search stays only if this many times as fast as the best tuned Faiss index
RECALL_SLACK = 0.001  # a tuned index reaches our recall at ours less this (sampling noise on 2,000 queries x 5)
NPROBES = (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192, 256)
EF_SEARCHES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80


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
class Tuned:
    """A tuned Faiss index's figures (``seconds`` None: it did not reach the recall at any swept parameter)."""

    name: str
    parameter: str
    recall: float
    build: float
    search: float | None
    index_bytes: int
    peak_over_vectors: float

    @property
    def seconds(self) -> float | None:
        return None if self.search is None else self.build + self.search


def _sample(vectors: np.ndarray, size: int, seed: int) -> np.ndarray:
    return vectors[np.sort(np.random.default_rng(seed).choice(len(vectors), size, replace=False))]


def _swept(
    index: object,
    vectors: np.ndarray,
    queries: np.ndarray,
    exact: np.ndarray,
    target: float,
    values: tuple[int, ...],
    set_value: object,
) -> tuple[int, float]:
    """The smallest value whose recall@5 on the sampled queries reaches ``target`` (else the largest tried)."""
    recall = 0.0
    value = values[0]
    for value in values:
        set_value(value)  # type: ignore[operator]
        _, found = index.search(vectors[queries], 6)  # type: ignore[attr-defined]
        recall = recall_at(found, exact, queries)
        if recall >= target:
            break
    return value, recall


def _timed_search(index: object, vectors: np.ndarray, order: np.ndarray | None) -> float:
    start = time.perf_counter()
    queries = vectors if order is None else vectors[order]  # cell order: consecutive queries scan the same lists
    for begin in range(0, len(queries), 16384):
        index.search(queries[begin : begin + 16384], 6)  # type: ignore[attr-defined]
    return time.perf_counter() - start


def tuned_faiss(
    vectors: np.ndarray,
    queries: np.ndarray,
    exact: np.ndarray,
    plan: object,
    target: float,
    args: argparse.Namespace,
    sampler: RssSampler,
) -> list[Tuned]:
    """Build each tuned Faiss index, sweep its search parameter to ``target`` recall, time all ``n`` queries."""
    import faiss

    n, dim = vectors.shape
    vector_bytes = vectors.nbytes
    nlist = plan.nlist  # type: ignore[attr-defined]
    train = _sample(vectors, plan.train_size, args.seed)  # type: ignore[attr-defined]
    out = []

    def ivf(name: str, make: object) -> None:
        sampler.reset()
        base = rss()
        start = time.perf_counter()
        quantizer = faiss.IndexFlatL2(dim)
        index = make(quantizer)  # type: ignore[operator]
        index.cp.niter = plan.kmeans_iterations  # type: ignore[attr-defined]
        index.cp.seed = args.seed
        index.cp.max_points_per_centroid = len(train)
        index.train(train)
        index.add(vectors)
        build = time.perf_counter() - start
        start = time.perf_counter()
        _, cells = quantizer.search(vectors, 1)
        order = np.argsort(cells[:, 0], kind="stable")
        sort = time.perf_counter() - start
        nprobes = (*(value for value in NPROBES if value < nlist), nlist)
        nprobe, recall = _swept(index, vectors, queries, exact, target, nprobes, lambda v: setattr(index, "nprobe", v))
        search = _timed_search(index, vectors, order) + sort if recall >= target else None
        size = len(faiss.serialize_index(index))
        out.append(Tuned(name, f"nprobe {nprobe}", recall, build, search, size, (sampler.peak - base) / vector_bytes))

    if "ivfflat" in args.indexes:
        ivf(f"IndexIVFFlat ({nlist} cells)", lambda q: faiss.IndexIVFFlat(q, dim, nlist))
    if "ivfsq8" in args.indexes:
        ivf(
            f"IndexIVFScalarQuantizer 8-bit ({nlist} cells)",
            lambda q: faiss.IndexIVFScalarQuantizer(q, dim, nlist, faiss.ScalarQuantizer.QT_8bit),
        )
    if "hnsw" not in args.indexes:
        return out
    sampler.reset()
    base = rss()
    start = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(dim, HNSW_M)
    hnsw.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    hnsw.add(vectors)
    build = time.perf_counter() - start

    def set_ef(value: int) -> None:
        hnsw.hnsw.efSearch = value

    ef, recall = _swept(hnsw, vectors, queries, exact, target, EF_SEARCHES, set_ef)
    search = _timed_search(hnsw, vectors, None) if recall >= target else None
    size = len(faiss.serialize_index(hnsw))
    name = f"IndexHNSWFlat (M {HNSW_M}, efConstruction {HNSW_EF_CONSTRUCTION})"
    out.append(Tuned(name, f"efSearch {ef}", recall, build, search, size, (sampler.peak - base) / vector_bytes))
    return out


@dataclass(frozen=True)
class Outcome:
    """One setting's figures against the goal."""

    data: str
    recall: float
    speedup: float
    search_speedup: float
    cpu_speedup: float
    peak: int
    ours_seconds: float = 0.0
    best_faiss: Tuned | None = None

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
    approx_base = rss()
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
    ours_seconds = approx_build + approx_search
    best = None
    if args.faiss_tuned and isinstance(index, CellIndex):
        del found
        tuned = tuned_faiss(vectors, queries, exact, plan, recall - RECALL_SLACK, args, sampler)
        print(
            f"tuned Faiss indexes at recall@5 >= ours - {RECALL_SLACK} = {recall - RECALL_SLACK:.4f} (all {args.n:,}"
            " queries; memory: serialised index, phase peak RSS over the vectors' size):"
        )
        print(
            f"  {'index':<44} {'parameter':<13} {'recall@5':>8} {'build s':>8} {'search s':>9} {'total s':>8}"
            f" {'vs ours':>8} {'index MB':>9} {'peak/vec':>8}"
        )
        rows = [
            Tuned(
                "ours (hand-written, module)",
                f"{plan.nlist} cells",
                recall,
                approx_build,
                approx_search,
                approx_bytes(index),
                (approx_peak - approx_base) / vectors.nbytes,
            ),
            *tuned,
        ]
        for row in rows:
            total = "-" if row.seconds is None else f"{row.seconds:8.1f}"
            ratio = "-" if row.seconds is None else f"{row.seconds / ours_seconds:7.2f}x"
            search_s = "not reached" if row.search is None else f"{row.search:9.1f}"
            print(
                f"  {row.name:<44} {row.parameter:<13} {row.recall:8.4f} {row.build:8.1f} {search_s:>9}"
                f" {total:>8} {ratio:>8} {row.index_bytes / MB:9.1f} {row.peak_over_vectors:7.2f}x"
            )
        reached = [row for row in tuned if row.seconds is not None]
        if reached:
            best = min(reached, key=lambda row: row.seconds or 0.0)
            ratio = (best.seconds or 0.0) / ours_seconds
            print(
                f"rule: best tuned Faiss ({best.name}, {best.parameter}) / ours = {ratio:.2f}x; "
                f"ours {'kept' if ratio >= RULE else 'replaced'} by the >= {RULE}x rule on {data} data"
            )
        else:
            print(f"rule: no tuned Faiss index reached our recall on {data} data: ours kept")
    print(f"load average after: {load_average()}")
    return Outcome(
        data,
        recall,
        total_speedup,
        flat_search / approx_search,
        flat_cpu / approx_cpu,
        max(flat_peak, approx_peak),
        ours_seconds,
        best,
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
    parser.add_argument(
        "--no-faiss-tuned", dest="faiss_tuned", action="store_false", help="skip the tuned Faiss indexes"
    )
    parser.add_argument(
        "--indexes",
        type=lambda text: set(text.split(",")),
        default={"ivfflat", "ivfsq8", "hnsw"},
        help="tuned Faiss indexes, comma-separated from ivfflat, ivfsq8, hnsw (default: all)",
    )
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
    if args.faiss_tuned:  # the tuned Faiss indexes copy the vectors: the goal counts the exact and our phases only
        peak = max(outcome.peak for outcome in outcomes)
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
    source = (
        "the exact and our phases' sampled peak (the tuned Faiss indexes' phases excluded)"
        if args.faiss_tuned
        else f"max(sampled {sampler.overall / MB:,.0f} MB, ru_maxrss {ru_maxrss() / MB:,.0f} MB)"
    )
    print(
        f"memory: process peak RSS {peak / MB:,.0f} MB = {source} = {ratio:.2f}x the vectors' {vector_mb:,.0f} MB "
        f"(start {start_rss / MB:,.0f} MB)"
    )
    verdicts = [
        f"{o.data}: recall {'met' if o.recall >= GOAL_RECALL else 'NOT met'}, "
        f"speed {'met' if o.speedup >= GOAL_SPEEDUP else 'NOT met'}"
        for o in outcomes
    ]
    verdicts.append(f"memory {'met' if ratio <= GOAL_RSS_RATIO else 'NOT met'}")
    every = all(o.met() for o in outcomes) and ratio <= GOAL_RSS_RATIO
    for o in outcomes:
        if o.best_faiss is not None and o.best_faiss.seconds is not None:
            times = o.best_faiss.seconds / o.ours_seconds
            print(
                f"rule on {o.data}: ours {o.ours_seconds:.1f} s vs best tuned Faiss {o.best_faiss.seconds:.1f} s "
                f"({o.best_faiss.name}, {o.best_faiss.parameter}) = {times:.2f}x: "
                f"{'kept' if times >= RULE else 'replaced'} (needs >= {RULE}x)"
            )
    print(
        f"goal (recall@5 >= {GOAL_RECALL}, >= {GOAL_SPEEDUP:g}x, peak RSS <= {GOAL_RSS_RATIO:g}x) on "
        f"{' + '.join(settings)}: {'met' if every else 'NOT met'} ({'; '.join(verdicts)})"
    )


if __name__ == "__main__":
    main()
