"""``scifig curate scifibench`` / ``scifibench-accept`` / ``scifibench-from-scicap``: ``register(subparsers)`` adds the
three sub-commands, ``main(argv)`` runs them stand-alone (``python -m curation.scifibench.cli``, also under
``accelerate launch`` for the embeddings). The manual: curation/scifibench/README.md and docs/curation.md; how every
curate command ends: docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from curation.cluster import FROM_DASK_CONFIG
from curation.outputs import run_build, stand_alone
from curation.scifibench.embed import DEFAULT_BATCH_SIZE, DEFAULT_MODEL, DEFAULT_PRETRAINED, DEFAULT_SHARD_SIZE
from curation.scifibench.neighbours import DEFAULT_EXACT_MAX, DEFAULT_K, DEFAULT_NPROBE
from curation.scifibench.splits import GOLD_SIZE, POOL_FACTOR, SILVER_SIZE


def _gpu_flag(value: str) -> bool | None:
    choices = {"auto": None, "yes": True, "no": False}
    if value not in choices:
        raise argparse.ArgumentTypeError(f"expected auto, yes or no, got {value!r}")
    return choices[value]


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return number


def _add_curate(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scifibench",
        help="SciFIBench-style questions from figure-caption pairs (CLIP + Faiss hard negatives)",
        description="Curate SciFIBench-style multiple-choice questions from any figure-caption corpus, as the paper "
        "describes: every figure and caption is embedded with CLIP, each pair's nearest neighbours (Faiss) become its "
        "hard negatives, for both tasks (Figure2Caption: the caption of a figure; Caption2Figure: the figure of a "
        "caption; 5 options). Writes the gold-candidate, silver, bronze and random-negative tiers per task in the "
        "published dataset's schema, and a verification page (OUT/verification/index.html): review the gold "
        "candidates there, then turn the accepted ones into the gold split with scifig curate scifibench-accept.",
        epilog="examples:\n"
        "  scifig curate scifibench-from-scicap --root /data/scicap --split train --out scicap-train.parquet\n"
        "  scifig curate scifibench --pairs scicap-train.parquet --out scifibench-cs\n"
        "  # open scifibench-cs/verification/index.html, accept, download accepted.txt, then\n"
        "  scifig curate scifibench-accept --out scifibench-cs --accepted accepted.txt\n"
        "  SCIFIG_SCIFIBENCH_DATA=scifibench-cs/gold scifig eval --preset gpt-4o --tasks scifibench_cs "
        "--output_path runs\n\n"
        'Several GPUs for the embeddings: accelerate launch "$(command -v scifig)" curate scifibench ...',
    )
    data = parser.add_argument_group("input and output")
    data.add_argument("--pairs", required=True, help="parquet file or directory, save_to_disk directory or Hub id")
    data.add_argument("--split", default=None, help="split of a DatasetDict or Hub dataset (default: train)")
    data.add_argument("--out", type=Path, required=True, help="output directory")
    data.add_argument("--domain", choices=("CS", "General"), default="CS", help="split-name prefix (default CS)")
    data.add_argument(
        "--home-archive",
        default=None,
        help="arXiv archive whose other categories are 'other <archive>' and outside which papers are 'cross-list' "
        "(default: cs for CS, none for General)",
    )
    data.add_argument("--keep-subfigures", action="store_true", help="keep rows flagged has_subfigures")
    data.add_argument("--top-categories", type=int, default=10, help="categories kept individually (default 10)")
    clip = parser.add_argument_group("embeddings (open_clip)")
    clip.add_argument("--model", default=DEFAULT_MODEL, help=f"open_clip model (default {DEFAULT_MODEL})")
    clip.add_argument(
        "--pretrained",
        default=DEFAULT_PRETRAINED,
        help=f"tag or checkpoint; 'none' = random; 'tiny' = scifig's tiny model, random weights, to try the loop "
        f"offline (default {DEFAULT_PRETRAINED})",
    )
    clip.add_argument("--model-config", type=Path, default=None, help="open_clip model-config JSON to register first")
    clip.add_argument("--init-seed", type=int, default=0, help="initialisation seed with --pretrained none or tiny")
    clip.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="pairs per forward pass")
    clip.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE, help="pairs per cached shard")
    clip.add_argument("--num-workers", type=int, default=0, help="image-decoding DataLoader workers")
    clip.add_argument("--device", default=None, help="torch device (default: cuda when available)")
    clip.add_argument("--cache-dir", type=Path, default=None, help="embedding/neighbour cache (default OUT/cache)")
    knn = parser.add_argument_group("neighbours and filter")
    knn.add_argument("--k", type=int, default=DEFAULT_K, help=f"neighbours searched per pair (default {DEFAULT_K})")
    knn.add_argument(
        "--exact-max",
        type=int,
        default=DEFAULT_EXACT_MAX,
        help=f"exact search up to N pairs (default {DEFAULT_EXACT_MAX})",
    )
    knn.add_argument("--nlist", type=int, default=None, help="IVF cells (default: power of two nearest 1.6 sqrt(N))")
    knn.add_argument(
        "--nprobe",
        type=int,
        default=None,
        help=f"IVF cells each vector probes, exactly (default: 14 cells' worth of vectors, at most {DEFAULT_NPROBE})",
    )
    knn.add_argument("--gpu", type=_gpu_flag, default=None, help="GPU Faiss: auto (default), yes, no")
    knn.add_argument(
        "--vectors-on-disk",
        action="store_true",
        help="keep the joint vectors on disk (memory-mapped) and compare 8-bit codes, re-ranked exactly: for corpora "
        "whose vectors (pairs x dim x 4 bytes) do not fit in memory; needs that much free disk under the cache",
    )
    knn.add_argument(
        "--knn-processes",
        type=_positive,
        default=1,
        help="with --vectors-on-disk: processes sharing the neighbour search by cells (default 1)",
    )
    knn.add_argument("--min-distance", type=float, default=None, help="similarity threshold (default: from data)")
    engine = parser.add_argument_group("cluster (Dask; docs/scale-out.md)")
    engine.add_argument(
        "--cluster",
        nargs="?",
        const=FROM_DASK_CONFIG,
        default=None,
        metavar="ADDRESS",
        help="embed and scan the neighbour cells on a Dask cluster, with the same results: 'local' (worker "
        "processes on this machine), a scheduler's address (tcp://HOST:8786), or nothing: Dask's scheduler-address "
        "setting (DASK_SCHEDULER_ADDRESS), else local. Every worker must see --pairs and the cache folder by the "
        "same paths (default: this process alone, no cluster)",
    )
    engine.add_argument(
        "--cluster-workers",
        type=_positive,
        default=None,
        help="worker processes of a local cluster, one thread each (default: one per CPU)",
    )
    tiers = parser.add_argument_group("questions and tiers")
    tiers.add_argument("--seed", type=int, default=0, help="option shuffling, random negatives, IVF training")
    tiers.add_argument("--gold-size", type=int, default=GOLD_SIZE, help=f"gold questions per task ({GOLD_SIZE})")
    tiers.add_argument("--pool-factor", type=float, default=POOL_FACTOR, help="candidate pool = factor x gold size")
    tiers.add_argument(
        "--silver-size", type=int, default=SILVER_SIZE, help=f"silver questions per task ({SILVER_SIZE})"
    )
    parser.set_defaults(handler=run_curate)


def _add_accept(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scifibench-accept",
        help="turn verified (accepted) candidate ids into the gold split",
        description="Write the gold split of a curated SciFIBench set from the candidates accepted on its "
        "verification page (OUT/verification/index.html, 'Download accepted.txt'): per task, the hardest accepted "
        "questions, balanced over categories, --gold-size of them, written to OUT/gold/. Rerun it with another "
        "file to replace the gold split.",
        epilog="example:\n  scifig curate scifibench-accept --out scifibench-cs --accepted accepted.txt",
    )
    parser.add_argument("--out", type=Path, required=True, help="the directory `scifig curate scifibench` wrote")
    parser.add_argument("--accepted", type=Path, required=True, help="accepted ids: '<task> <ID>' per line")
    parser.add_argument("--gold-size", type=int, default=None, help="gold questions per task (default: as curated)")
    parser.set_defaults(handler=run_accept)


def _add_scicap(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scifibench-from-scicap",
        help="convert the SciCap release into the scifibench input schema",
        description="Convert a split of the SciCap release (its caption JSON files, figures and the arXiv metadata "
        "snapshot for the categories) into the figure-caption pairs that scifig curate scifibench reads: one "
        "parquet file.",
        epilog="example:\n"
        "  scifig curate scifibench-from-scicap --root /data/scicap --split train --out scicap-train.parquet",
    )
    parser.add_argument("--root", type=Path, required=True, help="SciCap release root (SciCap-Caption-All/, ...)")
    parser.add_argument("--split", default="train", help="SciCap split: train, val or test (default train)")
    parser.add_argument("--out", type=Path, required=True, help="output parquet file")
    parser.add_argument(
        "--arxiv-metadata", type=Path, default=None, help="default ROOT/arxiv-metadata-oai-snapshot.json"
    )
    parser.add_argument("--file-list", type=Path, default=None, help="keep only these figure ids (JSON list or lines)")
    parser.add_argument("--keep-subfigures", action="store_true", help="also convert figures with sub-figures")
    parser.set_defaults(handler=run_scicap)


def register(subparsers: Any) -> None:
    """Add ``scifibench``, ``scifibench-accept`` and ``scifibench-from-scicap`` to ``subparsers``."""
    _add_curate(subparsers)
    _add_accept(subparsers)
    _add_scicap(subparsers)


def settings_from(args: argparse.Namespace) -> Any:
    from curation.scifibench.embed import ClipSpec
    from curation.scifibench.pipeline import DEFAULT_HOME, Settings
    from scifig_tasks.core.clip_baseline import clip_model

    choice = clip_model(args.model, args.pretrained, args.model_config)
    home = args.home_archive
    if home is None:
        home = DEFAULT_HOME
    elif home.lower() == "none":
        home = None
    return Settings(
        pairs=args.pairs,
        out=args.out,
        split=args.split,
        domain=args.domain,
        home_archive=home,
        keep_subfigures=args.keep_subfigures,
        top_categories=args.top_categories,
        clip=ClipSpec(choice.model, choice.pretrained, choice.model_config, args.init_seed),
        batch_size=args.batch_size,
        shard_size=args.shard_size,
        num_workers=args.num_workers,
        device=args.device,
        cache_dir=args.cache_dir,
        k=args.k,
        exact_max=args.exact_max,
        nlist=args.nlist,
        nprobe=args.nprobe,
        use_gpu=args.gpu,
        vectors_on_disk=args.vectors_on_disk,
        knn_processes=args.knn_processes,
        cluster=args.cluster,
        cluster_workers=args.cluster_workers,
        min_distance=args.min_distance,
        seed=args.seed,
        gold_size=args.gold_size,
        pool_factor=args.pool_factor,
        silver_size=args.silver_size,
    )


def run_curate(args: argparse.Namespace) -> int:
    def build() -> dict[str, Any] | None:
        from curation.scifibench.pipeline import curate

        if args.knn_processes > 1 and not args.vectors_on_disk:
            raise ValueError("--knn-processes shares the on-disk search: add --vectors-on-disk (or drop it)")
        if args.knn_processes > 1 and args.cluster is not None:
            raise ValueError(
                "--knn-processes shares the search among local processes, --cluster among the "
                "cluster's workers: give one of them"
            )
        if args.cluster_workers is not None and args.cluster is None:
            raise ValueError("--cluster-workers sizes a local cluster: add --cluster (or drop it)")
        return curate(settings_from(args))

    def report(summary: dict[str, Any] | None) -> None:
        if summary is None:  # a non-main process of a multi-GPU run: its shards are done
            return
        tiers = summary["tiers"]
        sizes = ", ".join(f"{tier} {next(iter(tiers[tier]['questions'].values()))}" for tier in tiers)
        print(f"SciFIBench ({summary['domain']}): {sizes} questions per task written to {args.out}")
        print(
            f"verify {args.out / 'verification' / 'index.html'}, then: "
            f"scifig curate scifibench-accept --out {args.out} ..."
        )

    return run_build("scifibench", build, report, args.out, args.cache_dir)


def run_accept(args: argparse.Namespace) -> int:
    def build() -> dict[str, Any]:
        from curation.scifibench.gold import accept

        return accept(args.out, args.accepted, args.gold_size)

    def report(summary: dict[str, Any]) -> None:
        gold = summary["tiers"]["gold"]["questions"]
        print(f"gold: {', '.join(f'{task} {n}' for task, n in gold.items()) or 'no questions'} -> {args.out / 'gold'}")

    return run_build("scifibench-accept", build, report, args.out)


def run_scicap(args: argparse.Namespace) -> int:
    from curation.scifibench.scicap import Converted, convert_scicap

    def report(result: Converted) -> None:
        print(f"SciCap {args.split}: {result.rows} pairs written to {result.out} (skipped: {result.skipped})")

    return run_build(
        "scifibench-from-scicap",
        lambda: convert_scicap(
            args.root, args.split, args.out, args.arxiv_metadata, args.file_list, args.keep_subfigures
        ),
        report,
        args.out,
        file=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return stand_alone(
        register, argv, "python -m curation.scifibench.cli", "SciFIBench curation (the same as scifig curate)."
    )


if __name__ == "__main__":
    sys.exit(main())
