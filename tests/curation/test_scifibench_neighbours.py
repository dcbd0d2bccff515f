"""SciFIBench neighbour search above the exact threshold (paper §3.3, steps 3-4): the IVF plan, the probe budget,
which pairs are compared, the exact re-ranking and reproducibility, on small data with expectations worked out by
hand or by brute force over the compared pairs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

import faiss  # noqa: E402

from curation.scifibench import neighbours  # noqa: E402
from curation.scifibench.neighbours import (  # noqa: E402
    CellIndex,
    IndexPlan,
    build_index,
    limit_probes,
    nearest_neighbours,
    plan_index,
    search_index,
)


def test_default_plan_for_100000_vectors() -> None:
    # 1.6 sqrt(100,000) = 506 -> 512 cells; 32 training vectors each; 14 x ceil(100,000 / 512) = 14 x 196 vectors
    plan = plan_index(100_000)
    assert plan == IndexPlan("ivf", nlist=512, nprobe=32, max_codes=2744, train_size=16_384, kmeans_iterations=4)
    assert plan.describe() == (
        "IVF, 512 cells (Faiss k-means on 16,384 vectors, 4 iterations), up to 32 cells / 2,744 vectors probed per pair"
    )
    explicit = plan_index(100_000, nprobe=8)
    assert (explicit.nprobe, explicit.max_codes) == (8, 0)
    assert explicit.describe().endswith(", 8 cells probed per pair")
    assert plan_index(50_000).describe() == "exact IndexFlatL2"


def test_probe_budget_stops_where_faiss_max_codes_stops() -> None:
    probes = np.array([[0, 1, 2, 3], [2, 0, 1, 3], [3, 1, 0, 2]])
    sizes = np.array([5, 3, 10, 1])
    # row 0: 5 held < 8, so cell 1 too (8 held): stop; row 1: cell 2 alone holds 10; row 2: 1, then 4, then 9 held
    assert limit_probes(probes.copy(), sizes, 8).tolist() == [[0, 1, -1, -1], [2, -1, -1, -1], [3, 1, 0, -1]]
    assert limit_probes(probes.copy(), sizes, 0).tolist() == probes.tolist()


def test_a_compared_pair_serves_both_vectors_and_an_unfilled_neighbour_is_minus_one() -> None:
    line = np.array([[0.0], [1.0], [10.0], [11.5]], dtype=np.float32)
    quantizer = faiss.IndexFlatL2(1)
    quantizer.add(np.array([[0.5], [10.75]], dtype=np.float32))
    # vectors 0 and 1 lie in cell 0, 2 and 3 in cell 1; only vector 1 probes the other cell
    index = CellIndex(quantizer, np.array([[0, -1], [0, 1], [1, -1], [1, -1]]))
    found = search_index(index, line, 2, IndexPlan("ivf", nlist=2, nprobe=2))
    # 2 and 3 reach 1 only because 1 probes their cell; 0 is compared with 1 alone
    assert found.indices.tolist() == [[1, -1], [0, 2], [3, 1], [2, 1]]
    np.testing.assert_array_equal(found.distances, np.array([[1, np.inf], [1, 9], [1.5, 9], [1.5, 10.5]], np.float32))


def compared_brute_force(vectors: np.ndarray, probes: np.ndarray, k: int) -> np.ndarray:
    """By plain numpy: each vector's ``k`` nearest among the vectors it is compared with (j in a cell i probes, or i
    in a cell j probes), ties by index, ``-1`` when fewer."""
    n = len(vectors)
    own = probes[:, 0]
    reaches = np.zeros((n, probes.shape[1] and own.max() + 1), dtype=bool)
    rows, slots = np.nonzero(probes >= 0)
    reaches[rows, probes[rows, slots]] = True  # reaches[i, c]: i probes cell c
    compared = reaches[:, own] | reaches[:, own].T
    np.fill_diagonal(compared, False)
    distances = np.sqrt(((vectors[:, None, :].astype(np.float64) - vectors[None, :, :]) ** 2).sum(-1))
    distances[~compared] = np.inf
    order = np.lexsort((np.broadcast_to(np.arange(n), distances.shape), distances), axis=1)[:, :k]
    return np.where(np.take_along_axis(compared, order, axis=1), order, -1)


# the default probe budget; each vector's own cell only; and a cell's probers compared 7 at a time
@pytest.mark.parametrize(("nprobe", "prober_batch"), [(None, 4096), (1, 4096), (None, 7)])
def test_ivf_neighbours_are_the_nearest_of_the_compared_pairs_and_reruns_agree(
    nprobe: int | None, prober_batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(neighbours, "PROBER_BATCH", prober_batch)
    vectors = np.random.default_rng(3).normal(size=(1500, 12)).astype(np.float32)  # no clusters: cells cut through
    plan = plan_index(len(vectors), exact_max=100, nlist=32, nprobe=nprobe)
    index = build_index(vectors, plan, seed=0, use_gpu=False)
    assert isinstance(index, CellIndex) and index.probes.shape == (1500, 32 if nprobe is None else 1)
    found = search_index(index, vectors, 5, plan)
    np.testing.assert_array_equal(found.indices, compared_brute_force(vectors, index.probes, 5))
    exact = np.sort(np.sqrt(((vectors[:, None] - vectors[None]) ** 2).sum(-1)), axis=1)[:, 1:6]
    assert (found.distances >= exact - 1e-5).all()  # never nearer than the exact neighbours
    missed = (found.distances > exact + 1e-5).any(axis=1).mean()
    assert 0 < missed < (1 if nprobe else 0.1)  # approximate here; with the default budget, mostly right
    again = search_index(build_index(vectors, plan, seed=0, use_gpu=False), vectors, 5, plan)
    np.testing.assert_array_equal(again.indices, found.indices)
    np.testing.assert_array_equal(again.distances, found.distances)


def test_reruns_with_a_seed_give_the_same_neighbours_and_other_seeds_still_find_them_on_easy_data() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(30, 24)) * 10
    vectors = (np.repeat(centres, 60, axis=0) + rng.normal(size=(1800, 24))).astype(np.float32)
    plan = plan_index(len(vectors), exact_max=1000)
    runs = [nearest_neighbours(vectors, k=4, plan=plan, seed=seed) for seed in (7, 7, 8)]
    exact = nearest_neighbours(vectors, k=4, plan=plan_index(len(vectors)))
    assert exact.plan.kind == "flat"
    for run in runs:
        np.testing.assert_array_equal(run.indices, exact.indices)
        np.testing.assert_array_equal(run.distances, exact.distances)


def test_k_must_leave_a_neighbour_to_find() -> None:
    vectors = np.zeros((3, 2), dtype=np.float32)
    plan = plan_index(3)
    with pytest.raises(ValueError, match="k must be between 1 and 2"):
        search_index(build_index(vectors, plan, use_gpu=False), vectors, 3, plan)
