"""``scifig curate mmsci`` / ``mmsci-from-vlmeval`` / ``mmsci-from-authors``: ``register(subparsers)`` adds the three
sub-commands, ``main(argv)`` runs them stand-alone (``python -m curation.mmsci.cli``). The manual:
curation/mmsci/README.md and docs/curation.md; how every curate command ends: docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from curation.mmsci.articles import DEFAULT_PATTERN
from curation.mmsci.sft import ABSTRACT_WORDS
from curation.mmsci.splits import MIN_ARTICLES, RATIO
from curation.outputs import fail, run_build, stand_alone, use_data_line


def _add_curate(subparsers: Any) -> None:
    text = "MMSci benchmark (3 MCQ settings, captioning, fine-tuning data) from article records"
    parser = subparsers.add_parser(
        "mmsci",
        help=text,
        description="Build MMSci from article records (title, abstract, figures with captions; the authors' record "
        "format): test and dev articles drawn per subject, the three figure-caption matching settings (Fig2Cap, "
        "SubFig2Cap, SubCap2Fig, 4 options), figure captioning items, and the fine-tuning conversations from the "
        "remaining (train) articles. Writes the local layout the MMSci tasks read (OUT/mcq/, OUT/captioning/, "
        "OUT/sft/) with a dataset card; the same input and seed give the same files.",
        epilog="examples:\n"
        "  scifig curate mmsci --articles articles.jsonl --out mmsci-data\n"
        "  scifig curate mmsci --articles rawdata/ --pattern '*_data.json' --split-ids rawdata/ --out mmsci-data"
        "   # the authors' splits\n"
        "  SCIFIG_MMSCI_DATA=mmsci-data scifig eval --preset gpt-4o --tasks mmsci --output_path runs",
    )
    parser.add_argument("--articles", type=Path, required=True, help="JSONL file or directory of JSON article records")
    parser.add_argument("--out", type=Path, required=True, help="output directory (usable as SCIFIG_MMSCI_DATA)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the splits and questions (default 0)")
    parser.add_argument("--ratio", type=float, default=RATIO, help=f"test/dev share per subject (default {RATIO})")
    parser.add_argument(
        "--min-articles", type=int, default=MIN_ARTICLES, help=f"minimum test/dev articles per subject ({MIN_ARTICLES})"
    )
    parser.add_argument(
        "--per-article", type=int, default=1, help="questions per setting and captioning figures per article (1)"
    )
    parser.add_argument(
        "--abstract-words", type=int, default=ABSTRACT_WORDS, help=f"abstract word budget in sft ({ABSTRACT_WORDS})"
    )
    parser.add_argument("--no-sft", action="store_true", help="do not write the fine-tuning data")
    parser.add_argument(
        "--pattern",
        default=DEFAULT_PATTERN,
        help="record files under an --articles directory (default *.json; the authors' rawdata: *_data.json)",
    )
    parser.add_argument(
        "--split-ids",
        type=Path,
        default=None,
        help="folder with the authors' test_split_ids.json and dev_split_ids.json: use their splits",
    )
    parser.set_defaults(handler=run_curate)


def _add_vlmeval(subparsers: Any) -> None:
    text = "convert VLMEvalKit's MMSci TSVs (MMSci_DEV_MCQ.tsv, MMSci_DEV_Captioning_*.tsv) to the local layout"
    parser = subparsers.add_parser(
        "mmsci-from-vlmeval",
        help=text,
        description="Convert the MMSci files VLMEvalKit publishes (MMSci_DEV_MCQ.tsv and the captioning TSVs, "
        "image only and with abstract) into the local layout the MMSci tasks read, so lmms-eval scores the same "
        "questions.",
        epilog="example:\n"
        "  scifig curate mmsci-from-vlmeval --mcq MMSci_DEV_MCQ.tsv --captioning "
        "MMSci_DEV_Captioning_image_only.tsv MMSci_DEV_Captioning_with_abs.tsv --out mmsci-dev",
    )
    parser.add_argument("--mcq", type=Path, default=None, help="MMSci_DEV_MCQ.tsv")
    parser.add_argument(
        "--captioning", type=Path, nargs="+", default=[], help="MMSci_DEV_Captioning_image_only.tsv and/or _with_abs"
    )
    parser.add_argument("--split", default="dev", choices=("dev", "test"), help="split written (default dev)")
    parser.add_argument("--out", type=Path, required=True, help="output directory (usable as SCIFIG_MMSCI_DATA)")
    parser.set_defaults(handler=run_vlmeval)


def _add_authors(subparsers: Any) -> None:
    text = "convert the authors' benchmark archive (benchmark/<split>/*.json + images/) to the local layout"
    parser = subparsers.add_parser(
        "mmsci-from-authors",
        help=text,
        description="Convert the MMSci benchmark archive the authors publish (benchmark/<split>/*.json with "
        "images/) into the local layout the MMSci tasks read; with --sft also its train split as fine-tuning data.",
        epilog="example:\n  scifig curate mmsci-from-authors --benchmark benchmark/ --splits dev --out mmsci-dev --sft",
    )
    parser.add_argument("--benchmark", type=Path, required=True, help="the unzipped benchmark/ directory")
    parser.add_argument(
        "--splits",
        nargs="+",
        default=["dev"],
        choices=("dev", "test"),
        help="splits (default dev; test answers are anonymised in the public archive)",
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory (usable as SCIFIG_MMSCI_DATA)")
    parser.add_argument("--sft", action="store_true", help="also convert benchmark/train into OUT/sft/ (fine-tuning)")
    parser.set_defaults(handler=run_authors)


def register(subparsers: Any) -> None:
    """Add ``mmsci``, ``mmsci-from-vlmeval`` and ``mmsci-from-authors`` to ``subparsers``."""
    _add_curate(subparsers)
    _add_vlmeval(subparsers)
    _add_authors(subparsers)


def run_curate(args: argparse.Namespace) -> int:
    command = (
        f"scifig curate mmsci --articles {args.articles} --out {args.out} --seed {args.seed} --ratio {args.ratio} "
        f"--min-articles {args.min_articles} --per-article {args.per_article} --abstract-words {args.abstract_words}"
        + (" --no-sft" if args.no_sft else "")
        + (f" --pattern '{args.pattern}'" if args.pattern != DEFAULT_PATTERN else "")
        + (f" --split-ids {args.split_ids}" if args.split_ids else "")
    )

    def report(summary: dict[str, Any]) -> None:
        counts = "; ".join(
            f"{split}: "
            + ", ".join(f"{setting} {entry['questions']}" for setting, entry in summary["mcq"][split].items())
            + f", captioning {summary['captioning'][split]['items']}"
            for split in summary["mcq"]
        )
        print(f"MMSci: {counts}; sft {summary.get('sft', {}).get('records', 0)} records -> {args.out}")
        print(use_data_line("SCIFIG_MMSCI_DATA", args.out))

    def build() -> dict[str, Any]:
        from curation.mmsci.build import build_mmsci

        return build_mmsci(
            args.articles,
            args.out,
            seed=args.seed,
            ratio=args.ratio,
            min_articles=args.min_articles,
            per_article=args.per_article,
            abstract_words=args.abstract_words,
            sft=not args.no_sft,
            command=command,
            pattern=args.pattern,
            split_ids=args.split_ids,
        )

    return run_build("mmsci", build, report, args.out)


def run_vlmeval(args: argparse.Namespace) -> int:
    if args.mcq is None and not args.captioning:
        return fail("mmsci-from-vlmeval", ValueError("give --mcq and/or --captioning"))
    command = f"scifig curate mmsci-from-vlmeval --split {args.split} --out {args.out}"
    command += f" --mcq {args.mcq}" if args.mcq else ""
    command += (" --captioning " + " ".join(map(str, args.captioning))) if args.captioning else ""

    def build() -> dict[str, Any]:
        from curation.mmsci.from_vlmeval import import_vlmeval

        return import_vlmeval(args.mcq, args.captioning, args.out, args.split, command)

    return run_build(
        "mmsci-from-vlmeval",
        build,
        lambda summary: _print_import(summary, args.out),
        args.out,
    )


def run_authors(args: argparse.Namespace) -> int:
    command = f"scifig curate mmsci-from-authors --benchmark {args.benchmark} --splits {' '.join(args.splits)} "
    command += f"--out {args.out}" + (" --sft" if args.sft else "")

    def build() -> dict[str, Any]:
        from curation.mmsci.from_authors import import_authors

        return import_authors(args.benchmark, args.splits, args.out, command, sft=args.sft)

    return run_build(
        "mmsci-from-authors",
        build,
        lambda summary: _print_import(summary, args.out),
        args.out,
    )


def _print_import(summary: dict[str, Any], out: Path) -> None:
    for split in summary["splits"]:
        questions = ", ".join(f"{setting} {entry['questions']}" for setting, entry in summary["mcq"][split].items())
        print(f"MMSci {split}: {questions}, captioning {summary['captioning'][split]['items']} -> {out}")
    if "sft" in summary:
        print(f"MMSci train: {summary['sft']['records']} fine-tuning records -> {out / 'sft' / 'train.jsonl'}")
    print(use_data_line("SCIFIG_MMSCI_DATA", out))


def main(argv: Sequence[str] | None = None) -> int:
    return stand_alone(register, argv, "python -m curation.mmsci.cli", "MMSci curation (the same as scifig curate).")


if __name__ == "__main__":
    sys.exit(main())
