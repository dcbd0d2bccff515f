"""``scifig rescore RUN... --out DIR``: score a finished run's saved outputs again with the current scorer, without
calling the model, and list what changed (readers: :mod:`scifig_tasks.lmms_eval.rescore`,
:mod:`scifig_tasks.vlmeval.rescore`; report: :mod:`scifig_tasks.rescore_report`).

Manual: docs/reports.md, "Re-scoring saved outputs" and "How a run is re-scored".
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.core import judge, settings
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.run_files import RESULTS_SUFFIX
from scifig_tasks.core.scoring_protocol import PROTOCOLS, Protocol, rescoring_as
from scifig_tasks.core.secrets import masked_output
from scifig_tasks.lmms_eval.rescore import rescore_lmms
from scifig_tasks.rescore_report import (
    DIFF_FILE,
    RescoredRun,
    RescoreRefused,
    dry_run_lines,
    other_changes_line,
    summary,
    write_diffs,
)
from scifig_tasks.vlmeval.rescore import prediction_files, rescore_vlmeval


def checked_protocol(value: str | None) -> Protocol | None:
    """``--protocol``: every task scores as its ``value`` twin would (None: each task with its own protocol)."""
    if value is None:
        return None
    if value not in PROTOCOLS:
        raise RescoreRefused(f"--protocol {value!r}: choose one of {', '.join(PROTOCOLS)}")
    return value  # type: ignore[return-value]


def find_runs(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str, str]]]:
    """lmms-eval results files and VLMEvalKit prediction files named by, or found under, ``paths``."""
    results: list[Path] = []
    predictions: list[tuple[Path, str, str]] = []
    for path in paths:
        if path.is_file() and path.name.endswith(RESULTS_SUFFIX):
            results.append(path)
        elif path.is_file():
            found = prediction_files(path.parent)
            match = [entry for entry in found if entry[0] == path]
            if not match:
                raise RescoreRefused(
                    f"{path}: neither an lmms-eval *{RESULTS_SUFFIX} nor a scifig VLMEvalKit prediction file"
                )
            predictions += match
        elif path.is_dir():
            results += sorted(path.rglob(f"*{RESULTS_SUFFIX}"))
            predictions += prediction_files(path)
        else:
            raise RescoreRefused(f"{path}: no such file or directory")
    if not results and not predictions:
        where = ", ".join(str(path) for path in paths)
        raise RescoreRefused(f"no lmms-eval *{RESULTS_SUFFIX} or VLMEvalKit prediction file under {where}")
    return results, predictions


def rescore(
    paths: Sequence[Path],
    out: Path,
    protocol: str | None = None,
    tasks: Sequence[str] | None = None,
    allow_partial: bool = False,
    dry: bool = False,
) -> list[RescoredRun]:
    """Score every run under ``paths`` again into ``out``; return what was written and the differences. Damaged
    logs are refused unless ``allow_partial``. ``dry``: send no judge request and write nothing; each run's
    ``judge_usage`` says what re-scoring would send (:func:`scifig_tasks.rescore_report.dry_run_lines`)."""
    chosen = checked_protocol(protocol)
    results, predictions = find_runs(paths)
    _refuse_without_judge(results, predictions, tasks, chosen)
    with rescoring_as(chosen), judge.dry_run() if dry else _nothing():
        runs = [rescore_lmms(path, out, tasks, chosen, allow_partial=allow_partial, dry=dry) for path in results]
        for path, model, dataset in predictions:
            if tasks and dataset not in tasks:
                continue
            runs.append(rescore_vlmeval(path, model, dataset, out, allow_partial, dry=dry))
    if not dry:
        write_diffs(runs)
    return runs


def _refuse_without_judge(
    results: Sequence[Path],
    predictions: Sequence[tuple[Path, str, str]],
    tasks: Sequence[str] | None,
    protocol: Protocol | None,
) -> None:
    """Refuse, before anything is scored, tasks that cannot be scored without the LLM judge under ``protocol`` when
    none is configured (:func:`scifig_tasks.core.judge.required.judge_refusal`; said as ``scifig eval`` says it)."""
    from scifig_tasks.core.errors import CommandError
    from scifig_tasks.core.judge.required import judge_refusal
    from scifig_tasks.lmms_eval.rescore import selected_tasks

    if judge.configured_concurrency() is not None:
        return
    names = [name for path in results for name in selected_tasks(path, tasks)]
    names += [dataset for _, _, dataset in predictions if not tasks or dataset in tasks]
    refused = judge_refusal(names, protocol, available=False)
    if refused is not None:
        if protocol:  # the tasks as the protocol scores them
            from scifig_tasks.core.judged_hooks import JudgeRequired

            named = JudgeRequired([f"{name} (--protocol {protocol})" for name in refused.tasks])
            raise CommandError(named.what, f"{refused.todo}, or re-score without --protocol {protocol}", status=1)
        raise CommandError(refused.what, refused.todo, status=1)


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def _quiet_lmms_eval() -> None:
    """lmms-eval logs every task folder it indexes at DEBUG level: keep its warnings only."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def _refusal_lines(exc: Exception) -> list[str]:
    """The lines of a refusal: a damaged run file (a :class:`DataError` naming a results, samples, scores or records
    file) says what to do as every command does (:func:`scifig_tasks.commands.format.error_line`); a refusal of
    re-scoring says it itself."""
    from scifig_tasks.commands.format import error_line
    from scifig_tasks.core.run_files import is_run_file

    if isinstance(exc, DataError) and is_run_file(exc.origin):
        return [error_line("rescore", exc)[0].removeprefix("scifig rescore: ")]
    return str(exc).splitlines()


def _command(args: argparse.Namespace) -> int:
    with masked_output(settings.process_secrets(), args.out):  # the logs it copies may hold a key a server echoed
        return _rescore_command(args)


def _rescore_command(args: argparse.Namespace) -> int:
    _quiet_lmms_eval()
    tasks = [name for name in (args.tasks or "").split(",") if name] or None
    if args.out is None and not args.dry_run:
        print("scifig rescore: error: --out is required (except with --dry-run)", file=sys.stderr)
        return 2
    try:
        runs = rescore(args.runs, args.out or Path("."), args.protocol, tasks, args.allow_partial, dry=args.dry_run)
    except (RescoreRefused, DataError) as exc:
        for line in _refusal_lines(exc):
            print(f"scifig rescore: REFUSED: {line}", file=sys.stderr)
        return 1
    if args.dry_run:
        print("\n".join(dry_run_lines(runs)))
        return 0
    print(summary(runs))
    other = other_changes_line(runs)
    if other is not None:
        print(other)
    for run in runs:
        if run.judge_usage is not None:
            total = run.judge_usage["total"]
            print(f"judge for {run.source}: {judge.usage_words(total, priced=run.judge_usage['priced'])}")
    for run in runs:
        print(f"{run.source} -> {run.model_dir}")
    for run in runs:
        line = run.data_line()
        if line is not None:
            print(f"scifig rescore: DATA: {line}", file=sys.stderr)
    for run in runs:
        if run.environment_changes:
            print(
                f"scifig rescore: WARNING: {run.source} was scored in another environment: "
                + "; ".join(run.environment_changes),
                file=sys.stderr,
            )
    print(f"differences: {', '.join(str(run.model_dir / DIFF_FILE) for run in runs[:1])}" if runs else "")
    partial = [line for run in runs for line in run.partial]
    for line in partial:
        print(f"scifig rescore: PARTIAL: {line}", file=sys.stderr)
    absent = _judge_absent(runs)
    if absent:
        print(judge.absent_summary("scifig rescore", absent), file=sys.stderr)
    failed = {task: count for run in runs for task, count in run.judge_failed.items()}
    if failed:
        from scifig_tasks.core.judge import failure_summary

        print(failure_summary("scifig rescore", failed), file=sys.stderr)
    return 1 if failed or partial or absent else 0


def _judge_absent(runs: Sequence[RescoredRun]) -> dict[str, int]:
    """Outputs that needed the LLM judge when none was configured, per task, in the files re-scoring wrote
    (:func:`scifig_tasks.core.judge.judge_absent`)."""
    import json

    from scifig_tasks.commands.vlmeval import scores_as_results
    from scifig_tasks.core.run_files import SCORES_SUFFIX

    absent: dict[str, int] = {}
    for run in runs:
        for path in run.written:
            if path.name.endswith(RESULTS_SUFFIX):
                results: dict[str, Any] | None = json.loads(path.read_text(encoding="utf-8"))
            elif path.name.endswith(SCORES_SUFFIX):
                results = scores_as_results(json.loads(path.read_text(encoding="utf-8")))
            else:
                continue
            for task, count in judge.judge_absent(results or {}).items():
                absent[task] = absent.get(task, 0) + count
    return absent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scifig rescore")
    _arguments(parser)
    return _command(parser.parse_args(argv))


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="RUN",
        help="lmms-eval output folder or results file, or VLMEvalKit work dir",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the re-scored run and rescore_diff.json (required)"
    )
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="score every task as its plain-name (default) or _paper twin would; default: each task's own",
    )
    parser.add_argument("--tasks", default=None, help="comma-separated tasks or groups of the run (default: all)")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="score a damaged log (samples missing or repeated) from what is there; the tables say n and "
        '"partial", and the exit status is 1',
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="send no judge request and write nothing: say how many judge requests re-scoring would send and how "
        "many the judge cache already answers",
    )


DESCRIPTION = """\
Score a finished run again from its saved model outputs, without calling the model: after the scorer changed, or to
read a run under the other protocol (--protocol paper: as the _paper tasks score, e.g. SciFIBench sends every output
to the LLM judge). Reads lmms-eval runs written with --log_samples and VLMEvalKit work dirs; the data must be the data
the run used (same SCIFIG_<BENCH>_DATA or Hub dataset), and an LLM judge, when a protocol needs one, is the one set
by SCIFIG_JUDGE_*.

Writes the re-scored run in the framework's own format under OUT/<model>/ (readable by scifig report) and
OUT/<model>/rescore_diff.json: each task's headline metrics before and after and every sample whose record
changed. The table counts the changed verdicts (the score each sample's rule gave); one line says what else changed
in the records (the rule or protocol named, the answer read, fields added). A samples file that lacks or repeats
documents the results file counts is refused, naming the file and the doc ids; --allow-partial scores what is there,
marked partial (exit status 1)."""

EPILOG = """\
examples:
  scifig rescore runs --out rescored
  scifig rescore runs --out rescored-paper --protocol paper --tasks scifibench
  scifig rescore --dry-run runs --protocol paper   # judge requests it would send, nothing sent
  scifig report rescored --out report"""


def register(commands: Any) -> None:
    """Add ``scifig rescore`` to the ``scifig`` command line."""
    parser = commands.add_parser(
        "rescore",
        help=HELP["rescore"],
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    _arguments(parser)
    parser.set_defaults(handler=_command)
