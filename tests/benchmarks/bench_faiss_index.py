"""SciFIBench curation's approximate neighbour index against exact search, on clustered joint vectors.

What it measures. ``--n`` (default 100,000) joint vectors of ``--dim`` (default 2,048) dimensions built like the
pipeline's (two L2-normalised halves, image and text, side by side) and clustered like a figure corpus: ``--topics``
topics (default 100) of ``--subtopics`` sub-topics each (default 10), every vector a noisy copy of its sub-topic's
centre (``--spread``, angular noise). Then:

* exact search: ``faiss.IndexFlatL2`` over all vectors, timed on ``--queries`` sampled queries (default 2,000) for the
  6 nearest (the query itself + 5) and extrapolated linearly to all ``n`` queries (flat search cost is linear in the
  number of queries; ``--queries N`` times them all);
* the approximate index the pipeline uses above ``--exact-max`` (``curation.scifibench.neighbours.plan_index``:
  ``IndexIVFFlat``, default nlist / nprobe), built and searched for all ``n`` queries exactly as the pipeline does
  (``build_index`` + ``search_index``: 5 neighbours, exact distances re-ranked);
* recall@5: the fraction of each sampled query's exact 5 nearest neighbours (itself excluded) the approximate search
  returned, averaged; speed-up: exact time / approximate time, for the search alone and for build + search;
* memory: process RSS growth when each index is built and the serialised index size; peak RSS of the process;
* an nprobe sweep on the sampled queries (recall@5 and extrapolated search time), to show the trade-off.

Goal: recall@5 >= 0.95 at >= 10x the speed of ``IndexFlatL2`` (build + search) on the same machine. The figures are
printed, never asserted. Timings depend on the machine and on what else runs on it (load average is printed).

Run from the repository root: ``python -m tests.benchmarks.bench_faiss_index`` (options ``--n``,
``--dim``, ``--queries``, ``--nlist``, ``--nprobe``, ``--threads``). The default run takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
import psutil
from tqdm.auto import tqdm

from curation.scifibench.neighbours import build_index, plan_index, search_index

MB = 1024 * 1024
GOAL_RECALL = 0.95
GOAL_SPEEDUP = 10.0


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


def rss() -> int:
    return psutil.Process().memory_info().rss


def index_bytes(index: object) -> int:
    import faiss

    return int(faiss.serialize_index(index).size)


def recall_at(found: np.ndarray, exact: np.ndarray, queries: np.ndarray, k: int = 5) -> float:
    hits = 0
    for row, query in enumerate(queries):
        truth = [j for j in exact[row] if j != query][:k]
        got = [j for j in found[row] if j != query][:k]
        hits += len(set(truth) & set(got))
    return hits / (k * len(queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--subtopics", type=int, default=10)
    parser.add_argument("--spread", type=float, default=2.0, help="noise norm relative to a unit centre, per half")
    parser.add_argument("--queries", type=int, default=2000, help="exact-search queries timed (then extrapolated)")
    parser.add_argument("--exact-max", type=int, default=0, help="plan_index threshold (0: always approximate)")
    parser.add_argument("--nlist", type=int, default=None)
    parser.add_argument("--nprobe", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="Faiss OpenMP threads (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import faiss

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} CPUs, Faiss {faiss.__version__} with {faiss.omp_get_max_threads()} threads")
    print(f"         load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other work slows both searches)")
    base = rss()
    vectors = clustered_joint_vectors(args.n, args.dim, args.topics, args.subtopics, args.spread, args.seed)
    print(
        f"data: {args.n:,} x {args.dim} float32 joint vectors ({vectors.nbytes / MB:,.0f} MB), "
        f"{args.topics} topics x {args.subtopics} sub-topics, spread {args.spread}"
    )
    queries = np.sort(np.random.default_rng(args.seed + 1).choice(args.n, min(args.queries, args.n), replace=False))

    # exact search
    before = rss()
    start = time.perf_counter()
    flat = faiss.IndexFlatL2(args.dim)
    flat.add(vectors)
    flat_build = time.perf_counter() - start
    flat_rss = rss() - before
    start = time.perf_counter()
    _, exact = flat.search(vectors[queries], 6)
    flat_sample = time.perf_counter() - start
    flat_search = flat_sample * args.n / len(queries)
    flat_size = index_bytes(flat)
    del flat

    # the pipeline's approximate index, built and searched for every vector
    plan = plan_index(args.n, args.exact_max, args.nlist, args.nprobe)
    before = rss()
    start = time.perf_counter()
    index = build_index(vectors, plan, seed=args.seed, use_gpu=False)
    approx_build = time.perf_counter() - start
    approx_rss = rss() - before
    start = time.perf_counter()
    found = search_index(index, vectors, 5, plan)
    approx_search = time.perf_counter() - start
    approx_size = index_bytes(index)
    recall = recall_at(found.indices[queries], exact, queries)

    sweep = []
    if plan.kind == "ivf":
        for nprobe in sorted({4, 8, 16, 32, plan.nprobe}):
            index.nprobe = min(nprobe, plan.nlist)
            start = time.perf_counter()
            _, got = index.search(vectors[queries], 6)
            elapsed = time.perf_counter() - start
            sweep.append((nprobe, recall_at(got, exact, queries), elapsed * args.n / len(queries)))

    total_speedup = (flat_build + flat_search) / (approx_build + approx_search)
    print(
        f"\nexact  IndexFlatL2: build {flat_build:6.1f} s, search {flat_search:8.1f} s for {args.n:,} queries "
        f"(timed on {len(queries):,}: {flat_sample:.1f} s), index {flat_size / MB:,.0f} MB, "
        f"RSS +{flat_rss / MB:,.0f} MB"
    )
    print(f"approx {plan.describe()}:")
    print(
        f"       build {approx_build:6.1f} s, search {approx_search:8.1f} s for {args.n:,} queries "
        f"(incl. exact re-ranking), index {approx_size / MB:,.0f} MB, RSS +{approx_rss / MB:,.0f} MB"
    )
    print(
        f"recall@5 vs exact (on {len(queries):,} queries): {recall:.4f}   goal >= {GOAL_RECALL}: "
        f"{'met' if recall >= GOAL_RECALL else 'NOT met'}"
    )
    print(
        f"speed-up: search only {flat_search / approx_search:.1f}x, build + search {total_speedup:.1f}x   "
        f"goal >= {GOAL_SPEEDUP:g}x: {'met' if total_speedup >= GOAL_SPEEDUP else 'NOT met'}"
    )
    if sweep:
        print("\nnprobe sweep (search only, timed on the sampled queries, extrapolated):")
        print("  nprobe  recall@5  search s  speed-up vs exact search")
        for nprobe, value, seconds in sweep:
            marker = "  <- pipeline default" if nprobe == plan.nprobe else ""
            print(f"  {nprobe:6d}  {value:8.4f}  {seconds:8.1f}  {flat_search / seconds:6.1f}x{marker}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"\nmemory: process peak RSS {peak / MB:,.0f} MB (start {base / MB:,.0f} MB; the data alone "
        f"{vectors.nbytes / MB:,.0f} MB)"
    )


if __name__ == "__main__":
    main()
