"""Nearest neighbours of joint vectors kept on disk (SciFIBench paper §3.3, steps 3–4, past one machine's memory):
the rule of :mod:`.neighbours` on a memory-mapped ``.npy`` file, 8-bit codes in memory, exact re-ranking, cells
shared among processes.
Manual: curation/scifibench/README.md, "Steps", **Vectors on disk** and **The on-disk search in detail**;
docs/scale-out.md, "SciFIBench curation on large corpora".
"""

from __future__ import annotations

import contextlib
import multiprocessing
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from curation.scifibench.neighbours import (
    RERANK_MARGIN,
    CellLists,
    IndexPlan,
    Neighbours,
    build_index,
    cell_lists,
    cell_workers,
    first_unique,
    nearest_neighbours,
    rerank,
    scan_workers,
)

DISK_RERANK_MARGIN = 8  # candidates re-ranked beyond k when the scan compares 8-bit codes
CODES = "SQ8"  # Faiss scalar quantizer, 8 bits per dimension
RECALL_AT = 5
DEFAULT_RECALL_SAMPLE = 1000
ENCODE_BATCH = 65536  # vectors read from disk and encoded per call
RECALL_BLOCK = 65536  # database vectors per exact-search block of the recall check
MERGE_BLOCK = 65536  # vectors whose heaps are merged and re-ranked together
GB = 1024**3

CODES_SOURCE = "codes"  # a cell scan elsewhere reads the 8-bit codes (codes.npy, codec.npy) in its scratch folder

ClusterSearch = Callable[[Path, str, np.ndarray, int, int, int, IndexPlan, Path], Neighbours]
"""``(scratch, source, probes, nlist, heap_width, k, plan, vectors) -> neighbours``: the cell scan, the merge and the
exact re-ranking run elsewhere (:func:`.distributed.search_on_cluster` with its cluster bound); ``vectors``: the
float vectors' ``.npy`` file."""


class DiskSpaceError(OSError):
    """Too little free disk for a step's files (one line: where, how much is needed, how much is free)."""


def check_disk(directory: Path, need: int, what: str) -> None:
    """Raise :class:`DiskSpaceError` when ``directory`` (or its nearest existing parent) has less than ``need`` bytes
    free."""
    probe = Path(directory)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        raise DiskSpaceError(
            f"not enough free disk for {what} in {directory}: {need / GB:.2f} GB needed, {free / GB:.2f} GB free; "
            "free space there or set --cache-dir to a larger disk"
        )


@dataclass(frozen=True)
class DiskPlan(IndexPlan):
    """An :class:`IndexPlan` searched with the vectors on disk, with the codes and the measured recall."""

    codes: str = CODES
    rerank_margin: int = DISK_RERANK_MARGIN
    recall_at_5: float | None = None
    recall_sample: int = 0

    def describe(self) -> str:
        base = IndexPlan(**{f: getattr(self, f) for f in IndexPlan.__dataclass_fields__}).describe()
        if self.kind == "flat":
            return f"{base}, vectors on disk"
        text = (
            f"{base}; vectors on disk, 8-bit codes in memory, {self.rerank_margin} spare candidates re-ranked exactly"
        )
        if self.recall_at_5 is None:
            return text
        return f"{text}; recall@{RECALL_AT} {self.recall_at_5:.4f} against exact search on {self.recall_sample:,} pairs"


class DecodedCodes:
    """8-bit codes that give float32 rows on ``take`` (what :func:`.neighbours.scan_cells` reads)."""

    def __init__(self, codes: np.ndarray, codec: Any) -> None:
        self.codes, self.codec = codes, codec

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, ids: np.ndarray, axis: int = 0) -> np.ndarray:
        return self.codec.sa_decode(np.ascontiguousarray(self.codes[ids]))


def open_vectors(path: Path) -> np.ndarray:
    """The ``n x d`` float32 vectors of a ``.npy`` file, mapped read-only (nothing read yet)."""
    vectors = np.load(path, mmap_mode="r")
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise ValueError(f"{path}: expected an n x d float32 array, got {vectors.dtype} {vectors.shape}")
    return vectors


def train_codec(vectors: np.ndarray, plan: IndexPlan, seed: int) -> Any:
    """A Faiss 8-bit ``IndexScalarQuantizer`` trained on the k-means sample (same seeded rows)."""
    import faiss

    sample = vectors[np.sort(np.random.default_rng(seed).choice(len(vectors), plan.train_size, replace=False))]
    codec = faiss.IndexScalarQuantizer(vectors.shape[1], faiss.ScalarQuantizer.QT_8bit)
    codec.train(np.ascontiguousarray(sample, dtype=np.float32))
    return codec


def encode(vectors: np.ndarray, codec: Any, path: Path | None = None) -> np.ndarray:
    """The codes of every vector, read from disk in order, ``ENCODE_BATCH`` at a time; with ``path``, written into
    that ``.npy`` file as they are made (returned mapped), never whole in memory."""
    n = len(vectors)
    shape = (n, codec.sa_code_size())
    if path is None:
        codes = np.empty(shape, dtype=np.uint8)
    else:
        codes = np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=shape)
    with tqdm(total=n, desc="scifibench: 8-bit codes", unit="pair") as progress:
        for start in range(0, n, ENCODE_BATCH):
            stop = min(n, start + ENCODE_BATCH)
            codes[start:stop] = codec.sa_encode(np.ascontiguousarray(vectors[start:stop], dtype=np.float32))
            progress.update(stop - start)
    return codes


def compact_lists(probes: np.ndarray, nlist: int) -> CellLists:
    """:func:`.neighbours.cell_lists` with 32-bit ids (half the memory of the probers' list)."""
    lists = cell_lists(probes, nlist)
    return CellLists(
        lists.members.astype(np.int32), lists.member_bounds, lists.probers.astype(np.int32), lists.prober_bounds
    )


def scan_share(scratch: str, nlist: int, heap_width: int, rank: int, processes: int, threads: int) -> tuple[str, str]:
    """Share ``rank`` of ``processes`` of the scan (run in a fresh process or on a worker): the cells ``c`` with
    ``c % (processes x threads)`` among this share's ``threads`` thread numbers; its heap written to ``scratch``."""
    import faiss

    directory = Path(scratch)
    codec = faiss.deserialize_index(np.load(directory / "codec.npy"))
    codes = np.load(directory / "codes.npy", mmap_mode="r")
    lists = compact_lists(np.load(directory / "probes.npy", mmap_mode="r"), nlist)
    stride = processes * threads
    workers = range(rank * threads, (rank + 1) * threads)  # the threads of a one-process scan with `stride` threads
    label = f"scifibench: cell scan, process {rank + 1}/{processes}"
    with tqdm(total=len(codes), desc=label, unit="pair", position=rank) as progress:
        heap = scan_workers(lists, DecodedCodes(codes, codec), heap_width, workers, stride, progress)
    paths = (directory / f"heap-{rank}-D.npy", directory / f"heap-{rank}-I.npy")
    np.save(paths[0], heap.D)
    np.save(paths[1], heap.I)
    return str(paths[0]), str(paths[1])


def faiss_serialized(codec: Any) -> np.ndarray:
    """``codec`` as the bytes a worker reads back with ``faiss.deserialize_index``."""
    import faiss

    return faiss.serialize_index(codec)


def process_heaps(
    codes: np.ndarray,
    codec: Any,
    probes: np.ndarray,
    nlist: int,
    heap_width: int,
    processes: int,
    scratch: Path,
    executor: Executor | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The scan's heaps (distances, ids; mapped from ``scratch``), the cells split among ``processes`` shares, each
    with an equal part of Faiss' threads: merged, the heaps of the one-process scan with as many threads.
    ``executor`` runs the shares (default: that many freshly spawned processes; any
    ``concurrent.futures.Executor`` whose workers see ``scratch``, e.g. a Dask ``Client.get_executor()``)."""
    import faiss

    n = len(codes)
    need = codes.nbytes + probes.nbytes + processes * n * heap_width * 12
    check_disk(scratch, need, f"the search's files ({processes} processes)")
    scratch.mkdir(parents=True, exist_ok=True)
    np.save(scratch / "codes.npy", codes)
    np.save(scratch / "probes.npy", probes)
    np.save(scratch / "codec.npy", faiss_serialized(codec))
    threads = max(1, faiss.omp_get_max_threads() // processes)
    context = multiprocessing.get_context("spawn")  # no fork of a process whose OpenMP threads have run
    with contextlib.ExitStack() as stack:
        pool = executor or stack.enter_context(ProcessPoolExecutor(processes, mp_context=context))
        jobs = [
            pool.submit(scan_share, str(scratch), nlist, heap_width, rank, processes, threads)
            for rank in range(processes)
        ]
        paths = [job.result() for job in jobs]
    return [(np.load(d, mmap_mode="r"), np.load(i, mmap_mode="r")) for d, i in paths]


def merge_block(
    vectors: np.ndarray,
    heaps: list[tuple[np.ndarray, np.ndarray]],
    width: int,
    k: int,
    plan: IndexPlan,
    start: int,
    stop: int,
    held: list[np.ndarray] | None = None,
) -> Neighbours:
    """Vectors ``start`` to ``stop`` of :func:`merged_neighbours` (what a cluster's task computes of it)."""
    import faiss

    merged = faiss.ResultHeap(stop - start, heaps[0][0].shape[1])
    for number, (heap_d, heap_i) in enumerate(heaps):
        if held is None:
            rows, part_d, part_i = slice(None), heap_d[start:stop], heap_i[start:stop]
        else:
            low, high = np.searchsorted(held[number], [start, stop])
            rows, part_d, part_i = held[number][low:high] - start, heap_d[low:high], heap_i[low:high]
        if number == 0:  # the merge starts from the first heap's rows
            merged.D[rows], merged.I[rows] = part_d, part_i
        elif held is None:
            merged.add_result(np.ascontiguousarray(part_d), np.ascontiguousarray(part_i))
        else:
            merged.add_result_subset(rows, np.ascontiguousarray(part_d), np.ascontiguousarray(part_i))
    merged.finalize()
    return rerank(vectors, first_unique(merged.I, width), k, plan, first=start)


def merged_neighbours(
    vectors: np.ndarray,
    heaps: list[tuple[np.ndarray, np.ndarray]],
    width: int,
    k: int,
    plan: IndexPlan,
    held: list[np.ndarray] | None = None,
) -> Neighbours:
    """The heaps merged (into the first one's order, as :func:`.neighbours.scan_workers` merges), their ``width``
    distinct candidates re-ranked by exact distance, ``MERGE_BLOCK`` vectors at a time. ``held``: per heap, the
    ascending ids of the vectors its rows hold (:func:`.neighbours.scan_cells`); a vector a heap holds no row for
    has nothing in it, as in a heap of every vector that no pair of its cells reached."""
    n = len(vectors)
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k), dtype=np.float32)
    with tqdm(total=n, desc="scifibench: merge and exact re-ranking", unit="pair") as progress:
        for start in range(0, n, MERGE_BLOCK):
            stop = min(n, start + MERGE_BLOCK)
            part = merge_block(vectors, heaps, width, k, plan, start, stop, held)
            indices[start:stop], distances[start:stop] = part.indices, part.distances
            progress.update(stop - start)
    return Neighbours(indices, distances, plan)


def exact_sample(vectors: np.ndarray, queries: np.ndarray, at: int = RECALL_AT) -> np.ndarray:
    """Each sampled query's ``at`` nearest other vectors by exact search, the file streamed block by block."""
    import faiss

    points = np.ascontiguousarray(vectors[queries], dtype=np.float32)
    heap = faiss.ResultHeap(len(queries), at + 1)
    for start in range(0, len(vectors), RECALL_BLOCK):
        block = np.ascontiguousarray(vectors[start : start + RECALL_BLOCK], dtype=np.float32)
        distances, ids = faiss.knn(points, block, min(at + 1, len(block)))
        heap.add_result(np.ascontiguousarray(distances), np.ascontiguousarray(ids + start))
    heap.finalize()
    return np.array([[j for j in row if j != query][:at] for row, query in zip(heap.I, queries, strict=True)])


def sampled_recall(vectors: np.ndarray, indices: np.ndarray, size: int, seed: int, at: int = RECALL_AT) -> float:
    """Recall@``at`` of ``indices`` against exact search on ``size`` seeded sampled pairs."""
    rng = np.random.default_rng(seed + 1)
    queries = np.sort(rng.choice(len(vectors), min(size, len(vectors)), replace=False))
    truth = exact_sample(vectors, queries, at)
    found = indices[queries, :at]
    hits = sum(len(set(t.tolist()) & set(f.tolist())) for t, f in zip(truth, found, strict=True))
    return hits / truth.size


def disk_neighbours(
    path: Path,
    k: int,
    plan: IndexPlan,
    seed: int = 0,
    use_gpu: bool | None = None,
    processes: int = 1,
    scratch: Path | None = None,
    recall_sample: int = DEFAULT_RECALL_SAMPLE,
    executor: Executor | None = None,
    cluster_search: ClusterSearch | None = None,
) -> Neighbours:
    """The ``k`` nearest other vectors of every vector of the ``.npy`` file ``path`` (see
    curation/scifibench/README.md, **The on-disk search in detail**);
    ``processes`` > 1: the scan shared as :func:`process_heaps` does, in a scratch directory under ``scratch``
    (default: the system's temporary directory), removed afterwards; ``cluster_search``: the scan's cell groups and the
    merge run elsewhere, on a Dask cluster (:func:`.distributed.search_on_cluster`), from the codes in a scratch
    directory under ``scratch`` and ``path``, which every worker sees."""
    vectors = open_vectors(path)
    n = len(vectors)
    if n < 2:
        raise ValueError(f"need at least 2 vectors to find neighbours, got {n}")
    k = min(k, n - 1)
    if plan.kind == "flat":
        found = nearest_neighbours(vectors, k, plan, seed, use_gpu)
        exact = DiskPlan(**plan.to_dict(), codes="none", rerank_margin=RERANK_MARGIN)  # full-precision search
        return Neighbours(found.indices, found.distances, exact)
    index = build_index(vectors, plan, seed, use_gpu)
    nlist, heap_width = index.nlist, 2 * min(k + DISK_RERANK_MARGIN, n - 1)
    codec = train_codec(vectors, plan, seed)
    if cluster_search is not None:
        work = Path(tempfile.mkdtemp(prefix="scifibench-knn-", dir=scratch))
        try:
            encode(vectors, codec, work / "codes.npy").flush()
            np.save(work / "codec.npy", faiss_serialized(codec))
            probes = index.probes
            del index
            found = cluster_search(work, CODES_SOURCE, probes, nlist, heap_width, k, plan, path)
            del probes
        finally:
            shutil.rmtree(work, ignore_errors=True)
    elif processes > 1:
        work = Path(tempfile.mkdtemp(prefix="scifibench-knn-", dir=scratch))
        try:
            heaps = process_heaps(
                encode(vectors, codec), codec, index.probes, nlist, heap_width, processes, work, executor
            )
            del index
            found = merged_neighbours(vectors, heaps, heap_width // 2, k, plan)
            del heaps
        finally:
            shutil.rmtree(work, ignore_errors=True)
    else:
        lists = compact_lists(index.probes, nlist)  # the probes are not needed past this point
        del index
        codes = encode(vectors, codec)
        workers = cell_workers(nlist)
        with tqdm(total=n, desc=f"scifibench: cell scan ({workers} threads)", unit="pair") as progress:
            heap = scan_workers(lists, DecodedCodes(codes, codec), heap_width, range(workers), workers, progress)
        del codes, lists
        found = merged_neighbours(vectors, [(heap.D, heap.I)], heap_width // 2, k, plan)
        del heap
    recall = sampled_recall(vectors, found.indices, recall_sample, seed) if recall_sample else None
    final = DiskPlan(**plan.to_dict(), recall_at_5=recall, recall_sample=min(recall_sample, n))
    return Neighbours(found.indices, found.distances, final)
