"""SciFIBench curation on a Dask cluster (``scifig curate scifibench --cluster``,
``curation/scifibench/distributed.py``): one curation on a two-worker local cluster writes, byte for byte, what the
one-process curation writes (the embedding shards and the neighbour scan's cell groups ran as the workers' tasks);
the cell groups merge to the one-process neighbours in memory too, with the tasks run here; and the options that
cannot go together stop in one line before any work."""

from __future__ import annotations

import json
import pickle
import re
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest

pytest.importorskip("faiss")

import faiss  # noqa: E402

from curation import cluster as cluster_module  # noqa: E402
from curation.cluster import (  # noqa: E402
    FROM_DASK_CONFIG,
    Cluster,
    ClusterError,
    call_in_task,
    check_shared,
    cluster_address,  # noqa: E402
)
from curation.scifibench import distributed  # noqa: E402
from curation.scifibench.cli import main  # noqa: E402
from curation.scifibench.distributed import group_lists, memory_neighbours_on_cluster  # noqa: E402
from curation.scifibench.neighbours import cell_lists, nearest_neighbours, plan_index  # noqa: E402
from scifig_tasks.core.clip_baseline import tiny_config  # noqa: E402
from scifig_tasks.core.errors import DataError  # noqa: E402
from tests.curation.test_scifibench_curation_pipeline import caption, curate_args, png  # noqa: E402

PAIRS = 256  # above --exact-max 100: an inverted file of 8 cells (the default nlist for 256 pairs)
PRIMARIES = ["cs.CV", "cs.LG", "cs.CL", "cs.AI", "cs.RO", "cs.NI", "stat.ML", "eess.IV"]


def write_pairs(path: Path) -> Path:
    rows = [
        {
            "image": {"bytes": png(7000 + i), "path": None},
            "caption": caption(7000 + i),
            "paper_id": f"2301.{i:05d}",
            "categories": [PRIMARIES[i % len(PRIMARIES)]],
        }
        for i in range(PAIRS)
    ]
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "caption": datasets.Value("string"),
            "paper_id": datasets.Value("string"),
            "categories": datasets.List(datasets.Value("string")),
        }
    )
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path


def written(out: Path) -> dict[str, bytes]:
    """Every file the curation wrote outside its cache (and the lock file), by path under ``out``."""
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and "cache" not in path.relative_to(out).parts and not path.name.startswith(".scifig")
    }


@pytest.mark.slow
@pytest.mark.cli
def test_a_two_worker_local_cluster_curates_what_one_process_curates(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = write_pairs(tmp_path / "pairs.parquet")
    common = ["--vectors-on-disk", "--exact-max", "100", "--shard-size", "32", "--gold-size", "4"]
    common += ["--silver-size", "12"]
    single, distributed = tmp_path / "single" / "sfb", tmp_path / "cluster" / "sfb"
    for folder in (single, distributed):  # each run from its own folder, into "sfb": the same command line
        folder.parent.mkdir()
    monkeypatch.chdir(single.parent)
    assert main(curate_args(pairs, Path("sfb"), tiny_config(), *common)) == 0
    single_log = capsys.readouterr().err.replace("\r", "\n")
    monkeypatch.chdir(distributed.parent)
    args = curate_args(pairs, Path("sfb"), tiny_config(), *common, "--cluster", "local", "--cluster-workers", "2")
    assert main(args) == 0, capsys.readouterr().err[-3000:]
    cluster_log = capsys.readouterr().err.replace("\r", "\n")
    assert "starting a local Dask cluster: 2 worker processes" in cluster_log
    assert "embedding 8 shards of up to 32 pairs: one task each" in cluster_log  # the workers embedded
    assert re.search(r"8 cells in \d+ groups, one task each", cluster_log)  # so was the cell scan ...
    assert "merge and exact re-ranking: 1 block of up to 65,536 pairs, a task each" in cluster_log  # ... and merge
    summary = json.loads((single / "curation.json").read_text())
    assert summary["index"]["kind"] == "ivf" and summary["index"]["nlist"] == 8
    recall = re.compile(r"recall@5 against exact search on [\d,]+ sampled pairs: [\d.]+")
    assert recall.findall(cluster_log) == recall.findall(single_log) != []
    files = written(single)
    assert len(files) > 10 and written(distributed) == files  # tiers, random negatives, sheet, card, curation.json
    cached = [sorted((root / "cache" / "neighbours").glob("*.npz")) for root in (single, distributed)]
    assert [path.name for path in cached[0]] == [path.name for path in cached[1]] != []
    first, second = (np.load(paths[0]) for paths in cached)
    np.testing.assert_array_equal(first["indices"], second["indices"])
    np.testing.assert_array_equal(first["distances"], second["distances"])
    shards = [sorted((root / "cache" / "embeddings").rglob("shard-*.npy")) for root in (single, distributed)]
    assert len(shards[0]) == PAIRS // 32 and all(
        np.load(a).tobytes() == np.load(b).tobytes() for a, b in zip(*shards, strict=True)
    )
    assert not list((distributed / "cache").glob("scifibench-knn-*"))  # the scan's scratch folder is gone


class InProcess:
    """A stand-in for :class:`curation.cluster.Cluster` that runs each task here, one after another."""

    def __init__(self, threads: int) -> None:
        self.ran: list[str] = []
        self._threads = threads

    def threads(self) -> int:
        return self._threads

    def map(self, function: Callable[..., Any], calls: Sequence[tuple[Any, ...]], desc: str, *_: object) -> list[Any]:
        self.ran += [function.__name__] * len(calls)
        return [function(*call) for call in calls]

    def check_shared(self, folder: Path, what: str, option: str) -> None:
        assert Path(folder).is_dir()

    def check_input(self, path: Path, option: str) -> None:
        assert Path(path).exists()


def test_cell_groups_scanned_as_tasks_merge_to_the_in_memory_neighbours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(distributed, "MERGE_BLOCK", 400)  # merged and re-ranked in 3 tasks
    vectors = np.random.default_rng(5).normal(size=(900, 10)).astype(np.float32)  # no clusters: cells cut through
    np.save(tmp_path / "joint.npy", vectors)
    plan = plan_index(len(vectors), exact_max=100, nlist=16, nprobe=3)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(3)  # the one-process scan in 3 threads; the cluster's 3 groups scan as they do
    try:
        expected = nearest_neighbours(vectors, 6, plan)
        stand_in = InProcess(threads=1)  # fewer worker threads than here: still 3 groups
        found = memory_neighbours_on_cluster(vectors, tmp_path / "joint.npy", 6, plan, 0, False, stand_in, tmp_path)
    finally:
        faiss.omp_set_num_threads(threads)
    assert stand_in.ran == ["scan_group"] * 3 + ["merge_task"] * 3
    np.testing.assert_array_equal(found.indices, expected.indices)
    np.testing.assert_array_equal(found.distances, expected.distances)
    assert found.plan == expected.plan
    assert [path.name for path in tmp_path.iterdir()] == ["joint.npy"]  # the scratch folder is gone
    probes = np.random.default_rng(0).integers(-1, 16, size=(500, 4))
    probes[:, 0] = np.random.default_rng(1).integers(0, 16, size=500)  # every vector's own cell
    whole = cell_lists(probes, 16)
    for group in range(3):
        part, held = group_lists(probes, 16, group, 3)
        for cell in range(16):
            mine = cell % 3 == group
            for ids, bounds, all_ids, all_bounds in (
                (part.members, part.member_bounds, whole.members, whole.member_bounds),
                (part.probers, part.prober_bounds, whole.probers, whole.prober_bounds),
            ):
                got = ids[bounds[cell] : bounds[cell + 1]]
                want = all_ids[all_bounds[cell] : all_bounds[cell + 1]] if mine else []
                np.testing.assert_array_equal(got, want)
        assert set(held) == set(part.probers) and list(held) == sorted(held)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--vectors-on-disk", "--knn-processes", "2", "--cluster"],
            "--knn-processes shares the search among local processes, --cluster among the cluster's workers: give one "
            "of them",
        ),
        (["--cluster-workers", "2"], "--cluster-workers sizes a local cluster: add --cluster (or drop it)"),
    ],
)
def test_cluster_options_that_do_not_go_together_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    code = main(["scifibench", "--pairs", "missing.parquet", "--out", str(tmp_path / "out"), *extra])
    assert code == 2
    assert capsys.readouterr().err == f"scifig curate scifibench: {message}\n"


def test_a_task_error_reaches_this_process_whole_and_a_worker_blind_to_the_cache_stops_in_one_line(
    tmp_path: Path,
) -> None:
    def bad_image() -> None:
        raise DataError("pairs.parquet", 7, "image", "image bytes are not a decodable image")

    with pytest.raises(ValueError) as raised:
        call_in_task(bad_image)
    crossed = pickle.loads(pickle.dumps(raised.value))  # Dask sends a task's error pickled
    assert str(crossed) == "pairs.parquet, row 7 (0-based), column 'image': image bytes are not a decodable image"

    class Client:  # two workers, one of which reads nothing at the command's path
        def run(self, function: Callable[..., Any], path: str) -> dict[str, Any]:
            return {"tcp://127.0.0.1:1": function(path), "tcp://127.0.0.1:2": None}

    with pytest.raises(ClusterError) as blind:
        check_shared(Client(), tmp_path / "cache", "the cache folder", "--cache-dir")
    assert str(blind.value) == (
        f"Dask worker tcp://127.0.0.1:2 does not see the cache folder {tmp_path / 'cache'}: give every worker the "
        "same --cache-dir on a shared file system"
    )
    assert [path.name for path in (tmp_path / "cache").iterdir()] == []  # the probe file is gone


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port on the loopback interface that nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setattr(cluster_module, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(ClusterError) as raised, Cluster(address) as cluster:
        cluster.client()
    assert str(raised.value).startswith(f"cannot reach the Dask scheduler at {address} (")
    assert str(raised.value).endswith(
        "start it (dask scheduler, then dask worker ADDRESS on each machine) or give another --cluster"
    )
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address)
    import dask

    dask.config.refresh()
    try:
        assert cluster_address(FROM_DASK_CONFIG) == address and cluster_address("local") == "local"
    finally:
        monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
        dask.config.refresh()
    assert cluster_address(FROM_DASK_CONFIG) == "local"
