"""SciFIBench neighbours with the joint vectors on disk (paper §3.3, steps 3-4; ``curation/scifibench/ondisk.py``):
the same neighbours as the in-memory search, the cells shared among processes merge to the one-process result, the
pipeline's cache keeps the on-disk plan, and missing disk or a misplaced option stop with one line."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

import faiss  # noqa: E402

from curation.scifibench import ondisk  # noqa: E402
from curation.scifibench.cli import main  # noqa: E402
from curation.scifibench.neighbours import nearest_neighbours, plan_index  # noqa: E402
from curation.scifibench.ondisk import DiskPlan, DiskSpaceError, disk_neighbours  # noqa: E402
from curation.scifibench.pipeline import Settings, cached_neighbours  # noqa: E402


def saved(tmp_path: Path, vectors: np.ndarray) -> Path:
    path = tmp_path / "joint.npy"
    np.save(path, vectors)
    return path


def random_vectors(n: int = 1500, dim: int = 12) -> np.ndarray:
    return np.random.default_rng(3).normal(size=(n, dim)).astype(np.float32)  # no clusters: cells cut through


def test_an_exact_plan_on_disk_gives_the_in_memory_neighbours(tmp_path: Path) -> None:
    vectors = random_vectors(400)
    plan = plan_index(len(vectors))
    found = disk_neighbours(saved(tmp_path, vectors), 6, plan)
    expected = nearest_neighbours(vectors, 6, plan)
    np.testing.assert_array_equal(found.indices, expected.indices)
    np.testing.assert_array_equal(found.distances, expected.distances)
    assert found.plan.describe() == "exact IndexFlatL2, vectors on disk"


def test_ivf_on_disk_compares_codes_and_reranks_to_the_in_memory_neighbours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ondisk, "MERGE_BLOCK", 300)  # merged and re-ranked in 3 blocks
    vectors = random_vectors(800)
    plan = plan_index(len(vectors), exact_max=100, nlist=16, nprobe=2)
    found = disk_neighbours(saved(tmp_path, vectors), 5, plan, recall_sample=200)
    expected = nearest_neighbours(vectors, 5, plan)  # the same cells and probes, full-precision candidates
    np.testing.assert_array_equal(found.indices, expected.indices)
    np.testing.assert_array_equal(found.distances, expected.distances)
    exact = np.argsort(((vectors[:, None] - vectors[None]) ** 2).sum(-1), axis=1)[:, 1:6]
    queries = np.sort(np.random.default_rng(1).choice(len(vectors), 200, replace=False))  # the recall check's sample
    hits = sum(len(set(exact[q]) & set(found.indices[q])) for q in queries)
    assert isinstance(found.plan, DiskPlan) and found.plan.recall_at_5 == pytest.approx(hits / 1000)
    assert 0.5 < found.plan.recall_at_5 < 1  # approximate on data without clusters
    assert "8-bit codes in memory" in found.plan.describe()


def test_cells_shared_among_two_processes_merge_to_the_one_process_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ondisk, "MERGE_BLOCK", 300)
    vectors = random_vectors(800, 8)
    path = saved(tmp_path, vectors)
    plan = plan_index(len(vectors), exact_max=100, nlist=16, nprobe=2)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(2)  # one process, two threads: the same split of the cells as two processes
    try:
        single = disk_neighbours(path, 4, plan, recall_sample=0)
        with ThreadPoolExecutor(2) as pool:  # each share as a spawned process runs it (the bench runs processes)
            shared = disk_neighbours(path, 4, plan, processes=2, scratch=tmp_path, recall_sample=0, executor=pool)
    finally:
        faiss.omp_set_num_threads(threads)
    np.testing.assert_array_equal(shared.indices, single.indices)
    np.testing.assert_array_equal(shared.distances, single.distances)
    assert [p.name for p in tmp_path.iterdir()] == ["joint.npy"]  # the scan's scratch files are gone


def test_too_little_disk_stops_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ondisk.shutil, "disk_usage", lambda _: type("Usage", (), {"free": 10 * 1024**2})())
    with pytest.raises(DiskSpaceError) as raised:
        ondisk.check_disk(tmp_path / "cache" / "new", 3 * 1024**3, "the joint vectors (1,000,000 x 768 float32)")
    assert str(raised.value) == (
        f"not enough free disk for the joint vectors (1,000,000 x 768 float32) in {tmp_path / 'cache' / 'new'}: "
        "3.00 GB needed, 0.01 GB free; free space there or set --cache-dir to a larger disk"
    )


def test_the_pipeline_caches_on_disk_neighbours_with_their_plan(tmp_path: Path) -> None:
    vectors = random_vectors(600)
    path = saved(tmp_path, vectors)
    settings = Settings(pairs="pairs", out=tmp_path / "out", k=5, exact_max=100, nlist=16, vectors_on_disk=True)
    first = cached_neighbours(np.load(path, mmap_mode="r"), settings, "key")
    again = cached_neighbours(np.load(path, mmap_mode="r"), settings, "key")
    np.testing.assert_array_equal(again.indices, first.indices)
    assert again.plan == first.plan and isinstance(again.plan, DiskPlan) and again.plan.recall_sample == 600
    in_memory = cached_neighbours(
        vectors, Settings(pairs="pairs", out=tmp_path / "out", k=5, exact_max=100, nlist=16), "key"
    )
    assert type(in_memory.plan) is not DiskPlan  # another cache entry
    assert len(list((tmp_path / "out" / "cache" / "neighbours").glob("*.npz"))) == 2
    assert "--vectors-on-disk" in settings.command() and settings.to_dict()["vectors_on_disk"] is True
    assert "vectors_on_disk" not in Settings(pairs="pairs", out=tmp_path).to_dict()  # default output unchanged


def test_knn_processes_without_vectors_on_disk_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["scifibench", "--pairs", "missing.parquet", "--out", str(tmp_path / "out"), "--knn-processes", "2"])
    assert code == 2
    assert capsys.readouterr().err == (
        "scifig curate scifibench: --knn-processes shares the on-disk search: add --vectors-on-disk (or drop it)\n"
    )
