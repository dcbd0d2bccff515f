"""Faiss k-nearest neighbours of every joint vector (SciFIBench paper §3.3, steps 3–4: each pair's ``k`` nearest
neighbours by Euclidean distance, the pair itself excluded): exact ``IndexFlatL2`` up to ``exact_max``, a seeded
inverted-file scan above it.
Manual: curation/scifibench/README.md, "Steps", **Approximate index**, **The scan in detail** and
**Why a hand-written search**.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

DEFAULT_K = 16
DEFAULT_EXACT_MAX = 50_000
DEFAULT_NPROBE = 32  # most cells a vector probes
PROBE_CELLS = 14  # default max_codes: this many average cells' worth of vectors
CELLS_PER_SQRT_N = 1.6
TRAIN_PER_CELL = 32
KMEANS_ITERATIONS = 4
RERANK_MARGIN = 2  # candidates re-ranked beyond k
SEARCH_BATCH = 1024  # exact-search queries per call
ASSIGN_BATCH = 16384  # vectors assigned to cells per call
RERANK_BATCH = 128  # queries re-ranked together (their gathered candidates stay in cache)
PROBER_BATCH = 4096  # probers of a cell compared with it at once


@dataclass(frozen=True)
class IndexPlan:
    """Which Faiss index searches the vectors, with its parameters (``max_codes`` 0: always ``nprobe`` cells)."""

    kind: Literal["flat", "ivf"]
    nlist: int = 0
    nprobe: int = 0
    max_codes: int = 0
    train_size: int = 0
    kmeans_iterations: int = 0

    def describe(self) -> str:
        if self.kind == "flat":
            return "exact IndexFlatL2"
        cells = f"{self.nprobe} cell{'s' if self.nprobe > 1 else ''}"
        probes = f"up to {cells} / {self.max_codes:,} vectors" if self.max_codes else cells
        return (
            f"IVF, {self.nlist} cells (Faiss k-means on {self.train_size:,} vectors, {self.kmeans_iterations} "
            f"iterations), {probes} probed per pair"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_nlist(n: int) -> int:
    """The power of two nearest ``1.6 * sqrt(n)``, with at least ``TRAIN_PER_CELL`` training vectors per cell."""
    target = CELLS_PER_SQRT_N * math.sqrt(max(n, 1))
    nlist = 2 ** round(math.log2(target))
    while nlist > 1 and nlist * TRAIN_PER_CELL > n:
        nlist //= 2
    return max(1, nlist)


def plan_index(
    n: int, exact_max: int = DEFAULT_EXACT_MAX, nlist: int | None = None, nprobe: int | None = None
) -> IndexPlan:
    """Exact search up to ``exact_max`` vectors, IVF above (``nlist``/``nprobe`` override the defaults; an explicit
    ``nprobe`` probes exactly that many cells, the default stops at ``PROBE_CELLS`` average cells' worth of vectors)."""
    if n <= exact_max:
        return IndexPlan("flat")
    cells = nlist or default_nlist(n)
    if cells * TRAIN_PER_CELL > n:
        raise ValueError(f"nlist={cells} needs at least {cells * TRAIN_PER_CELL} vectors to train (have {n})")
    return IndexPlan(
        "ivf",
        nlist=cells,
        nprobe=min(cells, nprobe or DEFAULT_NPROBE),
        max_codes=0 if nprobe else PROBE_CELLS * math.ceil(n / cells),
        train_size=min(n, TRAIN_PER_CELL * cells),
        kmeans_iterations=KMEANS_ITERATIONS,
    )


def gpu_count() -> int:
    import faiss

    return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0


@dataclass(frozen=True)
class CellIndex:
    """An inverted file over ``n`` vectors: ``quantizer`` holds the k-means centroids (a Faiss ``IndexFlatL2``),
    ``probes[i]`` the cells vector ``i`` probes, nearest centroid first (``probes[i, 0]`` is its own cell; ``-1``
    past its ``max_codes`` budget). The vectors themselves stay with the caller."""

    quantizer: Any
    probes: np.ndarray

    @property
    def ntotal(self) -> int:
        return len(self.probes)

    @property
    def nlist(self) -> int:
        return int(self.quantizer.ntotal)

    def cell_sizes(self) -> np.ndarray:
        return np.bincount(self.probes[:, 0], minlength=self.nlist)


def limit_probes(probes: np.ndarray, cell_sizes: np.ndarray, max_codes: int) -> np.ndarray:
    """``probes`` (cells nearest first) cut, in place, the way Faiss' ``max_codes`` cuts an IVF search: a vector
    probes its next cell while the cells probed so far hold fewer than ``max_codes`` vectors; the rest become ``-1``."""
    if max_codes <= 0 or probes.shape[1] < 2:
        return probes
    held = np.cumsum(cell_sizes[probes[:, :-1]], axis=1)
    count = 1 + (held < max_codes).sum(axis=1)
    probes[np.arange(probes.shape[1])[None, :] >= count[:, None]] = -1
    return probes


def train_quantizer(vectors: np.ndarray, plan: IndexPlan, seed: int = 0, use_gpu: bool = False) -> Any:
    """The ``plan.nlist`` centroids of a seeded Faiss k-means on a seeded sample of ``plan.train_size`` vectors, in
    an ``IndexFlatL2``."""
    import faiss

    dim = vectors.shape[1]
    sample = vectors[np.sort(np.random.default_rng(seed).choice(len(vectors), plan.train_size, replace=False))]
    params = faiss.ClusteringParameters()
    params.niter = plan.kmeans_iterations
    params.seed = seed
    params.min_points_per_centroid = TRAIN_PER_CELL
    params.max_points_per_centroid = plan.train_size  # k-means sees the whole sample (no second subsampling)
    quantizer = faiss.IndexFlatL2(dim)
    if use_gpu:
        quantizer = faiss.index_cpu_to_all_gpus(quantizer)
    faiss.Clustering(dim, plan.nlist, params).train(sample, quantizer)
    return quantizer


def build_index(vectors: np.ndarray, plan: IndexPlan, seed: int = 0, use_gpu: bool | None = None) -> Any:
    """The index of ``vectors`` following ``plan``: a filled Faiss ``IndexFlatL2``, or a :class:`CellIndex` (k-means
    trained, every vector's probes assigned)."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)  # no copy for float32 C-ordered vectors
    if use_gpu is None:
        use_gpu = gpu_count() > 0
    if plan.kind == "flat":
        index = faiss.IndexFlatL2(vectors.shape[1])
        if use_gpu:
            index = faiss.index_cpu_to_all_gpus(index)
        for start in range(0, len(vectors), 65536):
            index.add(vectors[start : start + 65536])
        return index
    quantizer = train_quantizer(vectors, plan, seed, use_gpu)
    n = len(vectors)
    probes = np.empty((n, plan.nprobe), dtype=np.int64)
    with tqdm(total=n, desc=f"scifibench: IVF cells ({plan.nlist})", unit="pair") as progress:
        for start in range(0, n, ASSIGN_BATCH):
            stop = min(n, start + ASSIGN_BATCH)
            _, probes[start:stop] = quantizer.search(vectors[start:stop], plan.nprobe)
            progress.update(stop - start)
    index = CellIndex(quantizer, probes)
    limit_probes(probes, index.cell_sizes(), plan.max_codes)
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
    differences = vectors.take(safe, axis=0)
    differences -= vectors.take(queries, axis=0)[:, None, :]
    distances = np.sqrt(np.einsum("ijk,ijk->ij", differences, differences))
    return np.where(indices < 0, np.float32(np.inf), distances)


def _without_self(queries: np.ndarray, found: np.ndarray, k: int) -> np.ndarray:
    keep = found != queries[:, None]
    no_self = keep.all(axis=1)
    keep[no_self, -1] = False  # the pair itself was not returned (ties, or an approximate miss): drop the farthest
    return found[keep].reshape(len(queries), k)


def _flat_candidates(index: Any, vectors: np.ndarray, width: int, progress: tqdm) -> np.ndarray:
    """The ``width`` nearest other vectors of every vector by exact Faiss search."""
    n = len(vectors)
    candidates = np.empty((n, width), dtype=np.int64)
    for start in range(0, n, SEARCH_BATCH):
        queries = np.arange(start, min(n, start + SEARCH_BATCH))
        _, found = index.search(vectors[queries], width + 1)
        candidates[queries] = _without_self(queries, found.astype(np.int64), width)
        progress.update(len(queries))
    return candidates


def first_unique(ids: np.ndarray, width: int) -> np.ndarray:
    """Per row (ids nearest first), the first ``width`` distinct ids ``>= 0``, padded with ``-1``."""
    order = np.argsort(ids, axis=1, kind="stable")  # equal ids keep their distance order
    ranked = np.take_along_axis(ids, order, axis=1)
    repeat_ranked = np.zeros(ids.shape, dtype=bool)
    repeat_ranked[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
    drop = np.empty_like(repeat_ranked)
    np.put_along_axis(drop, order, repeat_ranked, axis=1)
    drop |= ids < 0
    keep = np.argsort(drop, axis=1, kind="stable")[:, :width]
    kept = np.take_along_axis(ids, keep, axis=1)
    kept[np.take_along_axis(drop, keep, axis=1)] = -1
    return kept


@dataclass(frozen=True)
class CellLists:
    """Per cell, its members (the vectors whose own cell it is) and its probers (the vectors probing it, ascending):
    ``members[member_bounds[c]:member_bounds[c + 1]]``, ``probers[prober_bounds[c]:prober_bounds[c + 1]]``."""

    members: np.ndarray
    member_bounds: np.ndarray
    probers: np.ndarray
    prober_bounds: np.ndarray

    @property
    def nlist(self) -> int:
        return len(self.member_bounds) - 1


def cell_lists(probes: np.ndarray, nlist: int) -> CellLists:
    """The members and probers of every cell, from each vector's probes (``probes[i, 0]``: its own cell)."""
    own = probes[:, 0]
    member_order = np.argsort(own, kind="stable")
    member_bounds = np.searchsorted(own[member_order], np.arange(nlist + 1))
    prober, slot = np.nonzero(probes >= 0)  # row-major, so every cell's probers come out in ascending order
    probed = probes[prober, slot]
    del slot
    prober_order = np.argsort(probed, kind="stable")
    probers = prober[prober_order]
    prober_bounds = np.searchsorted(probed[prober_order], np.arange(nlist + 1))
    return CellLists(member_order, member_bounds, probers, prober_bounds)


def scan_cells(
    lists: CellLists,
    vectors: Any,
    heap_width: int,
    cells: range,
    progress: tqdm | None,
    lock: threading.Lock,
    held: np.ndarray | None = None,
) -> Any:
    """A Faiss ``ResultHeap`` of ``heap_width`` candidates per vector from the pairs of ``cells``: per cell,
    ``faiss.pairwise_distances`` between its probers and its members, kept for both vectors of each pair. ``vectors``
    needs ``len`` and ``take(ids, axis=0)`` giving float32 rows. Runs single-threaded BLAS in the calling thread.
    ``held``: the ascending ids of the vectors the heap keeps rows for, in that order (the members and probers of
    ``cells``; default every vector), so a share of the cells holds candidates only for the vectors it meets."""
    import faiss

    faiss.omp_set_num_threads(1)  # this thread only: parallel over cells, not inside each product
    heap = faiss.ResultHeap(len(vectors) if held is None else len(held), heap_width)

    def row_of(ids: np.ndarray) -> np.ndarray:
        return ids if held is None else np.searchsorted(held, ids)

    for cell in cells:
        members = lists.members[lists.member_bounds[cell] : lists.member_bounds[cell + 1]].astype(np.int64, copy=False)
        if len(members) == 0:
            continue
        cell_vectors = vectors.take(members, axis=0)
        cell_probers = lists.probers[lists.prober_bounds[cell] : lists.prober_bounds[cell + 1]].astype(
            np.int64, copy=False
        )
        for start in range(0, len(cell_probers), PROBER_BATCH):  # bounds memory for much-probed cells
            queries = cell_probers[start : start + PROBER_BATCH]
            distances = faiss.pairwise_distances(vectors.take(queries, axis=0), cell_vectors)
            # every member probes its own cell first, so it is among the probers: not its own neighbour
            rows = np.minimum(np.searchsorted(queries, members), len(queries) - 1)
            selves = np.flatnonzero(queries[rows] == members)
            distances[rows[selves], selves] = np.inf
            heap.add_result_subset(row_of(queries), distances, members)
            heap.add_result_subset(row_of(members), distances.T, queries)
        if progress is not None:
            with lock:
                progress.update(len(members))
    return heap


def scan_workers(
    lists: CellLists, vectors: Any, heap_width: int, workers: range, stride: int, progress: tqdm | None
) -> Any:
    """The heaps of ``workers`` (worker ``w`` scans cells ``w, w + stride, ...``), one thread each, merged into the
    first one's (not finalised)."""
    lock = threading.Lock()

    def scan(worker: int) -> Any:
        return scan_cells(lists, vectors, heap_width, range(worker, lists.nlist, stride), progress, lock)

    with ThreadPoolExecutor(len(workers)) as pool:
        heaps = list(pool.map(scan, workers))
    merged = heaps[0]
    for other in heaps[1:]:
        merged.add_result(other.D, other.I)
    return merged


def cell_workers(nlist: int) -> int:
    """Threads scanning cells: Faiss' OpenMP thread count, at most one per cell."""
    import faiss

    return max(1, min(faiss.omp_get_max_threads(), nlist))


def cell_candidates(index: CellIndex, vectors: Any, width: int, progress: tqdm) -> np.ndarray:
    """The ``width`` nearest candidates of every vector among the pairs its cells give (see
    curation/scifibench/README.md, **The scan in detail**), by Faiss' BLAS distance: cell by cell,
    ``faiss.pairwise_distances`` between the cell's vectors and the vectors probing it, kept in Faiss result heaps for
    both vectors of each pair. The cells are shared out among ``faiss.omp_get_max_threads()`` threads, each running
    single-threaded BLAS."""
    lists = cell_lists(index.probes, index.nlist)
    # a pair (i, j) can reach i twice: from j's cell (i probes it) and from i's cell (j probes it), so the heaps
    # keep 2 * width to be left with ``width`` distinct candidates
    workers = cell_workers(index.nlist)
    merged = scan_workers(lists, vectors, 2 * width, range(workers), workers, progress)
    merged.finalize()
    return first_unique(merged.I, width)


def rerank(vectors: np.ndarray, candidates: np.ndarray, k: int, plan: IndexPlan, first: int = 0) -> Neighbours:
    """The ``k`` nearest of each row's candidates by exact distance, ties by index, in threads over rows
    (``candidates[r]`` are vector ``first + r``'s)."""
    import faiss

    n, rows_total = len(vectors), len(candidates)
    indices = np.empty((rows_total, k), dtype=np.int64)
    distances = np.empty((rows_total, k), dtype=np.float32)

    def rank(rows: range) -> None:
        for start in range(rows.start, rows.stop, RERANK_BATCH):
            local = np.arange(start, min(rows.stop, start + RERANK_BATCH))
            found = candidates[local]
            exact = exact_distances(vectors, local + first, found)
            order = np.lexsort((np.where(found < 0, n, found), exact), axis=1)[:, :k]
            indices[local] = np.take_along_axis(found, order, axis=1)
            distances[local] = np.take_along_axis(exact, order, axis=1)

    workers = max(1, faiss.omp_get_max_threads())
    bounds = np.linspace(0, rows_total, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(rank, [range(bounds[w], bounds[w + 1]) for w in range(workers)]))
    return Neighbours(indices, distances, plan)


def search_index(index: Any, vectors: np.ndarray, k: int, plan: IndexPlan) -> Neighbours:
    """Every vector's ``k`` nearest other vectors in ``index`` (built from ``vectors``), exact distances, ties by
    index."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(vectors)
    if not 0 < k < n:
        raise ValueError(f"k must be between 1 and {n - 1} for {n} vectors, got {k}")
    width = min(k + RERANK_MARGIN, n - 1)
    with tqdm(total=n, desc=f"scifibench: {k}-NN search ({plan.describe()})", unit="pair") as progress:
        if isinstance(index, CellIndex):
            candidates = cell_candidates(index, vectors, width, progress)
        else:
            candidates = _flat_candidates(index, vectors, width, progress)
    return rerank(vectors, candidates, k, plan)


def nearest_neighbours(
    vectors: np.ndarray, k: int = DEFAULT_K, plan: IndexPlan | None = None, seed: int = 0, use_gpu: bool | None = None
) -> Neighbours:
    """The ``k`` nearest other vectors of every vector (the index used: curation/scifibench/README.md,
    **Approximate index**)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n < 2:
        raise ValueError(f"need at least 2 vectors to find neighbours, got {n}")
    plan = plan or plan_index(n)
    return search_index(build_index(vectors, plan, seed, use_gpu), vectors, min(k, n - 1), plan)
