"""``scifig curate grab``: generate GRAB (default: the published 2,170-question composition) as a Hugging Face
dataset usable as ``SCIFIG_GRAB_DATA``.

``register(subparsers)`` adds the command (its namespace carries ``handler``); ``main(argv)`` runs it standalone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.outputs import run_build, stand_alone, use_data_line

if TYPE_CHECKING:
    from curation.grab.build import BuildResult

TASK_ALIASES = {"functions": "function", "transforms": "transform"}
HELP = "generate GRAB (default: the published 2,170-question composition)"
DESCRIPTION = """\
Generate GRAB with the GRAB generator: synthetic graphs of functions and series (and their transforms) drawn with
matplotlib, with the questions and exact answers, written in the published Hugging Face dataset's schema
(OUT/GRAB.parquet and a dataset card). Default: the published composition of 2,170 questions; --limit N builds a
small subset balanced over tasks, question types and complexity. The same seed gives the same files, whatever the
number of workers."""
EPILOG = """\
examples:
  scifig curate grab --out grab-data
  scifig curate grab --out grab-small --limit 40 --tasks properties series
  SCIFIG_GRAB_DATA=grab-data scifig eval --preset gpt-4o --tasks grab --output_path runs"""


def _tasks(values: Sequence[str] | None) -> list[str] | None:
    from curation.grab.questions import TASK_ORDER

    if not values:
        return None
    tasks = []
    for value in values:
        for name in value.split(","):
            name = TASK_ALIASES.get(name.strip(), name.strip())
            if name not in TASK_ORDER:
                raise SystemExit(f"scifig curate grab: unknown task {name!r} (choose from {', '.join(TASK_ORDER)})")
            tasks.append(name)
    return tasks


def run(args: argparse.Namespace) -> int:
    """Build the set ``args`` describe; the generator is imported once the output folder is held, so a folder in use
    is refused at once."""

    def build() -> BuildResult:
        from curation.grab.build import build_grab

        return build_grab(
            args.out,
            seed=args.seed,
            limit=args.limit,
            workers=args.workers,
            tasks=_tasks(args.tasks),
            dpi=args.dpi,
            mc=args.mc,
        )

    def report(built: BuildResult) -> None:
        extra = (
            ""
            if built.mc_rows is None
            else f" (+ {built.mc_rows} multiple-choice rows in {built.out / 'properties_mc'})"
        )
        use = use_data_line("SCIFIG_GRAB_DATA", built.out)
        print(f"GRAB: {built.rows} questions written to {built.out}{extra}; {use}")

    return run_build("grab", build, report, args.out)


def register(subparsers: Any) -> None:
    from curation.grab.render import DEFAULT_DPI

    grab = subparsers.add_parser("grab", help=HELP, description=DESCRIPTION, epilog=EPILOG)
    grab.add_argument("--out", type=Path, required=True, help="output directory (usable as SCIFIG_GRAB_DATA)")
    grab.add_argument("--seed", type=int, default=0, help="random seed of the generator (default 0)")
    grab.add_argument("--limit", type=int, default=None, help="a small subset balanced over tasks, types, complexity")
    grab.add_argument("--workers", type=int, default=None, help="rendering processes (default: CPU count, max 8)")
    grab.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        help="tasks to generate: properties function series transform (default: all)",
    )
    grab.add_argument("--dpi", type=int, default=DEFAULT_DPI, help=f"image resolution (default {DEFAULT_DPI})")
    grab.add_argument("--mc", action="store_true", help="also write the properties multiple-choice set")
    grab.set_defaults(handler=run)


def main(argv: Sequence[str] | None = None) -> int:
    return stand_alone(register, argv, "scifig curate", "Build a benchmark's data locally.", dest="benchmark")


if __name__ == "__main__":
    sys.exit(main())
