"""``scifig demo --out DIR``: the whole path offline, with no model weights: a small GRAB set from the generator,
scored through the real lmms-eval command line with ``scifig_chance``, the results table and the report of ``scifig
report``. The manual: the README's "The offline demo"; how the command line is built: docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.commands.eval import run_lmms_eval


def results_table(results: dict[str, Any]) -> str:
    """Markdown table: accuracy with 95% Wilson interval for every task and group, then per GRAB task type."""
    rows = ["| task | n | accuracy | 95% CI |", "|---|---:|---:|---:|"]
    entries = {**results.get("results", {}), **results.get("groups", {})}
    for name in sorted(entries):
        breakdown = entries[name].get("breakdown,none")
        if not isinstance(breakdown, dict):
            continue
        overall = breakdown["overall"]["all"]
        low, high = overall["ci95"]
        rows.append(
            f"| {name} | {overall['n']} | {100 * overall['accuracy']:.1f}% | {100 * low:.1f}-{100 * high:.1f}% |"
        )
    return "\n".join(rows)


DEMO_DPI = 60
"""The demo renders small images: the chance model never looks at them."""


def demo(out: Path, per_task: int, seed: int, workers: int | None = None, verbose: bool = False) -> int:
    """``scifig demo``: generate GRAB, score it with ``scifig_chance`` through lmms-eval, write the report. Quiet by
    default (one line saying what runs, the results table, the report's path); ``verbose`` shows what the generator
    and lmms-eval print, which otherwise goes to ``OUT/demo.log``."""
    from scifig_tasks.commands.format import error_line
    from scifig_tasks.core.errors import CommandError
    from scifig_tasks.core.resources import installed_entry_point
    from scifig_tasks.report.build import build_report

    log = out / "demo.log"
    if not verbose:
        print(
            f"Generating {4 * per_task} GRAB questions and scoring them with scifig_chance through lmms-eval",
            flush=True,
        )
        print(f"(their output: {log}) ...", flush=True)
    try:
        with contextlib.nullcontext() if verbose else output_to(log):
            build_grab = installed_entry_point("scifig.builders", "grab")  # curation.grab.build.build_grab
            built = build_grab(out / "data", seed=seed, limit=4 * per_task, dpi=DEMO_DPI, workers=workers)
            os.environ["SCIFIG_GRAB_DATA"] = str(built.out)
            os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            argv = ["--model", "scifig_chance", "--model_args", f"seed={seed}", "--tasks", "grab"]
            argv += ["--output_path", str(out / "results"), "--log_samples"]
            (result,) = run_lmms_eval(argv)
            report = build_report([out / "results"], out / "report")
    except Exception as exc:
        if verbose or not log.is_file():  # nothing was written to the log: the boundary says what happened
            raise
        what = error_line("", exc)[0].removeprefix("scifig: ")
        raise CommandError(what, f"what ran is in {log}", status=1) from exc
    print(f"\nGRAB (generated locally, {built.rows} questions) scored through lmms-eval with scifig_chance:\n")
    print(results_table(result))
    print(f"\nReport ({len(report.figures)} figures{', every sample in samples.html' if report.samples else ''}):")
    print(report.html.resolve())
    return 0


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Send everything written to the standard output and error into ``log``: Python's prints, lmms-eval's logger
    (which holds the original stream), progress bars and child processes (file descriptors 1 and 2)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as file:
        sys.stdout.flush()
        sys.stderr.flush()
        saved: list[int] = []
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                saved.append(os.dup(fd))
                os.dup2(file.fileno(), fd)
        try:
            with contextlib.redirect_stdout(file), contextlib.redirect_stderr(file):
                yield
        finally:
            with contextlib.suppress(ValueError, OSError, io.UnsupportedOperation):
                sys.stdout.flush()
                sys.stderr.flush()
            for fd, copy in zip((1, 2), saved, strict=False):
                os.dup2(copy, fd)
                os.close(copy)


DESCRIPTION = """\
Try the whole path on this machine with no network and no model weights: generate a small GRAB set with the GRAB
generator (--per-task questions for each of its four tasks, balanced over question types and complexity), score it
through the real lmms-eval command line with scifig_chance (a model that answers at random), print the results
table and write the HTML report with the GRAB figures and every sample. The last line printed is the report to open
in a browser.

Written under --out: data/ (the generated questions), results/ (lmms-eval's results and sample logs), report/
(report.html, report.md, figures/, samples.html)."""

EPILOG = """\
example:
  scifig demo --out scifig-demo
  # then open scifig-demo/report/report.html (the last line printed); scifig-demo/demo.log holds what ran"""


def register(commands: Any) -> None:
    """Add ``scifig demo`` to the ``scifig`` command line."""
    parser = commands.add_parser(
        "demo",
        help=HELP["demo"],
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument("--out", type=Path, default=Path("scifig-demo"), help="output folder (default: scifig-demo)")
    parser.add_argument(
        "--per-task", type=positive_int, default=10, help="questions per GRAB task (default: 10, 40 in all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the generator and of the random answers (0)")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="processes drawing the graphs (default: CPU count, at most 8)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print what the generator and lmms-eval print (log lines, progress bars, lmms-eval's tables)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``scifig demo`` as parsed."""
    return demo(args.out, args.per_task, args.seed, args.workers, args.verbose)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
