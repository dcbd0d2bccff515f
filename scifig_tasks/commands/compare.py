"""``scifig compare RUN_A RUN_B [RUN ...]``: is one run better than another on the same questions, or is the
difference chance? Reads runs with :func:`scifig_tasks.report.runs.load_runs`, compares with
:mod:`scifig_tasks.report.compare`.

Manual: docs/reports.md, "Comparing runs" and "What `scifig compare` reads and refuses".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.commands import HELP
from scifig_tasks.core import compare as stats
from scifig_tasks.core.errors import CommandError, DataError

if TYPE_CHECKING:
    from scifig_tasks.report.runs import Run

DESCRIPTION = """\
Compare evaluation runs question by question: for each task, the accuracies of two runs on the questions both
answered, the difference with a 95% interval (paired bootstrap over questions, seeded), the questions only one of
them got right and the exact McNemar test, then one line in words: which run is better, or that the difference is
not significant. With more than two runs, each is compared with the first.

A run is an lmms-eval output folder or results file written with --log_samples, or a VLMEvalKit work dir of a scifig
dataset (its *_scifig_records.jsonl); the two may be mixed. Per question, "correct" is what the benchmark's scorer
logged: GRAB's exact match, SciFIBench's and MMSci's resolved letter, Plot Twist's standard (exact) accuracy.
A task the runs answered on other questions (other data, another --limit) or under another task version is refused
with the reason; a task only one run has is listed as not compared. Runs made from another revision of a benchmark's
data (recorded in their results files) are refused unless --allow-data-change."""

EPILOG = """\
examples:
  scifig compare runs/baseline runs/finetuned
  scifig compare runs/gpt-4o runs/qwen2-vl vlmeval-out/qwen2-vl --json comparison.json"""


def register(commands: Any) -> None:
    """Add ``scifig compare`` to the ``scifig`` command line."""
    parser = commands.add_parser(
        "compare",
        help=HELP["compare"],
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
    parser.add_argument(
        "--allow-data-change",
        action="store_true",
        help="compare runs made from different revisions of a benchmark's data (refused otherwise)",
    )
    parser.set_defaults(handler=_command)


def _redo(label: str) -> str:
    """What fixes a damaged run: its outputs are only in its logs, so evaluate it again (or restore the file)."""
    return f"run the evaluation of {label} again with --log_samples, or restore the log from a copy of the run"


def load_run(path: Path, label: str) -> Run:
    """The one run at ``path`` with its per-question records, or a :class:`CommandError`: several runs or none with
    records (status 2, a mistake on the command line, naming the files that lack them:
    :func:`scifig_tasks.report.compare.no_records`); a damaged file, unreadable, an empty log the results file
    counts samples of (:func:`scifig_tasks.report.compare.empty_logs`) or a log lacking some of them
    (:func:`incomplete_logs`) (status 1, naming the file)."""
    from scifig_tasks.report.compare import empty_logs, no_records, unreadable_log
    from scifig_tasks.report.runs import load_runs

    try:
        found = load_runs([path])
    except DataError as exc:
        raise CommandError(f"{label} ({path}): {unreadable_log(exc)}", _redo(label), status=1) from None
    if len(found) != 1:
        models = ", ".join(run.model for run in found)
        raise CommandError(f"{path} holds {len(found)} runs ({models})", "name one model's folder or results file")
    damaged = empty_logs(found[0]) or incomplete_logs(found[0])
    if damaged:
        raise CommandError(f"{label} ({path}): {'; '.join(damaged.values())}", _redo(label), status=1)
    if not found[0].samples:
        raise CommandError(*no_records(found[0], path))
    return found[0]


def incomplete_logs(run: Run) -> dict[str, str]:
    """Rule: an lmms-eval sample log holds a line for every document its results file says the run scored
    (``n-samples``' ``effective`` from the run's ``offset``: :func:`scifig_tasks.core.sample_logs.run_doc_ids`) and
    none other; a doc id missing (a line deleted or lost) or one the run did not score makes the log damaged, never a
    task answered on other questions: task -> the words naming the log, the doc ids and what the results file
    counts. A task ``scifig rescore --allow-partial`` scored from its log as it is (recorded in the results file, and
    said by the report) is left to the pairing, as is a line logged twice (the pairing refuses that task)."""
    from scifig_tasks.core.run_files import RESULTS_SUFFIX, read_results, samples_file_beside
    from scifig_tasks.core.sample_logs import check_log

    found: dict[str, str] = {}
    read: dict[Path, dict[str, Any]] = {}
    for task, samples in sorted(run.samples.items()):
        results = run.task_files.get(task)
        if results is None or not results.name.endswith(RESULTS_SUFFIX) or not samples:
            continue
        if results not in read:
            read[results] = read_results(results)
        rescored = read[results].get("scifig_rescore")
        if isinstance(rescored, dict) and task in (rescored.get("partial") or {}):
            continue
        log = samples_file_beside(results, task)
        check = check_log(task, samples, read[results], log.name)
        if check.gaps():
            found[task] = (
                f"the sample log {log} is damaged ({check.gaps()}: {check.logged} of the {check.expected} samples) "
                f"while its results file {results.name} counts {check.expected} samples of {task}"
            )
    return found


def run_data(run: Run) -> dict[str, Any]:
    """An environment block holding the data revisions of a run's results files, merged (a source read at two
    revisions within one run keeps both, ``A | B``)."""
    from scifig_tasks.core import provenance

    merged: dict[str, str] = {}
    for block in run.environments.values():
        for name, revision in provenance.data_revisions(block).items():
            known = merged.get(name)
            merged[name] = revision if known in (None, revision) else f"{known} | {revision}"
    return {provenance.DATA: {name: {"revision": revision} for name, revision in merged.items()}}


def data_lines(runs: list[Run], paths: list[Path], allow: bool) -> list[str]:
    """Refuse (a :class:`CommandError`, status 1) a later run made from other data than the first, where both
    recorded a revision, unless ``allow``; the lines to say (comparing anyway) otherwise."""
    from scifig_tasks.core import provenance
    from scifig_tasks.report.compare import run_label

    first = run_data(runs[0])
    lines = []
    for index, (run, path) in enumerate(zip(runs[1:], paths[1:], strict=True), start=1):
        changed = provenance.data_differences(first, run_data(run))
        known = {name: pair for name, pair in changed.items() if provenance.UNKNOWN not in pair}
        if not known:
            continue
        words = f"{run_label(0)} ({paths[0]}) and {run_label(index)} ({path}) were made from different data: "
        words += provenance.data_words(known)
        if not allow:
            raise CommandError(words, "compare runs of the same data, or pass --allow-data-change", status=1)
        lines.append(f"{words}; compared anyway (--allow-data-change)")
    return lines


def write_whole(path: Path, text: str) -> None:
    """Rule: ``path`` holds all of ``text`` or is left as it was. The text goes to a temporary file beside it (same
    folder, so the rename is atomic), flushed to disk, then renamed over ``path``; on any error the temporary file is
    removed and a :class:`CommandError` (status 1) names ``path`` and the reason."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        reason = exc.strerror or str(exc)
        raise CommandError(
            f"could not write {path} ({reason}); it is left as it was",
            "free disk space or give another --json FILE",
            status=1,
        ) from None


def _command(args: argparse.Namespace) -> int:
    from scifig_tasks.report.compare import compare_runs, run_label, text_table

    if len(args.runs) < 2:
        raise CommandError("give at least two runs to compare", "scifig compare RUN_A RUN_B")
    if args.resamples < 100:
        raise CommandError(f"--resamples {args.resamples} is too few", "use 100 or more (default 10,000)")
    try:
        import statsmodels  # noqa: F401 - the exact McNemar test
    except ImportError:
        raise CommandError("statsmodels is not installed", "pip install 'scifig[report]'") from None
    runs = [load_run(path, run_label(index)) for index, path in enumerate(args.runs)]
    for line in data_lines(runs, args.runs, args.allow_data_change):
        print(f"scifig compare: {line}", file=sys.stderr)
    comparison = compare_runs(runs, args.resamples, args.seed)
    comparison.names = [f"{run.model} ({path})" for run, path in zip(runs, args.runs, strict=True)]
    print(text_table(comparison))
    if args.json is not None:
        write_whole(args.json, json.dumps(comparison.as_json(), indent=1))
        print(f"json: {args.json}")
    if not comparison.compared:
        print("scifig compare: no task could be compared (the reasons are above)", file=sys.stderr)
        return 1
    return 0
