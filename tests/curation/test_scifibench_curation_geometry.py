"""SciFIBench curation rules on synthetic vectors of known geometry (no CLIP): neighbours (exact and IVF), the
similarity filter and its threshold, difficulty ordering, question rendering and seeded shuffling, random negatives,
categories, category balance and the tiers. Expected values are computed here by brute force or by hand."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from curation.scifibench.categories import CROSS_LIST, categorise, top_categories
from curation.scifibench.embed import joint_vectors
from curation.scifibench.neighbours import default_nlist, nearest_neighbours, plan_index
from curation.scifibench.normalise import first_occurrences, normalise_caption
from curation.scifibench.questions import (
    C2F_QUESTION,
    F2C_QUESTION,
    Question,
    build_questions,
    random_variant,
    render,
)
from curation.scifibench.similarity import MAD_TO_SD, choose_threshold, kept_neighbours
from curation.scifibench.splits import fair_shares, hardest_balanced, split_tiers


def brute_force(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest other vectors (ties by index) and their distances, by plain numpy."""
    distances = np.sqrt(((vectors[:, None, :].astype(np.float64) - vectors[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(distances, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(len(vectors)), distances.shape), distances), axis=1)[:, :k]
    return order, np.take_along_axis(distances, order, axis=1)


def clusters(n_clusters: int, per: int, dim: int, spread: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, dim)) * 10
    return (np.repeat(centres, per, axis=0) + rng.normal(scale=spread, size=(n_clusters * per, dim))).astype(np.float32)


# --- step 1: captions and duplicates ---------------------------------------------------------------------------


def test_caption_normalisation_follows_scicap() -> None:
    # SciCap's own example: original caption -> its "1-lowercase-and-token-and-remove-figure-index" caption
    original = (
        "Figure 2: Impact of the replay attack, as a function of the spoofing attack duration. (a) Location offset or "
        "error: Distance between the attack-induced and the actual victim receiver position."
    )
    expected = (
        "impact of the replay attack , as a function of the spoofing attack duration . ( a ) location offset or "
        "error : distance between the attack-induced and the actual victim receiver position ."
    )
    assert normalise_caption(original) == expected
    assert normalise_caption(expected) == expected  # SciCap-normalised captions pass unchanged
    assert normalise_caption("Fig. 3a. BER vs SNR for FFT size=2048 using LS, LMMSE.") == (
        "ber vs snr for fft size=2048 using ls , lmmse ."
    )
    assert normalise_caption("FIG. 12(b) - Loss 0.5 after 1,000 steps; ratio 1:2") == (
        "loss 0.5 after 1,000 steps ; ratio 1:2"
    )
    assert normalise_caption("Figure illustrates the figure of merit.") == "figure illustrates the figure of merit ."
    assert normalise_caption("Figure 3.") == ""


def test_duplicates_keep_the_first_caption_and_the_first_image() -> None:
    captions = ["a .", "b .", "a .", "c .", "d ."]
    images = ["h1", "h2", "h3", "h2", "h4"]
    kept, dropped = first_occurrences(captions, images)
    assert kept == [0, 1, 4]
    assert dropped == {"duplicate_caption": 1, "duplicate_image": 1}


# --- step 2: joint vectors -------------------------------------------------------------------------------------


def test_joint_vector_is_two_unit_halves() -> None:
    image, text = np.array([[3.0, 4.0]]), np.array([[0.0, 2.0, 0.0]])
    joint = joint_vectors(image, text)
    assert joint.dtype == np.float32 and joint.shape == (1, 5)
    np.testing.assert_allclose(joint, [[0.6, 0.8, 0.0, 1.0, 0.0]], rtol=1e-6)
    with pytest.raises(ValueError, match="all-zero"):
        joint_vectors(np.zeros((1, 2)), text)


# --- steps 3-4: neighbours ---------------------------------------------------------------------------------------


def test_exact_neighbours_are_the_brute_force_neighbours() -> None:
    # points on a line at i**1.5: every distance is distinct, so the neighbour order is fully determined
    line = np.zeros((40, 8), dtype=np.float32)
    line[:, 0] = np.arange(40) ** 1.5
    found = nearest_neighbours(line, k=5, plan=plan_index(40))
    expected, distances = brute_force(line, 5)
    assert found.plan.kind == "flat"
    np.testing.assert_array_equal(found.indices, expected)
    np.testing.assert_allclose(found.distances, distances, rtol=1e-5)
    assert list(found.indices[0]) == [1, 2, 3, 4, 5] and list(found.indices[20]) == [19, 21, 18, 22, 17]


def test_the_pair_itself_is_never_its_own_neighbour_even_with_identical_vectors() -> None:
    vectors = np.array([[0, 0], [0, 0], [1, 0], [3, 0], [6, 0]], dtype=np.float32)
    found = nearest_neighbours(vectors, k=3)
    for query, row in enumerate(found.indices):
        assert query not in row
    assert list(found.indices[0]) == [1, 2, 3] and found.distances[0, 0] == 0.0
    assert list(found.indices[1]) == [0, 2, 3]


@pytest.mark.slow
def test_ivf_above_the_exact_threshold_finds_the_exact_neighbours_on_clustered_data() -> None:
    vectors = clusters(40, 50, 32, spread=1.0)
    plan = plan_index(len(vectors), exact_max=1000)
    # 1.6 sqrt(2000) = 71.6 -> 64 cells, halved to 32 so that each has 32 training vectors; 14 cells' worth probed
    assert plan.kind == "ivf" and plan.nlist == default_nlist(2000) == 32 and plan.nprobe == 32
    assert plan.max_codes == 14 * 63 and plan.train_size == 1024
    assert plan_index(2000, exact_max=2000).kind == "flat"
    approximate = nearest_neighbours(vectors, k=5, plan=plan, seed=0)
    exact, distances = brute_force(vectors, 5)
    np.testing.assert_array_equal(approximate.indices, exact)  # separated clusters: every neighbour is found
    np.testing.assert_allclose(approximate.distances, distances, rtol=1e-5)
    again = nearest_neighbours(vectors, k=5, plan=plan, seed=0)
    np.testing.assert_array_equal(again.indices, approximate.indices)  # seeded k-means: reruns agree
    with pytest.raises(ValueError, match="needs at least"):
        plan_index(100, exact_max=10, nlist=64)


# --- step 5: similarity filter -----------------------------------------------------------------------------------


def lattice_with_twins(seed: int = 0) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """A jittered 15 x 15 lattice (nearest neighbours ~1 apart) plus 6 planted near-duplicates 0.01 from a point."""
    rng = np.random.default_rng(seed)
    grid = np.array([(x, y) for x in range(15) for y in range(15)], dtype=np.float64)
    points = grid + rng.normal(scale=0.01, size=grid.shape)
    originals = [0, 37, 80, 112, 160, 224]
    twins = points[originals] + np.array([0.01, 0.0])
    vectors = np.vstack([points, twins]).astype(np.float32)
    return vectors, [(original, len(points) + i) for i, original in enumerate(originals)]


def test_auto_threshold_flags_planted_near_duplicates_and_keeps_ordinary_neighbours() -> None:
    vectors, twins = lattice_with_twins()
    found = nearest_neighbours(vectors, k=8)
    first = found.distances[:, 0]
    median = np.median(first)
    mad = np.median(np.abs(first - median))
    threshold = choose_threshold(found.distances)
    assert threshold.value == pytest.approx(median - 3 * MAD_TO_SD * mad, rel=1e-6)
    assert 0.02 < threshold.value < median  # between the twins (0.01) and the bulk of the lattice (~1)
    assert threshold.quantiles["q0"] == pytest.approx(float(first.min()))
    kept = kept_neighbours(found.indices, found.distances, threshold.value)
    for original, twin in twins:  # each twin is the other's nearest neighbour, and it is filtered out
        assert found.indices[original, 0] == twin and found.indices[twin, 0] == original
        assert not kept[original, 0] and not kept[twin, 0]
    ordinary = found.distances > 0.5
    assert kept[ordinary].mean() >= 0.99  # the tail of the bulk is barely touched
    questions, short = build_questions(found.indices, found.distances, threshold.value, ["c"] * len(vectors))
    assert short == 0
    partners = dict(twins) | {twin: original for original, twin in twins}
    for question in questions:
        assert partners.get(question.pair) not in question.negatives

    given = choose_threshold(found.distances, min_distance=0.0)
    assert given.value == 0.0 and given.rule.startswith("given")
    assert kept_neighbours(found.indices, found.distances, 0.0).all()


def test_auto_threshold_is_never_negative() -> None:
    spread = np.array([[0.1], [0.2], [5.0], [9.0]], dtype=np.float32)
    assert choose_threshold(spread).value == 0.0


# --- steps 6 and 8: questions and difficulty ------------------------------------------------------------------------


def test_difficulty_is_the_mean_negative_distance_and_questions_are_hardest_first() -> None:
    # 4 clusters of 6 points on a line, spacing 1, 2, 3, 4: each point's 4 negatives come from its own cluster
    blocks = [np.arange(6) * spacing + 1000.0 * index for index, spacing in enumerate((3.0, 1.0, 4.0, 2.0))]
    vectors = np.zeros((24, 4), dtype=np.float32)
    vectors[:, 0] = np.concatenate(blocks)
    found = nearest_neighbours(vectors, k=6)
    questions, short = build_questions(found.indices, found.distances, 0.0, [str(i // 6) for i in range(24)])
    assert short == 0 and len(questions) == 24
    expected, expected_distances = brute_force(vectors, 4)
    by_pair = {question.pair: question for question in questions}
    for pair in range(24):
        assert by_pair[pair].negatives == tuple(expected[pair])
        assert by_pair[pair].difficulty == pytest.approx(expected_distances[pair].mean())
    # the end point of a cluster with spacing s has negatives at s, 2s, 3s, 4s: difficulty 2.5 s
    assert by_pair[6].difficulty == pytest.approx(2.5)
    difficulties = [question.difficulty for question in questions]
    assert difficulties == sorted(difficulties)
    assert {question.category for question in questions[:6]} == {"1"}  # the tightest cluster is the hardest
    assert {question.category for question in questions[-2:]} == {"2"}  # both ends of the widest cluster: 2.5 x 4


def test_pairs_without_four_filtered_negatives_are_left_out() -> None:
    indices = np.array([[1, 2, 3, 4, 5], [0, 2, 3, 4, -1]])
    distances = np.array([[0.01, 1, 1, 1, 1], [0.01, 1, 1, 1, np.inf]], dtype=np.float32)
    questions, short = build_questions(indices, distances, 0.5, ["a", "b"])
    assert short == 1 and [question.pair for question in questions] == [0]
    assert questions[0].negatives == (2, 3, 4, 5)


CAPTIONS = [f"caption number {i} ." for i in range(600)]
FIGURES = [f"paper{i}-Figure1-1.png" for i in range(600)]


def test_rendered_questions_have_the_published_formats() -> None:
    question = Question(pair=7, negatives=(3, 9, 1, 4), difficulty=0.5, category="cs.CV")
    f2c = render(question, "Figure2Caption", CAPTIONS, FIGURES, seed=0)
    assert f2c.Question == F2C_QUESTION == "Which caption best matches the image?"
    assert [option[:3] for option in f2c.Options] == ["A) ", "B) ", "C) ", "D) ", "E) "]
    assert f2c.Options["ABCDE".index(f2c.Answer)] == f"{f2c.Answer}) caption number 7 ."
    assert sorted(f2c.option_pairs) == [1, 3, 4, 7, 9] and f2c.images == [7]
    assert [option[3:] for option in f2c.Options] == [CAPTIONS[pair] for pair in f2c.option_pairs]

    c2f = render(question, "Caption2Figure", CAPTIONS, FIGURES, seed=0)
    assert c2f.Question == C2F_QUESTION.format(caption="caption number 7 .")
    assert c2f.Question == "Caption: caption number 7 . Which image best matches the caption?"
    assert c2f.Options == ["A) image0", "B) image1", "C) image2", "D) image3", "E) image4"]
    assert c2f.images == c2f.option_pairs and c2f.images["ABCDE".index(c2f.Answer)] == 7


def test_option_order_is_seeded_per_question_and_answers_are_uniform() -> None:
    questions = [Question(p, tuple((p + d) % 600 for d in range(1, 5)), 0.0, "c") for p in range(600)]
    first = [render(q, "Figure2Caption", CAPTIONS, FIGURES, seed=0) for q in questions]
    again = [render(q, "Figure2Caption", CAPTIONS, FIGURES, seed=0) for q in reversed(questions)][::-1]
    assert [r.Options for r in first] == [r.Options for r in again]  # independent of the order questions are made
    other_seed = [render(q, "Figure2Caption", CAPTIONS, FIGURES, seed=1) for q in questions]
    assert sum(a.Answer != b.Answer for a, b in zip(first, other_seed, strict=True)) > 400
    counts = Counter(r.Answer for r in first)
    assert set(counts) == set("ABCDE") and all(80 <= count <= 160 for count in counts.values()), counts
    c2f = [render(q, "Caption2Figure", CAPTIONS, FIGURES, seed=0) for q in questions]
    assert sum(a.Answer != b.Answer for a, b in zip(first, c2f, strict=True)) > 400  # tasks shuffle independently


def test_random_negatives_are_seeded_distinct_and_skip_near_duplicates() -> None:
    vectors, twins = lattice_with_twins()
    threshold = 0.5
    figures = [f"f{i}" for i in range(len(vectors))]
    original, twin = twins[0]
    question = Question(original, (1, 2, 3, 4), 1.0, "c")
    draws = [random_variant(question, vectors, threshold, figures[original], seed=0) for _ in range(2)]
    assert draws[0] == draws[1] and draws[0].variant == "random"
    seen = set()
    for seed in range(60):
        variant = random_variant(question, vectors, threshold, figures[original], seed=seed)
        assert len(set(variant.negatives)) == 4 and original not in variant.negatives and twin not in variant.negatives
        distances = np.linalg.norm(vectors[list(variant.negatives)] - vectors[original], axis=1)
        assert variant.difficulty == pytest.approx(distances.mean(), rel=1e-5)
        seen.update(variant.negatives)
    assert len(seen) > 100  # spread over the corpus, not the same few


# --- step 7: categories ---------------------------------------------------------------------------------------------


def test_categories_top_ten_other_cs_and_cross_list() -> None:
    primaries = (
        ["cs.CV"] * 9 + ["cs.LG"] * 8 + ["cs.CL"] * 7 + ["cs.AI"] * 6 + ["cs.RO"] * 5 + ["cs.NI"] * 5 + ["cs.CR"] * 4
        + ["cs.DC"] * 4 + ["cs.SE"] * 3 + ["cs.SY"] * 2 + ["cs.DB"] * 2 + ["cs.HC"] + ["stat.ML"] * 20 + ["eess.IV"]
    )  # fmt: skip
    top = top_categories(primaries, "cs")
    assert top == ["cs.CV", "cs.LG", "cs.CL", "cs.AI", "cs.NI", "cs.RO", "cs.CR", "cs.DC", "cs.SE", "cs.DB"]
    labels = categorise(primaries, "cs")
    counts = Counter(labels)
    assert counts[CROSS_LIST] == 21 and counts["other cs"] == 3  # cs.SY (2, loses the tie to cs.DB) + cs.HC
    assert "stat.ML" not in counts and len(counts) == 12
    general = categorise(["hep-th"] * 3 + ["math.AP"] * 2 + ["q-bio.NC"], None, top_n=2)
    assert general == ["hep-th"] * 3 + ["math.AP"] * 2 + ["other"]


# --- step 9: tiers --------------------------------------------------------------------------------------------------


def test_fair_shares_are_max_min_fair() -> None:
    assert fair_shares({"a": 100, "b": 100, "c": 3}, 50) == ({"a": 23, "b": 23, "c": 3}, 1, ["a", "b"])
    assert fair_shares({"a": 2, "b": 1}, 10) == ({"a": 2, "b": 1}, 0, [])
    published_like = {f"cs.{i}": 1000 for i in range(9)} | {"cs.AI": 10, "other cs": 5000, "cross-list": 5000}
    quota, remaining, _ = fair_shares(published_like, 500)
    assert sum(quota.values()) + remaining == 500 and quota["cs.AI"] == 10
    assert {quota[name] for name in published_like if name != "cs.AI"} == {44} and remaining == 6


def test_places_that_cannot_be_shared_go_to_the_hardest_next_questions() -> None:
    # difficulty order: a1 b1 c1 b2 a2 c2 ... : 4 places among 3 categories -> one each, the 4th to b (b2 is next)
    ordered = [("a", 1), ("b", 1), ("c", 1), ("b", 2), ("a", 2), ("c", 2), ("a", 3)]
    assert hardest_balanced(ordered, 4, lambda item: item[0]) == [("a", 1), ("b", 1), ("c", 1), ("b", 2)]
    assert hardest_balanced(ordered, 2, lambda item: item[0]) == [("a", 1), ("b", 1)]
    assert hardest_balanced(ordered, 99, lambda item: item[0]) == ordered


def test_tiers_pool_is_hardest_per_category_then_silver_then_bronze() -> None:
    rng = np.random.default_rng(3)
    categories = ["a"] * 50 + ["b"] * 30 + ["c"] * 4
    questions = sorted(
        (Question(i, (), float(rng.random()), categories[i]) for i in range(len(categories))),
        key=lambda q: (q.difficulty, q.pair),
    )
    tiers = split_tiers(questions, pool_size=24, silver_size=20)
    pool_counts = Counter(q.category for q in tiers.gold_candidates)
    assert pool_counts == {"a": 10, "b": 10, "c": 4}
    for name in "abc":  # within a category the pool holds its hardest questions
        ordered = [q.pair for q in questions if q.category == name]
        assert [q.pair for q in tiers.gold_candidates if q.category == name] == ordered[: pool_counts[name]]
    rest = [q for q in questions if q not in tiers.gold_candidates]
    assert tiers.silver == rest[:20] and tiers.bronze == rest[20:]
    everything = [q.pair for _, items in tiers.items() for q in items]
    assert sorted(everything) == list(range(len(categories)))
    assert [q.difficulty for q in tiers.gold_candidates] == sorted(q.difficulty for q in tiers.gold_candidates)
    hardest_each = [next(q for q in questions if q.category == name) for name in "abc"]
    assert hardest_balanced(questions, 3, lambda q: q.category) == sorted(hardest_each, key=questions.index)
