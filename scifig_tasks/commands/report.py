"""``scifig report RESULTS... --out DIR``: Markdown + HTML report with the papers' figures from evaluation results."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP

DESCRIPTION = """\
Write a report of evaluation results: one headline table of every model and benchmark, then for each benchmark the
tables and figures of its paper, every model's accuracy with its 95% interval next to the numbers the paper
published. Reads lmms-eval results (the --output_path folder or its *_results.json files; several files of one model
merge, but a scifig rescore output given with the run it re-scored stays a row of its own) and VLMEvalKit score files
(*_scifig_scores.json in its work dir). Results of _paper tasks are shown as the model under the paper protocol.

Writes OUT/report.html, OUT/report.md and OUT/figures/*.png and, when the run logged its samples (lmms-eval's
--log_samples), OUT/samples.html: every sample with its figure, prompt, model output and how it was scored,
filterable. API keys and URL credentials of the environment (as scifig eval masks them) are masked in everything
written, also when the results come from a plain lmms-eval run whose samples hold a key a server echoed."""

EPILOG = """\
examples:
  scifig report runs --out report                  # then open report/report.html
  scifig report runs/gpt-4o runs/qwen2-vl outputs/ --out report"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "report",
        help=HELP["report"],
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS", help="results files or folders (searched recursively)"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from scifig_tasks.report.build import build_report

    report = build_report(args.results, args.out)
    print(f"report: {report.markdown}")
    print(f"report: {report.html}")
    if report.samples is not None:
        print(f"samples: {report.samples}")
    print(f"sections: {', '.join(report.sections)}; figures: {len(report.figures)}")
    return 0
