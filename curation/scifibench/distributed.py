"""SciFIBench curation on a Dask cluster (``scifig curate scifibench --cluster``): the CLIP embedding shard by shard
and the neighbour scan cell group by cell group run as tasks on the cluster's workers, which read the input and
read and write their files in the cache folder; this process plans, merges and writes the set. What runs where and
what the results guarantee: docs/scale-out.md, "SciFIBench curation on a Dask cluster".
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curation.cluster import Cluster, call_in_task, log
from curation.scifibench.embed import ClipEncoder, _save_atomic, _shard_path, _stack
from curation.scifibench.neighbours import (
    RERANK_MARGIN,
    CellLists,
    IndexPlan,
    Neighbours,
    build_index,
    cell_workers,
    nearest_neighbours,
    scan_cells,
)
from curation.scifibench.ondisk import CODES_SOURCE, MERGE_BLOCK, DecodedCodes, merge_block, open_vectors

if TYPE_CHECKING:
    from curation.scifibench.embed import ClipSpec
    from curation.scifibench.pairs import Pairs

LIST_BLOCK = 1 << 20  # rows of the probes read at once while a task gathers its cells' lists

_held: dict[tuple[Any, ...], Any] = {}  # per worker process: the CLIP model and the input's rows, loaded once
_held_lock = threading.Lock()


def _once(key: tuple[Any, ...], make: Any) -> Any:
    with _held_lock:
        if key not in _held:
            _held[key] = make()
        return _held[key]


# --- the embedding ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardJob:
    """One cached shard to embed: its number, and per pair the input row, the normalised caption and the SHA-256
    of the image bytes this process read (the worker checks it reads the same image)."""

    shard: int
    rows: list[int]
    captions: list[str]
    hashes: list[str]


def _embed_shard(
    source: str, split: str | None, spec: ClipSpec, device: str | None, directory: str, job: ShardJob, batch: int
) -> int:
    import torch

    from curation.scifibench.pairs import image_cell, load_rows
    from scifig_tasks.core.errors import DataError
    from scifig_tasks.core.images import to_rgb

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    encoder = _once(("clip", spec, device), lambda: ClipEncoder(spec, device))
    dataset, origin, base_dir = _once(("pairs", source, split), lambda: load_rows(source, split))
    column = dataset.select_columns(["image"])
    parts = []
    for begin in range(0, len(job.rows), batch):  # the batches of the one-process embedding: from the shard's start
        rows = job.rows[begin : begin + batch]
        pixels = []
        for row, value, digest in zip(rows, column[rows]["image"], job.hashes[begin : begin + batch], strict=True):
            cell = image_cell(value, origin, row, base_dir)
            if hashlib.sha256(cell["bytes"]).hexdigest() != digest:
                raise DataError(
                    origin,
                    row,
                    "image",
                    f"the Dask worker on {socket.gethostname()} reads another image here than this command did: give "
                    "every worker the same --pairs data",
                )
            pixels.append(encoder.preprocess(to_rgb(cell)))
        parts.append(encoder.joint(_stack(pixels), job.captions[begin : begin + batch]))
    _save_atomic(_shard_path(Path(directory), job.shard), np.concatenate(parts))
    return job.shard


def embed_shard(*args: Any) -> int:
    """Task: embed one shard (:class:`ShardJob`) as the one-process embedding does, in the same batches, and write
    it to the cache folder; returns the shard's number."""
    return call_in_task(_embed_shard, *args)


def embed_on_cluster(
    cluster: Cluster,
    pairs: Pairs,
    spec: ClipSpec,
    device: str | None,
    directory: Path,
    spans: list[tuple[int, int]],
    shards: list[int],
    batch_size: int,
) -> list[int]:
    """Embed ``shards`` (of ``spans``) on the cluster, one task per shard, into ``directory``; the shards done, in
    order. Every worker must see ``directory`` and the input by this process's paths (checked first)."""
    if pairs.source is None:
        raise ValueError(f"{pairs.origin}: pairs not read by read_pairs cannot be embedded on a cluster")
    cluster.check_shared(directory, "the cache folder", "--cache-dir")
    source = pairs.source
    if Path(source).expanduser().exists():  # a path, not a Hub id: the workers read it by its absolute path
        source = str(Path(source).expanduser().absolute())
        cluster.check_input(Path(source), "--pairs")
    calls = []
    for shard in shards:
        positions = range(*spans[shard])
        job = ShardJob(
            shard,
            [pairs.rows[p] for p in positions],
            [pairs.captions[p] for p in positions],
            [pairs.image_hashes[p] for p in positions],
        )
        calls.append((source, pairs.split, spec, device, str(directory.absolute()), job, batch_size))
    log(f"embedding {len(shards)} shards of up to {max(end - start for start, end in spans):,} pairs: one task each")
    label = f"scifibench: embedding ({spec.model}) on the cluster"
    return cluster.map(embed_shard, calls, label, "pair", [len(range(*spans[s])) for s in shards])


# --- the neighbour scan ----------------------------------------------------------------------------------------------


def group_lists(probes: np.ndarray, nlist: int, group: int, groups: int) -> tuple[CellLists, np.ndarray]:
    """The lists of the cells ``c`` with ``c % groups == group`` (every other cell empty), in the order
    :func:`.neighbours.cell_lists` gives them, and the ascending ids of the vectors they meet (their probers; every
    member probes its own cell). ``probes`` is read ``LIST_BLOCK`` rows at a time."""
    own_cells, member_ids, probed_cells, prober_ids = [], [], [], []
    for start in range(0, len(probes), LIST_BLOCK):
        block = np.asarray(probes[start : start + LIST_BLOCK])
        own = block[:, 0]
        mine = np.flatnonzero(own % groups == group)
        own_cells.append(own[mine])
        member_ids.append(mine + start)
        prober, slot = np.nonzero((block >= 0) & (block % groups == group))  # row-major: ascending probers
        probed_cells.append(block[prober, slot])
        prober_ids.append(prober + start)
    own, members = np.concatenate(own_cells), np.concatenate(member_ids)
    member_order = np.argsort(own, kind="stable")
    probed, probers = np.concatenate(probed_cells), np.concatenate(prober_ids)
    prober_order = np.argsort(probed, kind="stable")
    lists = CellLists(
        members[member_order],
        np.searchsorted(own[member_order], np.arange(nlist + 1)),
        probers[prober_order],
        np.searchsorted(probed[prober_order], np.arange(nlist + 1)),
    )
    return lists, np.unique(probers)


def _scan_group(scratch: str, source: str, nlist: int, heap_width: int, group: int, groups: int) -> tuple[str, ...]:
    directory = Path(scratch)
    if source == CODES_SOURCE:
        import faiss

        codec = faiss.deserialize_index(np.load(directory / "codec.npy"))
        vectors: Any = DecodedCodes(np.load(directory / "codes.npy", mmap_mode="r"), codec)
    else:
        vectors = np.load(source, mmap_mode="r")
    lists, held = group_lists(np.load(directory / "probes.npy", mmap_mode="r"), nlist, group, groups)
    heap = scan_cells(lists, vectors, heap_width, range(group, nlist, groups), None, threading.Lock(), held)
    paths = tuple(str(directory / f"group-{group}-{part}.npy") for part in ("rows", "D", "I"))
    for path, array in zip(paths, (held, heap.D, heap.I), strict=True):
        np.save(path, array)
    return paths


def scan_group(*args: Any) -> tuple[str, ...]:
    """Task: scan the cells ``c`` with ``c % groups == group`` as one thread of the one-process scan with ``groups``
    threads scans them, its heap keeping rows only for the vectors those cells meet; the rows' ids, distances and
    ids written to the scratch folder, their paths returned. ``source``: :data:`CODES_SOURCE` or the float vectors'
    ``.npy`` file."""
    return call_in_task(_scan_group, *args)


def scan_groups(cluster: Cluster, nlist: int) -> int:
    """How many cell groups the scan is cut into: the threads the one-process scan would run here
    (:func:`.neighbours.cell_workers`), or the cluster's worker threads where those are more (one cell each at
    most). With as many Faiss threads the one-process scan gives the same heaps, merged in the same order."""
    return min(nlist, max(cell_workers(nlist), cluster.threads()))


def _merge_block(
    scratch: str, vectors: str, groups: int, width: int, k: int, plan: IndexPlan, start: int, stop: int
) -> tuple[np.ndarray, np.ndarray]:
    directory = Path(scratch)
    heaps = [
        (np.load(directory / f"group-{g}-D.npy", mmap_mode="r"), np.load(directory / f"group-{g}-I.npy", mmap_mode="r"))
        for g in range(groups)
    ]
    held = [np.load(directory / f"group-{g}-rows.npy", mmap_mode="r") for g in range(groups)]
    part = merge_block(open_vectors(Path(vectors)), heaps, width, k, plan, start, stop, held)
    return part.indices, part.distances


def merge_task(*args: Any) -> tuple[np.ndarray, np.ndarray]:
    """Task: vectors ``start`` to ``stop`` of the merge of the cell groups' heaps and the exact re-ranking
    (:func:`.ondisk.merge_block`), the float vectors read memory-mapped from their ``.npy`` file."""
    return call_in_task(_merge_block, *args)


def search_on_cluster(
    cluster: Cluster,
    scratch: Path,
    source: str,
    probes: np.ndarray,
    nlist: int,
    heap_width: int,
    k: int,
    plan: IndexPlan,
    vectors: Path,
) -> Neighbours:
    """Every vector's ``k`` neighbours, as :func:`.ondisk.merged_neighbours` gives them from the heaps of the
    one-process scan: the cell groups scanned, then their heaps merged and re-ranked by exact distance
    ``MERGE_BLOCK`` vectors at a time, each a task on the cluster (bound to its cluster: an
    :data:`.ondisk.ClusterSearch`). ``scratch`` (shared with every worker, checked) receives the probes and the
    groups' heaps; the caller has put the codes there for :data:`.ondisk.CODES_SOURCE`; ``vectors``: the float
    vectors' ``.npy`` file."""
    cluster.check_shared(scratch, "the cache folder", "--cache-dir")
    np.save(scratch / "probes.npy", probes)
    groups = scan_groups(cluster, nlist)
    log(f"neighbour scan: {nlist} cells in {groups} groups, one task each (as {groups} Faiss threads in one process)")
    folder = str(scratch.absolute())
    calls = [(folder, source, nlist, heap_width, group, groups) for group in range(groups)]
    cluster.map(scan_group, calls, "scifibench: cell groups scanned on the cluster", "group")
    n = len(probes)
    blocks = [(start, min(n, start + MERGE_BLOCK)) for start in range(0, n, MERGE_BLOCK)]
    plural = "s" * (len(blocks) > 1)
    log(f"merge and exact re-ranking: {len(blocks)} block{plural} of up to {MERGE_BLOCK:,} pairs, a task each")
    width, path = heap_width // 2, str(Path(vectors).absolute())
    merges = [(folder, path, groups, width, k, plan, start, stop) for start, stop in blocks]
    sizes = [stop - start for start, stop in blocks]
    parts = cluster.map(merge_task, merges, "scifibench: merged and re-ranked on the cluster", "pair", sizes)
    return Neighbours(np.concatenate([i for i, _ in parts]), np.concatenate([d for _, d in parts]), plan)


def memory_neighbours_on_cluster(
    vectors: np.ndarray,
    path: Path,
    k: int,
    plan: IndexPlan,
    seed: int,
    use_gpu: bool | None,
    cluster: Cluster,
    scratch: Path,
) -> Neighbours:
    """:func:`.neighbours.nearest_neighbours` of the in-memory ``vectors`` (saved at ``path``, which the workers
    read) with the inverted file's cells scanned, merged and re-ranked on the cluster: the same neighbours. An exact
    plan is searched here."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n < 2:
        raise ValueError(f"need at least 2 vectors to find neighbours, got {n}")
    if plan.kind == "flat":
        return nearest_neighbours(vectors, k, plan, seed, use_gpu)
    k = min(k, n - 1)
    index = build_index(vectors, plan, seed, use_gpu)
    probes, nlist = index.probes, index.nlist
    del index
    width = min(k + RERANK_MARGIN, n - 1)
    work = Path(tempfile.mkdtemp(prefix="scifibench-knn-", dir=scratch))
    try:
        return search_on_cluster(cluster, work, str(Path(path).absolute()), probes, nlist, 2 * width, k, plan, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
