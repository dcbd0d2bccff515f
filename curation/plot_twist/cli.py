"""``scifig curate plot-twist``: build the Plot Twist synthetic set
(:func:`curation.plot_twist.build.build_plot_twist`).

``register(subparsers)`` adds the sub-command to ``scifig curate``; ``main(argv)`` runs it stand-alone
(``python -m curation.plot_twist.cli --out DIR``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.outputs import run_build, use_data_line
from scifig_tasks.benchmarks.plot_twist.rules import ROBUSTNESS_VARIANTS
from scifig_tasks.commands.outputs import run_handler

if TYPE_CHECKING:
    from curation.plot_twist.build import BuildResult

HELP = "generate Plot Twist (Chart101): synthetic scatter/bar/pie charts, questions and robustness variants"
DESCRIPTION = """\
Generate Plot Twist (Chart101) as in the paper: simple scatter, bar and pie charts drawn with matplotlib defaults,
with the paper's elementary questions (maximum, minimum, count, axis range) answered from what is drawn, and the
robustness variants (no, correct or misleading title, other markers, grid, Vega-Lite rendering) drawn from the same
data. Default: the paper's 42 scatter, 50 bar and 47 pie plots (336 / 250 / 141 questions). Writes
OUT/test.parquet and a dataset card; the same seed gives the same files."""
EPILOG = """\
examples:
  scifig curate plot-twist --out pt-data
  scifig curate plot-twist --out pt-small --plots-per-type 5 --variants grid vegalite
  SCIFIG_PLOT_TWIST_DATA=pt-data scifig eval --preset gpt-4o --tasks plot_twist --output_path runs"""


def _variant_names(values: Sequence[str] | None) -> list[str] | None:
    if not values:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the sub-command's options to ``parser``."""
    parser.add_argument("--out", type=Path, required=True, help="output directory (usable as SCIFIG_PLOT_TWIST_DATA)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the chart data (default 0)")
    parser.add_argument(
        "--plots-per-type",
        type=int,
        default=None,
        help="plots per chart type (default: the paper's 42 scatter / 50 bar / 47 pie = 336 / 250 / 141 questions)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        default=None,
        help=f"robustness variants: all (default), none, or some of: {', '.join(ROBUSTNESS_VARIANTS)}",
    )
    parser.add_argument(
        "--variant-plots", type=int, default=None, help="re-render only the first N plots of each type (default: all)"
    )
    parser.add_argument("--workers", type=int, default=None, help="rendering processes (default: CPU count, max 8)")
    parser.set_defaults(handler=run)
    return parser


def register(subparsers: Any) -> None:
    """Add ``plot-twist`` to the ``scifig curate`` sub-commands."""
    configure(subparsers.add_parser("plot-twist", help=HELP, description=DESCRIPTION, epilog=EPILOG))


def run(args: argparse.Namespace) -> int:
    """Build the set described by parsed ``args``; 0 on success, 2 on a bad argument or an unwritable ``--out``,
    1 on a folder another command holds or a write failing mid-build (the builder is imported once the folder is
    held)."""

    def build() -> BuildResult:
        from curation.plot_twist.build import build_plot_twist

        return build_plot_twist(
            args.out,
            seed=args.seed,
            plots_per_type=args.plots_per_type,
            variants=_variant_names(args.variants),
            variant_plots=args.variant_plots,
            workers=args.workers,
        )

    def report(built: BuildResult) -> None:
        summary = ", ".join(f"{variant} {count}" for variant, count in built.counts.items())
        print(
            f"Plot Twist: {built.rows} questions ({summary}) written to {built.out}; "
            f"{use_data_line('SCIFIG_PLOT_TWIST_DATA', built.out)}"
        )

    return run_build("plot-twist", build, report, args.out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = configure(argparse.ArgumentParser(prog="scifig curate plot-twist", description=HELP))
    return run_handler(run, parser.parse_args(argv))  # a failed build removes the empty folders it made


if __name__ == "__main__":
    raise SystemExit(main())
