"""``scifig vlmeval`` and ``scifig export-tsv``.

* ``scifig vlmeval ARGS...`` registers the scifig dataset classes (:func:`scifig_tasks.vlmeval.register`) and runs
  VLMEvalKit's own runner (``vlmeval/run.py``'s ``main``) in this process with ``ARGS`` unchanged (``--data``,
  ``--model``, ``--config``, ``--work-dir``, ...). Differences from ``python run.py``: predictions are written as TSV
  unless ``PRED_FORMAT`` is set (exact text, no spreadsheet conversions); API keys and URL credentials
  (:mod:`scifig_tasks.core.secrets`) are masked in every log record and, after the run (also one that failed), in
  every file it wrote under the work dir: predictions, ``_scifig_records.jsonl``, scores, status, logs, pickles
  (VLMEvalKit logs the key of its OpenAI wrapper; a server echoing a key puts it in the model's replies); and the
  command exits non-zero when a requested dataset has no metrics (VLMEvalKit logs the failure and exits 0) or any
  sample could not be judged (its last line counts them per task, as ``scifig eval`` does).
* ``scifig export-tsv [--data NAME ...] [--out DIR]`` writes the VLMEvalKit TSV of each dataset (default: all, into
  VLMEvalKit's data folder ``$LMUData`` or ``~/LMUData``) from the Hub or the ``SCIFIG_*_DATA`` local data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scifig_tasks.core.secrets import declared, mask_files, mask_log_records, secrets_of
from scifig_tasks.vlmeval import tsv


class VlmevalFailed(RuntimeError):
    """VLMEvalKit finished without metrics for every requested dataset."""


KEY_OPTIONS = ("--key", "--judge-key")


def secrets(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What to mask (:mod:`scifig_tasks.core.secrets`): the environment's secrets, ``--key`` / ``--judge-key``
    values, the ``"key"`` / ``"api_key"`` entries of a ``--config`` file, and the credentials of a URL written in
    any argument (``--base-url``, ``--judge-base-url``) or config value (``"api_base"``)."""
    argv = list(argv)
    extra = {value for option in KEY_OPTIONS for value in _values(argv, option)}
    command_line = list(argv)
    for name in _values(argv, "--config"):
        if Path(name).is_file():
            config = json.loads(Path(name).read_text())
            extra |= set(_config_keys(config))
            command_line += list(_strings(config))
    return secrets_of(os.environ if environ is None else environ, extra, command_line)


def _values(argv: list[str], option: str) -> list[str]:
    """Every value of ``option`` in ``argv``, given as ``option VALUE`` or ``option=VALUE``."""
    found = [argv[index + 1] for index, arg in enumerate(argv[:-1]) if arg == option]
    return found + [arg.split("=", 1)[1] for arg in argv if arg.startswith(f"{option}=")]


def _config_keys(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for name, value in node.items():
            if name.lower() in ("key", "api_key") and isinstance(value, str):
                yield value
            else:
                yield from _config_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _config_keys(value)


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict | list):
        for value in node.values() if isinstance(node, dict) else node:
            yield from _strings(value)


def _work_dir(args: argparse.Namespace) -> Path:
    return Path(os.environ.get("MMEVAL_ROOT") or args.work_dir)


def _requested(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    if args.config:
        config = json.loads(Path(args.config).read_text())
        return list(config["model"]), list(config["data"])
    models = args.model if isinstance(args.model, list) else [args.model]
    return [model.replace("/", "--") if args.api_mode else model for model in models], list(args.data or [])


def _check(work_dir: Path, models: list[str], datasets: list[str], mode: str) -> list[str]:
    """Problems found in the run's ``status.json`` files: datasets without metrics, with errors or skipped."""
    problems = []
    for model in models:
        files = sorted((work_dir / model).rglob("status.json"), key=lambda path: path.stat().st_mtime)
        if not files:
            problems.append(f"{model}: no status.json under {work_dir / model}")
            continue
        status = json.loads(files[-1].read_text()).get("datasets", {})
        for name in datasets:
            entry = status.get(name)
            if entry is None:
                problems.append(f"{model} x {name}: not run")
            elif entry.get("error_message"):
                problems.append(f"{model} x {name}: {entry['error_message']}")
            elif mode == "infer":
                continue
            elif entry.get("skip_reason") or not entry.get("metrics"):
                problems.append(f"{model} x {name}: no metrics ({entry.get('skip_reason') or 'evaluation skipped'})")
    return problems


def judge_failures_since(work_dir: Path, started: float) -> dict[str, int]:
    """Samples the LLM judge could not score, per dataset, in the scores files written under ``work_dir`` since
    ``started`` (read as :mod:`scifig_tasks.report.runs` reads them, counted as ``scifig eval`` counts them)."""
    from scifig_tasks.core.judge import judge_failures
    from scifig_tasks.report.runs import SCORES_SUFFIX, load_runs

    written = [path for path in work_dir.rglob(f"*{SCORES_SUFFIX}") if path.stat().st_mtime >= started]
    failed: dict[str, int] = {}
    for run in load_runs(written) if written else []:
        for task, count in judge_failures({"results": run.entries}).items():
            failed[task] = failed.get(task, 0) + count
    return failed


def run_vlmeval(argv: Sequence[str]) -> dict[str, int]:
    """Register the scifig datasets and run VLMEvalKit's ``run.py`` main; raise :class:`VlmevalFailed` when a
    requested dataset has no metrics. Returns the samples the judge could not score, per task."""
    from scifig_tasks.vlmeval import register

    try:
        import vlmeval  # noqa: F401 -- imports torch and much more: only here
    except ImportError as exc:
        raise VlmevalFailed(f"VLMEvalKit is not installed ({exc}): pip install 'scifig[vlmeval]'") from None
    os.environ.setdefault("PRED_FORMAT", "tsv")
    masked = secrets(argv)
    mask_log_records(masked)
    register()
    import vlmeval.run as vlmeval_run

    saved, started, args = sys.argv, time.time() - 1.0, None  # file times may be rounded down
    sys.argv = ["run.py", *argv]
    try:
        with declared(masked):  # the judge cache and the records mask the command line's keys too
            args = vlmeval_run.parse_args()
            vlmeval_run.load_env()
            vlmeval_run.main()
    finally:
        sys.argv = saved
        if args is not None:  # every file the run wrote in its work dir: predictions, records, scores, logs, pickles
            mask_files(_work_dir(args), masked, since=started)
    work_dir = _work_dir(args)
    models, datasets = _requested(args)
    problems = _check(work_dir, models, datasets, args.mode)
    if problems:
        raise VlmevalFailed("; ".join(problems))
    return judge_failures_since(work_dir, started)


def _vlmeval(args: argparse.Namespace) -> int:
    try:
        failed = run_vlmeval(args.rest)
    except VlmevalFailed as exc:
        print(f"scifig vlmeval: FAILED: {exc}", file=sys.stderr)
        return 1
    if failed:
        from scifig_tasks.core.judge import failure_summary

        print(failure_summary("scifig vlmeval", failed), file=sys.stderr)
        return 1
    return 0


def _export(args: argparse.Namespace) -> int:
    out = args.out or tsv.lmu_data_root()
    for name in args.data or list(tsv.SPECS):
        path, count = tsv.write_tsv(name, out)
        print(f"{name}: {count} rows -> {path}")
    return 0


VLMEVAL_DESCRIPTION = """\
Run VLMEvalKit's own runner (its run.py) with the scifig datasets registered: SciFig_GRAB, SciFig_SciFIBench_*,
SciFig_PlotTwist*, SciFig_MMSCI_* (scifig export-tsv --help lists them all). The options are VLMEvalKit's, passed to
it unchanged (listed below).

Differences from running VLMEvalKit's run.py: predictions are written as TSV (exact text, no spreadsheet
conversions) unless PRED_FORMAT is set; API keys and the credentials of URLs (user:password@) are masked in its logs
and in every file it writes under the work dir (predictions, records, scores, status); the exit status is 1 when a
requested dataset ends without metrics (VLMEvalKit exits 0) or any sample could not be judged."""

VLMEVAL_EPILOG = """\
examples:
  scifig vlmeval --data SciFig_GRAB SciFig_PlotTwist --model Qwen2-VL-2B-Instruct --work-dir outputs
  scifig vlmeval --config my_models.json --work-dir outputs"""

EXPORT_TSV_DESCRIPTION = """\
Write the VLMEvalKit TSV file of each scifig dataset (questions, answers and images) into VLMEvalKit's data folder,
from the Hugging Face Hub or from the local data named by SCIFIG_<BENCH>_DATA. scifig vlmeval writes a missing file
itself; exporting first lets you inspect the files or copy them to a machine without network."""

EXPORT_TSV_EPILOG = """\
example:
  SCIFIG_GRAB_DATA=grab-data scifig export-tsv --data SciFig_GRAB --out ~/LMUData"""


def vlmeval_help() -> str:
    """VLMEvalKit's own runner options, under a heading (or how to install it)."""
    from scifig_tasks.cli_format import framework_help

    return framework_help("VLMEvalKit", "vlmeval.run", "parse_args", "run.py", "vlmeval", given_to="its run.py")


def register(commands: Any) -> None:
    """Add ``scifig vlmeval`` and ``scifig export-tsv`` to the ``scifig`` command line."""
    from scifig_tasks.cli_format import ForwardedHelp

    run = commands.add_parser(
        "vlmeval",
        help="run VLMEvalKit with the scifig datasets (options as for its run.py)",
        description=VLMEVAL_DESCRIPTION,
        epilog=VLMEVAL_EPILOG,
        usage="%(prog)s VLMEVALKIT_OPTION ...",
        add_help=False,
        allow_abbrev=False,
    )
    run.add_argument(
        "-h",
        "--help",
        action=ForwardedHelp,
        framework_help=vlmeval_help,
        help="show this help and VLMEvalKit's options",
    )
    run.set_defaults(handler=_vlmeval, passthrough=True)
    export = commands.add_parser(
        "export-tsv",
        help="write VLMEvalKit TSV files of the scifig datasets",
        description=EXPORT_TSV_DESCRIPTION,
        epilog=EXPORT_TSV_EPILOG,
    )
    export.add_argument(
        "--data",
        nargs="+",
        choices=list(tsv.SPECS),
        default=None,
        metavar="NAME",
        help=f"datasets (default: all): {', '.join(tsv.SPECS)}",
    )
    export.add_argument("--out", type=Path, default=None, help="output folder (default: $LMUData or ~/LMUData)")
    export.set_defaults(handler=_export)
