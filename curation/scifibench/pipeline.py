"""``scifig curate scifibench``: the SciFIBench curation steps in the paper's order (§3.3), from figure–caption pairs
to a directory usable as ``SCIFIG_SCIFIBENCH_DATA``; deterministic for the same inputs, settings and seed.
Manual: curation/scifibench/README.md, "Steps (paper §3.3, in order) and defaults" and "Output (``--out DIR``)".
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import shlex
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from curation.cluster import Cluster
from curation.scifibench.card import write_card
from curation.scifibench.categories import categorise, describe_rule, other_label, top_categories
from curation.scifibench.distributed import embed_on_cluster, memory_neighbours_on_cluster, search_on_cluster
from curation.scifibench.embed import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_SHARD_SIZE,
    PRETRAINED,
    ClipSpec,
    ProcessLayout,
    cache_dir_for,
    detect_layout,
    embed_pairs,
)
from curation.scifibench.gold import SUMMARY
from curation.scifibench.neighbours import DEFAULT_EXACT_MAX, DEFAULT_K, Neighbours, nearest_neighbours, plan_index
from curation.scifibench.ondisk import CODES, DiskPlan, disk_neighbours
from curation.scifibench.pairs import Pairs, read_pairs
from curation.scifibench.questions import TASKS, Question, build_questions, random_variant
from curation.scifibench.sheet import write_sheet
from curation.scifibench.similarity import Threshold, choose_threshold, kept_neighbours
from curation.scifibench.splits import GOLD_SIZE, POOL_FACTOR, SILVER_SIZE, Tiers, pool_size_for, split_tiers
from curation.scifibench.writer import split_name, write_questions
from scifig_tasks.core.clip_baseline import TINY, ClipModel, WeightsUnavailable, check_weights, tiny_config

HOME_ARCHIVE = {"CS": "cs", "General": None}
OUTPUT_TIERS = ("gold_candidates", "silver", "bronze", "random_negatives", "gold", "gold_random_negatives")
DEFAULT_HOME = "default"


@dataclass(frozen=True)
class Settings:
    """Everything ``scifig curate scifibench`` can set (defaults: the paper's choices, see the README)."""

    pairs: str
    out: Path
    split: str | None = None
    domain: str = "CS"
    home_archive: str | None = DEFAULT_HOME
    keep_subfigures: bool = False
    top_categories: int = 10
    clip: ClipSpec = field(default_factory=ClipSpec)
    batch_size: int = DEFAULT_BATCH_SIZE
    shard_size: int = DEFAULT_SHARD_SIZE
    num_workers: int = 0
    device: str | None = None
    cache_dir: Path | None = None
    k: int = DEFAULT_K
    exact_max: int = DEFAULT_EXACT_MAX
    nlist: int | None = None
    nprobe: int | None = None
    use_gpu: bool | None = None
    vectors_on_disk: bool = False
    knn_processes: int = 1
    cluster: str | None = None
    """``--cluster``: a Dask cluster (``local``, a scheduler address, ``""`` for Dask's own setting) embeds and
    scans; ``None``: this process does. Where the work runs, not what it computes: not in :meth:`command` or
    :meth:`to_dict`, so ``curation.json`` and the card are the one-process ones (docs/scale-out.md)."""
    cluster_workers: int | None = None
    min_distance: float | None = None
    seed: int = 0
    gold_size: int = GOLD_SIZE
    pool_factor: float = POOL_FACTOR
    silver_size: int = SILVER_SIZE

    @property
    def home(self) -> str | None:
        return HOME_ARCHIVE[self.domain] if self.home_archive == DEFAULT_HOME else self.home_archive

    @property
    def cache(self) -> Path:
        return self.cache_dir or self.out / "cache"

    def command(self) -> str:
        """The command line that reproduces this curation."""
        parts = ["scifig", "curate", "scifibench", "--pairs", self.pairs, "--out", str(self.out)]
        if self.split:
            parts += ["--split", self.split]
        if self.clip.model_config is not None and self.clip.model_config == tiny_config():
            parts += ["--domain", self.domain, "--pretrained", TINY]  # the shipped tiny model: wherever installed
        else:
            parts += ["--domain", self.domain, "--model", self.clip.model]
            parts += ["--pretrained", self.clip.pretrained or "none"]
            if self.clip.model_config:
                parts += ["--model-config", str(self.clip.model_config)]
        if self.clip.pretrained is None:
            parts += ["--init-seed", str(self.clip.init_seed)]
        if self.home_archive != DEFAULT_HOME:
            parts += ["--home-archive", str(self.home_archive or "none")]
        if self.keep_subfigures:
            parts.append("--keep-subfigures")
        parts += ["--k", str(self.k), "--exact-max", str(self.exact_max), "--seed", str(self.seed)]
        for flag, value in (("--nlist", self.nlist), ("--nprobe", self.nprobe), ("--min-distance", self.min_distance)):
            if value is not None:
                parts += [flag, str(value)]
        if self.vectors_on_disk:
            parts.append("--vectors-on-disk")
        if self.knn_processes != 1:
            parts += ["--knn-processes", str(self.knn_processes)]
        parts += ["--gold-size", str(self.gold_size), "--pool-factor", f"{self.pool_factor:g}"]
        parts += ["--silver-size", str(self.silver_size), "--top-categories", str(self.top_categories)]
        return shlex.join(parts)

    def to_dict(self) -> dict[str, Any]:
        on_disk = {"vectors_on_disk": True, "knn_processes": self.knn_processes} if self.vectors_on_disk else {}
        return {
            "model": self.clip.model,
            "pretrained": self.clip.pretrained,
            "model_config": str(self.clip.model_config) if self.clip.model_config else None,
            "domain": self.domain,
            "home_archive": self.home,
            "keep_subfigures": self.keep_subfigures,
            "top_categories": self.top_categories,
            "k": self.k,
            "exact_max": self.exact_max,
            "nlist": self.nlist,
            "nprobe": self.nprobe,
            "min_distance": self.min_distance,
            "seed": self.seed,
            "gold_size": self.gold_size,
            "pool_factor": self.pool_factor,
            "silver_size": self.silver_size,
            **on_disk,
        }


def log(message: str) -> None:
    print(f"scifibench: {message}", file=sys.stderr, flush=True)


def cached_neighbours(
    vectors: np.ndarray, settings: Settings, embeddings_key: str, cluster: Cluster | None = None
) -> Neighbours:
    """:func:`nearest_neighbours` of the joint vectors, stored under the cache and reused by a rerun; with
    ``vectors_on_disk``, :func:`.ondisk.disk_neighbours` of the mapped ``joint.npy`` (``vectors`` is its memmap);
    ``cluster``: the cell scan on a Dask cluster, the same neighbours (one cache entry for both)."""
    plan = plan_index(len(vectors), settings.exact_max, settings.nlist, settings.nprobe)
    key: dict[str, Any] = {"embeddings": embeddings_key, "k": settings.k, "plan": plan.to_dict(), "seed": settings.seed}
    if settings.vectors_on_disk:
        key["on_disk"] = CODES  # candidates from codes: another cache entry
    material = json.dumps(key, sort_keys=True)
    path = settings.cache / "neighbours" / f"{hashlib.sha256(material.encode()).hexdigest()[:20]}.npz"
    if path.exists():
        stored = np.load(path)
        if "plan" in stored:
            plan = DiskPlan(**json.loads(str(stored["plan"])))
        return Neighbours(stored["indices"], stored["distances"], plan)
    if settings.vectors_on_disk:
        found = disk_neighbours(
            Path(vectors.filename),  # type: ignore[attr-defined]
            settings.k,
            plan,
            settings.seed,
            settings.use_gpu,
            settings.knn_processes,
            scratch=settings.cache,
            cluster_search=None if cluster is None else functools.partial(search_on_cluster, cluster),
        )
        if isinstance(found.plan, DiskPlan) and found.plan.recall_at_5 is not None:
            recall, sample = found.plan.recall_at_5, found.plan.recall_sample
            log(f"recall@5 against exact search on {sample:,} sampled pairs: {recall:.4f}")
    elif cluster is not None:
        joint = settings.cache / "embeddings" / embeddings_key / "joint.npy"  # what embed_pairs saved
        found = memory_neighbours_on_cluster(
            vectors, joint, settings.k, plan, settings.seed, settings.use_gpu, cluster, settings.cache
        )
    else:
        found = nearest_neighbours(vectors, settings.k, plan, settings.seed, settings.use_gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npz")
    extra = {"plan": json.dumps(found.plan.to_dict())} if settings.vectors_on_disk else {}
    np.savez(partial, indices=found.indices, distances=found.distances, **extra)
    partial.replace(path)
    return found


def _clear_outputs(out: Path, split_names: dict[str, str]) -> None:
    """Remove what an earlier run for this domain wrote (the cache stays)."""
    for tier in OUTPUT_TIERS:
        for split in split_names.values():
            (out / tier / f"{split}.parquet").unlink(missing_ok=True)
    if (out / "verification" / "index.html").exists():
        shutil.rmtree(out / "verification")


def _tier_entry(questions: list[Question], split_names: dict[str, str], tier: str) -> dict[str, Any]:
    counts = dict(sorted(Counter(question.category for question in questions).items()))
    return {
        "questions": dict.fromkeys(TASKS, len(questions)),
        "categories": dict.fromkeys(TASKS, counts),
        "files": {split_names[task]: f"{tier}/{split_names[task]}.parquet" for task in TASKS} if questions else {},
    }


def write_outputs(
    out: Path, tiers: Tiers, pairs: Pairs, vectors: np.ndarray, threshold: float, domain: str, seed: int
) -> dict[str, Any]:
    """The tier files, the random-negatives variants and the verification sheet; returns the tiers' summary."""
    split_names = {task: split_name(domain, task) for task in TASKS}
    summary: dict[str, Any] = {}
    for tier, questions in tiers.items():
        for task in TASKS:
            if questions:
                write_questions(out / tier / f"{split_names[task]}.parquet", [(tier, questions)], task, pairs, seed)
        summary[tier] = _tier_entry(questions, split_names, tier)
    groups = [
        (
            tier,
            [
                random_variant(question, vectors, threshold, pairs.figure_ids[question.pair], seed)
                for question in tqdm(questions, desc=f"scifibench: random negatives ({tier})", unit="q")
            ],
        )
        for tier, questions in tiers.items()
    ]
    for task in TASKS:
        write_questions(out / "random_negatives" / f"{split_names[task]}.parquet", groups, task, pairs, seed)
    everything = [question for _, questions in groups for question in questions]
    summary["random_negatives"] = _tier_entry(everything, split_names, "random_negatives")
    write_sheet(out / "verification", tiers.gold_candidates, pairs, seed, split_names)
    return summary


@contextlib.contextmanager
def optional_cluster(settings: Settings) -> Iterator[Cluster | None]:
    """The Dask cluster ``--cluster`` names, started on first use and closed however the curation ends; ``None``
    without ``--cluster``: nothing of Dask is imported."""
    if settings.cluster is None:
        yield None
        return
    with Cluster(settings.cluster, settings.cluster_workers) as cluster:
        yield cluster


def weights_first(settings: Settings) -> None:
    """Refuse before any work (reading a large corpus takes minutes) when the CLIP weights cannot be had now
    (:func:`scifig_tasks.core.clip_baseline.check_weights`: not cached and offline, or the Hub unreachable), unless
    the cache holds finished embeddings made with this model: those need no weights."""
    try:
        check_weights(ClipModel(settings.clip.model, settings.clip.pretrained, settings.clip.model_config), PRETRAINED)
    except WeightsUnavailable:
        identity = settings.clip.identity()
        for meta in settings.cache.glob("embeddings/*/meta.json"):
            if json.loads(meta.read_text(encoding="utf-8")).get("clip") == identity:
                return
        raise


def curate(settings: Settings, layout: ProcessLayout | None = None) -> dict[str, Any] | None:
    """Run every step; returns the curation summary (``None`` on the non-main processes of a multi-GPU run)."""
    if settings.domain not in HOME_ARCHIVE:
        raise ValueError(f"unknown domain {settings.domain!r} (expected one of {', '.join(HOME_ARCHIVE)})")
    pool_size = pool_size_for(settings.gold_size, settings.pool_factor)
    weights_first(settings)
    layout = layout or detect_layout(settings.device)
    if settings.cluster is not None and layout.world > 1:
        raise ValueError(
            "--cluster embeds on the cluster's workers: run the command once, without accelerate launch or torchrun"
        )
    with optional_cluster(settings) as cluster:
        return _curate(settings, layout, pool_size, cluster)


def _curate(
    settings: Settings, layout: ProcessLayout, pool_size: int, cluster: Cluster | None
) -> dict[str, Any] | None:
    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    split_names = {task: split_name(settings.domain, task) for task in TASKS}

    log(f"[1/8] reading, normalising and de-duplicating pairs from {settings.pairs}")
    pairs = read_pairs(settings.pairs, settings.split, settings.keep_subfigures)
    if len(pairs) < 5:
        raise ValueError(f"{pairs.origin}: only {len(pairs)} usable pairs after de-duplication; need at least 5")
    log(f"{len(pairs)} pairs kept of {len(pairs.dataset)} rows (dropped: {pairs.dropped})")

    log("[2/8] categories from the corpus")
    home = settings.home
    categories = categorise(pairs.primaries, home, settings.top_categories)
    top = top_categories(pairs.primaries, home, settings.top_categories)

    log(f"[3/8] CLIP joint embeddings ({settings.clip.model} / {settings.clip.pretrained})")
    vectors = embed_pairs(
        pairs,
        settings.clip,
        settings.cache,
        batch_size=settings.batch_size,
        shard_size=settings.shard_size,
        num_workers=settings.num_workers,
        layout=layout,
        on_disk=settings.vectors_on_disk,
        remote=None
        if cluster is None
        else functools.partial(
            embed_on_cluster, cluster, pairs, settings.clip, settings.device, batch_size=settings.batch_size
        ),
    )
    if vectors is None:
        return None
    embeddings_key = cache_dir_for(pairs, settings.clip, settings.cache, settings.shard_size).name

    log(f"[4/8] Faiss nearest neighbours{' (vectors on disk)' if settings.vectors_on_disk else ''}")
    neighbours = cached_neighbours(vectors, settings, embeddings_key, cluster)
    if cluster is not None:
        cluster.close()  # the rest runs here

    log("[5/8] similarity filter")
    threshold: Threshold = choose_threshold(neighbours.distances, settings.min_distance)
    filtered = int((~kept_neighbours(neighbours.indices, neighbours.distances, threshold.value)).sum())
    log(f"threshold {threshold.value:.4f} ({threshold.rule}); {filtered} neighbours dropped")

    log("[6/8] questions and difficulty")
    questions, short = build_questions(neighbours.indices, neighbours.distances, threshold.value, categories)
    if not questions:
        raise ValueError("no pair has 4 negatives after the similarity filter: lower --min-distance or raise --k")

    log("[7/8] tiers")
    tiers = split_tiers(questions, pool_size, settings.silver_size)
    log(", ".join(f"{tier} {len(items)}" for tier, items in tiers.items()) + " questions per task")

    log("[8/8] writing parquet files, random-negative variants, verification sheet and card")
    _clear_outputs(out, split_names)
    tier_summary = write_outputs(out, tiers, pairs, vectors, threshold.value, settings.domain, settings.seed)
    summary = {
        "version": 1,
        "command": settings.command(),
        "domain": settings.domain,
        "split_names": split_names,
        "settings": settings.to_dict(),
        "corpus": {"input": pairs.origin, "rows": len(pairs.dataset), "pairs": len(pairs), "dropped": pairs.dropped},
        "embedding": {"dim": int(vectors.shape[1]), "cache": str(settings.cache / "embeddings" / embeddings_key)},
        "index": {**neighbours.plan.to_dict(), "description": neighbours.plan.describe()},
        "threshold": threshold.to_dict(),
        "neighbours_filtered": filtered,
        "categories": {"top": top, "other": other_label(home), "home_archive": home, "rule": describe_rule(home, top)},
        "questions": {"built": len(questions), "short": short},
        "tiers": tier_summary,
    }
    (out / SUMMARY).write_text(json.dumps(summary, indent=2))
    write_card(out, summary)
    log(f"done: {out} (verify {out / 'verification' / 'index.html'}, then run scifig curate scifibench-accept)")
    return summary
