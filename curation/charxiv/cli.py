"""``scifig curate charxiv_full import-published``: the CharXiv authors' published responses and grades of one model
as a scifig run folder (:mod:`curation.charxiv.run_folder`).

``register(subparsers)`` adds ``charxiv_full`` and its command (the namespace carries ``handler``); ``main(argv)`` runs
it stand-alone. The manual: docs/curation.md, "CharXiv: the authors' published responses".
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.charxiv.published import FAILED
from curation.outputs import run_build, stand_alone

if TYPE_CHECKING:
    from curation.charxiv.run_folder import Imported

COMMAND = "charxiv_full import-published"
HELP = "CharXiv: the authors' published model outputs as a run folder (import-published)"
DESCRIPTION = """\
Turn the CharXiv authors' published outputs of one model -- gen-<model>-<mode>_val.json (the responses, as their
src/generate.py writes them) and scores-<model>-<mode>_val.json (their GPT-4o grades, as their src/evaluate.py
writes them), <mode> descriptive and/or reasoning -- into an lmms-eval run folder OUT/<model>/ of the tasks
charxiv_full_<mode>_paper, the authors' grades as the paper protocol's records (a -1 ungraded and flagged).
`scifig report OUT` shows their numbers (the authors' figure is their get_stats.py "Overall Score");
`scifig rescore OUT --protocol default` scores the same responses with the default protocol. The questions come
from the CharXiv data --data names (else SCIFIG_CHARXIV_FULL_DATA, else the Hub dataset at the pinned revision);
every response must answer a question of that data. Prints how often the default protocol's exact rules agree with
the authors' grades where they decide."""
EPILOG = """\
examples:
  scifig curate charxiv_full import-published --responses existing_evaluations --model GPT-4o --out published
  scifig report published --out report
  scifig rescore published --out published-default --protocol default"""


def report(imported: Imported) -> None:
    """What was imported, the authors' figures, the rules' agreement and the next commands (stdout)."""
    print(f"CharXiv, {imported.model}, as the authors graded it (grader: {imported.grader}):")
    for part in imported.parts:
        scores = [published.score for published in part.published.values()]
        questions, correct, ungraded = len(scores), scores.count(1), scores.count(FAILED)
        graded = questions - ungraded
        over_graded = f"{100 * correct / graded:.2f}%" if graded else "-"
        failed = f" ({ungraded:,} ungraded: score -1)" if ungraded else ""
        print(
            f"  {part.mode}: {questions:,} questions, {correct:,} right; the authors' figure "
            f'{100 * correct / questions:.2f} (get_stats.py "Overall Score"); {over_graded} over the {graded:,} '
            f"graded{failed}"
        )
    print("the default protocol's exact rules against the authors' grades:")
    for part in imported.parts:
        print(f"  {part.mode}: {part.agreement.words()}")
    print(f"wrote {imported.results} and {len(imported.samples)} sample log{'s' if len(imported.samples) > 1 else ''}")
    run = shlex.quote(str(imported.folder.parent))
    data = ""
    if imported.data is not None:  # absolute: the line can be pasted in any folder
        data = f"SCIFIG_CHARXIV_FULL_DATA={shlex.quote(str(imported.data.absolute()))} "
    print(f"next: scifig report {run} --out {run}-report")
    print(
        f"      {data}scifig rescore {run} --out {run}-default --protocol default   # the default protocol on the "
        "same responses; its rescore_diff.json lists each question's authors' and new verdict"
    )


def run(args: argparse.Namespace) -> int:
    from curation.charxiv.run_folder import import_published

    return run_build(
        COMMAND,
        lambda: import_published(args.responses, args.model, args.out, data=args.data, grader=args.grader),
        report,
        args.out,
    )


def register(subparsers: Any) -> None:
    """Add ``charxiv_full`` (with ``import-published``) to ``scifig curate``."""
    from scifig_tasks.benchmarks.charxiv.grading import PAPER_JUDGE_MODEL

    charxiv = subparsers.add_parser(
        "charxiv_full",
        help=HELP,
        description="CharXiv (charxiv_full): bring the authors' published model outputs into scifig.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = charxiv.add_subparsers(dest="charxiv_command", required=True, metavar="COMMAND")
    parser = commands.add_parser(
        "import-published",
        help="the authors' gen-/scores-<model>-<mode>_val.json as a run folder",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--responses",
        type=Path,
        required=True,
        help="folder of gen-<model>-<mode>_val.json and scores-<model>-<mode>_val.json (e.g. existing_evaluations/)",
    )
    parser.add_argument("--model", required=True, help="the model's name in the file names, and in the report")
    parser.add_argument(
        "--out", type=Path, required=True, help="run folder to write (OUT/<model>/, read by scifig report)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="the CharXiv data the responses answer: a folder SCIFIG_CHARXIV_FULL_DATA may name (the authors' "
        "layout or val.parquet; default: that setting, else the Hub dataset at the pinned revision)",
    )
    parser.add_argument(
        "--grader",
        default=PAPER_JUDGE_MODEL,
        help=f"the model that made the scores files, as the run's judge (default {PAPER_JUDGE_MODEL}, the authors')",
    )
    parser.set_defaults(handler=run)


def main(argv: Sequence[str] | None = None) -> int:
    return stand_alone(register, argv, "scifig curate", "Build a benchmark's data locally.", dest="benchmark")


if __name__ == "__main__":
    sys.exit(main())
