"""Faiss k-nearest neighbours of every joint vector (SciFIBench paper §3.3, steps 3–4; spec "Curation").

Rule: index the joint vectors with Faiss and find each pair's ``k`` nearest neighbours by Euclidean distance, the
pair itself excluded. Index choice:

* up to ``exact_max`` vectors (default 50,000): exact search, ``IndexFlatL2``;
* above it: ``IndexIVFFlat`` — an inverted file over ``nlist`` k-means cells (default: the power of two nearest
  ``4 * sqrt(n)``, 1,024 for 100,000 vectors) trained on a seeded sample of ``32 * nlist`` vectors (Faiss recommends
  30–256 per cell) with 8 k-means iterations, searched with ``nprobe`` cells per query (default 8). Vectors are
  stored uncompressed, so the only approximation is which cells are visited; ``tests/benchmarks/bench_faiss_index.py``
  measures its recall@5 and speed-up against exact search. IVF was chosen over HNSW because its build is a seeded
  k-means (reruns give identical neighbours, as the pipeline promises; multi-threaded HNSW insertion is not
  reproducible) and it is the cheaper build for 2,048-d vectors.
* with a GPU build of Faiss and a GPU present, the index is moved to all GPUs (``index_cpu_to_all_gpus``).

Distances are recomputed from the vectors' differences for the neighbours found and ties are broken by index, so the
result does not depend on Faiss' internal accumulation order. A neighbour an approximate search could not fill is
``-1`` with distance ``inf``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

DEFAULT_K = 16
DEFAULT_EXACT_MAX = 50_000
DEFAULT_NPROBE = 8
TRAIN_PER_CELL = 32
KMEANS_ITERATIONS = 8
SEARCH_BATCH = 1024


@dataclass(frozen=True)
class IndexPlan:
    """Which Faiss index searches the vectors, with its parameters."""

    kind: Literal["flat", "ivf"]
    nlist: int = 0
    nprobe: int = 0
    train_size: int = 0
    kmeans_iterations: int = 0

    def describe(self) -> str:
        if self.kind == "flat":
            return "exact IndexFlatL2"
        return (
            f"IndexIVFFlat nlist={self.nlist} nprobe={self.nprobe} "
            f"(k-means on {self.train_size} vectors, {self.kmeans_iterations} iterations)"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_nlist(n: int) -> int:
    """The power of two nearest ``4 * sqrt(n)``, with at least ``TRAIN_PER_CELL`` training vectors per cell."""
    target = 4 * math.sqrt(max(n, 1))
    nlist = 2 ** round(math.log2(target))
    while nlist > 1 and nlist * TRAIN_PER_CELL > n:
        nlist //= 2
    return max(1, nlist)


def plan_index(
    n: int, exact_max: int = DEFAULT_EXACT_MAX, nlist: int | None = None, nprobe: int | None = None
) -> IndexPlan:
    """Exact search up to ``exact_max`` vectors, IVF above (``nlist``/``nprobe`` override the defaults)."""
    if n <= exact_max:
        return IndexPlan("flat")
    cells = nlist or default_nlist(n)
    if cells * TRAIN_PER_CELL > n:
        raise ValueError(f"nlist={cells} needs at least {cells * TRAIN_PER_CELL} vectors to train (have {n})")
    return IndexPlan(
        "ivf",
        nlist=cells,
        nprobe=min(cells, nprobe or DEFAULT_NPROBE),
        train_size=min(n, TRAIN_PER_CELL * cells),
        kmeans_iterations=KMEANS_ITERATIONS,
    )


def gpu_count() -> int:
    import faiss

    return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0


def build_index(vectors: np.ndarray, plan: IndexPlan, seed: int = 0, use_gpu: bool | None = None) -> Any:
    """A Faiss index of ``vectors`` following ``plan`` (trained and filled)."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    dim = vectors.shape[1]
    if plan.kind == "flat":
        index = faiss.IndexFlatL2(dim)
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatL2(dim), dim, plan.nlist, faiss.METRIC_L2)
        index.cp.niter = plan.kmeans_iterations
        index.cp.seed = seed
        index.cp.min_points_per_centroid = TRAIN_PER_CELL
        index.nprobe = plan.nprobe
    if use_gpu is None:
        use_gpu = gpu_count() > 0
    if use_gpu:
        index = faiss.index_cpu_to_all_gpus(index)
    if plan.kind == "ivf":
        sample = np.sort(np.random.default_rng(seed).choice(len(vectors), plan.train_size, replace=False))
        index.train(vectors[sample])
        if hasattr(index, "nprobe"):
            index.nprobe = plan.nprobe
        else:  # a GPU index: parameters go through the GPU parameter space
            faiss.GpuParameterSpace().set_index_parameter(index, "nprobe", plan.nprobe)
    for start in range(0, len(vectors), 65536):
        index.add(vectors[start : start + 65536])
    return index


@dataclass(frozen=True)
class Neighbours:
    """``indices[i]``: the ``k`` nearest other pairs of pair ``i``, nearest first; ``distances[i]``: their exact
    Euclidean distances (``-1`` / ``inf`` where an approximate search found fewer than ``k``)."""

    indices: np.ndarray
    distances: np.ndarray
    plan: IndexPlan


def exact_distances(vectors: np.ndarray, queries: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Euclidean distance from each query row to each of its indexed vectors (``inf`` for ``-1``)."""
    safe = np.where(indices < 0, 0, indices)
    differences = vectors[safe] - vectors[queries][:, None, :]
    distances = np.sqrt(np.einsum("ijk,ijk->ij", differences, differences))
    return np.where(indices < 0, np.float32(np.inf), distances)


def _without_self(queries: np.ndarray, found: np.ndarray, k: int) -> np.ndarray:
    keep = found != queries[:, None]
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False  # the pair itself was not returned (ties, or an approximate miss): drop the farthest
    return found[keep].reshape(len(queries), k)


def search_index(index: Any, vectors: np.ndarray, k: int, plan: IndexPlan) -> Neighbours:
    """Every vector's ``k`` nearest other vectors in ``index`` (which holds ``vectors``), exact distances, ties by
    index."""
    n = len(vectors)
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k), dtype=np.float32)
    with tqdm(total=n, desc=f"scifibench: {k}-NN search ({plan.describe()})", unit="pair") as progress:
        for start in range(0, n, SEARCH_BATCH):
            queries = np.arange(start, min(n, start + SEARCH_BATCH))
            _, found = index.search(vectors[queries], k + 1)
            found = _without_self(queries, found.astype(np.int64), k)
            exact = exact_distances(vectors, queries, found)
            order = np.lexsort((np.where(found < 0, n, found), exact), axis=1)
            indices[queries] = np.take_along_axis(found, order, axis=1)
            distances[queries] = np.take_along_axis(exact, order, axis=1)
            progress.update(len(queries))
    return Neighbours(indices, distances, plan)


def nearest_neighbours(
    vectors: np.ndarray, k: int = DEFAULT_K, plan: IndexPlan | None = None, seed: int = 0, use_gpu: bool | None = None
) -> Neighbours:
    """The ``k`` nearest other vectors of every vector (see the module docstring for the index used)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n < 2:
        raise ValueError(f"need at least 2 vectors to find neighbours, got {n}")
    plan = plan or plan_index(n)
    return search_index(build_index(vectors, plan, seed, use_gpu), vectors, min(k, n - 1), plan)
