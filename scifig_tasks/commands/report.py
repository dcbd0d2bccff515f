"""``scifig report RESULTS... --out DIR``: Markdown + HTML report with the papers' figures from evaluation results."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

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


class ProgressLines:
    """``scifig report``'s progress on stderr, so a report of many runs is never silent: a line per step as it starts
    (``scifig report: section 2 of 5: GRAB``); a count within a step (the sample viewer's figures) at most once a
    second. On a terminal each line replaces the one before; the last is cleared before the closing lines."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.terminal = stream.isatty()
        self.started = time.monotonic()
        self.said = 0.0
        self.width = 0

    def __call__(self, text: str, *, detail: bool = False) -> None:
        now = time.monotonic()
        if detail and now - self.said < 1.0:
            return
        self.said = now
        line = f"scifig report: {text} [{now - self.started:.0f} s]"
        if self.terminal:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.terminal and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def _run(args: argparse.Namespace) -> int:
    from scifig_tasks.report.build import build_report

    progress = ProgressLines(sys.stderr)
    try:
        report = build_report(args.results, args.out, progress)
    finally:
        progress.done()
    written = [report.html.name, report.markdown.name]
    if report.samples is not None:
        written.append(report.samples.name)
    figures = f"{len(report.figures)} figure{'s' if len(report.figures) != 1 else ''} in figures/"
    print(f"wrote {', '.join(written)} and {figures} into {report.html.parent.resolve()}")
    print(f"sections: {', '.join(report.sections)}")
    if report.samples is not None:
        print(f"every sample, filterable: {report.samples.resolve()}")
    print(f"open in a browser: {report.html.resolve()}")
    return 0
