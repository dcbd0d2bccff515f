"""``scifig compare RUN_A RUN_B [RUN ...]``: is one run better than another on the same questions, or is the
difference chance?

Each argument is one run of one model: an lmms-eval output folder or results file (with the sample logs
``--log_samples`` wrote beside it) or a VLMEvalKit work dir (with scifig's ``*_scifig_records.jsonl``), read by the
report's reader (:func:`scifig_tasks.report.runs.load_runs`). Every later run is compared with the first, task by
task, on the questions both answered (:mod:`scifig_tasks.report.compare`, statistics in
:mod:`scifig_tasks.core.compare`): a table on the terminal (at most 100 columns) and, with ``--json FILE``, every
number in a JSON file. Exit status 0 when at least one task was compared, 1 when none could be.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scifig_tasks.core import compare as stats
from scifig_tasks.core.errors import CommandError

DESCRIPTION = """\
Compare evaluation runs question by question: for each task, the accuracies of two runs on the questions both
answered, the difference with a 95% interval (paired bootstrap over questions, seeded), the questions only one of
them got right and the exact McNemar test, then one line in words: which run is better, or that the difference is
not significant. With more than two runs, each is compared with the first.

A run is an lmms-eval output folder or results file written with --log_samples, or a VLMEvalKit work dir of a scifig
dataset (its *_scifig_records.jsonl); the two may be mixed. Per question, "correct" is what the benchmark's scorer
logged: GRAB's exact match, SciFIBench's and MMSci's resolved letter, Plot Twist's standard (exact) accuracy.
A task the runs answered on other questions (other data, another --limit) or under another task version is refused
with the reason; a task only one run has is listed as not compared."""

EPILOG = """\
examples:
  scifig compare runs/baseline runs/finetuned
  scifig compare runs/gpt-4o runs/qwen2-vl vlmeval-out/qwen2-vl --json comparison.json"""


def register(commands: Any) -> None:
    """Add ``scifig compare`` to the ``scifig`` command line."""
    parser = commands.add_parser(
        "compare",
        help="is one run better than another on the same questions? (paired test)",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument(
        "runs", nargs="+", type=Path, metavar="RUN", help="lmms-eval output folder or results file, or VLMEvalKit dir"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="write every number to FILE (JSON)")
    parser.add_argument(
        "--resamples", type=int, default=stats.RESAMPLES, help=f"bootstrap resamples (default {stats.RESAMPLES:,})"
    )
    parser.add_argument("--seed", type=int, default=stats.SEED, help=f"bootstrap seed (default {stats.SEED})")
    parser.set_defaults(handler=_command)


def _command(args: argparse.Namespace) -> int:
    from scifig_tasks.report.compare import compare_runs, text_table
    from scifig_tasks.report.runs import load_runs

    if len(args.runs) < 2:
        raise CommandError("give at least two runs to compare", "scifig compare RUN_A RUN_B")
    if args.resamples < 100:
        raise CommandError(f"--resamples {args.resamples} is too few", "use 100 or more (default 10,000)")
    try:
        import statsmodels  # noqa: F401 - the exact McNemar test
    except ImportError:
        raise CommandError("statsmodels is not installed", "pip install 'scifig[report]'") from None
    runs = []
    for path in args.runs:
        found = load_runs([path])
        if len(found) != 1:
            models = ", ".join(run.model for run in found)
            raise CommandError(f"{path} holds {len(found)} runs ({models})", "name one model's folder or results file")
        if not found[0].samples:
            raise CommandError(
                f"{path} has no per-question records",
                "run lmms-eval with --log_samples (VLMEvalKit: keep the *_scifig_records.jsonl)",
            )
        runs.append(found[0])
    comparison = compare_runs(runs, args.resamples, args.seed)
    comparison.names = [f"{run.model} ({path})" for run, path in zip(runs, args.runs, strict=True)]
    print(text_table(comparison))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(comparison.as_json(), indent=1), encoding="utf-8")
        print(f"json: {args.json}")
    if not comparison.compared:
        print("scifig compare: no task could be compared (the reasons are above)", file=sys.stderr)
        return 1
    return 0
