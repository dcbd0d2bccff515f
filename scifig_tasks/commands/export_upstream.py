"""``scifig export-upstream``: a benchmark written into a framework's own repository, as its maintainers would merge
it: an lmms-eval checkout (:mod:`scifig_tasks.export.lmms_eval_folders`, the default) or a VLMEvalKit one
(:mod:`scifig_tasks.export.vlmeval_datasets`). Manual: docs/contributing-upstream.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scifig_tasks.core import registry

FRAMEWORKS = ("lmms-eval", "vlmeval")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "export-upstream",
        help="write a benchmark into an lmms-eval (or VLMEvalKit) checkout for upstream contribution",
        description=(
            "Write the benchmark into the framework's repository at OUT, working without scifig installed, in the "
            "framework's own style (its pre-commit formatters): for lmms-eval, lmms_eval/tasks/<bench>/ (the task "
            "folder) and lmms_eval/tasks/_task_utils/scifig/ (the scoring code every exported benchmark shares), "
            "loading data with plain lmms-eval (the Hub id, or local parquet files given with --data); for "
            "VLMEvalKit, vlmeval/dataset/scifig_<bench>.py (the dataset classes) and vlmeval/dataset/utils/scifig/."
        ),
        epilog=(
            "examples:\n"
            "  scifig export-upstream --bench grab --out ~/src/lmms-eval\n"
            "  scifig export-upstream --bench grab --out ~/src/lmms-eval --data grab-data/   "
            "# local data written by scifig curate grab\n"
            "  scifig export-upstream --framework vlmeval --bench grab --out ~/src/VLMEvalKit --data tsv/   "
            "# TSVs written by scifig export-tsv"
        ),
    )
    parser.add_argument("--bench", required=True, help=f"one of: {', '.join(registry.benchmarks())}")
    parser.add_argument("--out", type=Path, required=True, help="the framework's checkout (or an empty folder)")
    parser.add_argument("--framework", choices=FRAMEWORKS, default="lmms-eval", help="whose repository (lmms-eval)")
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="[SOURCE=]PATH",
        help="lmms-eval: a local parquet file or folder of <split>.parquet written into the YAMLs as data_files "
        "(SOURCE defaults to the benchmark, e.g. plot_twist_chartqa=chartqa.parquet); VLMEvalKit: a folder of "
        "<dataset>.tsv files (or one file) whose MD5s the classes record",
    )
    parser.set_defaults(handler=_run)


def _data_args(values: Iterable[str], bench: str) -> dict[str, Path]:
    parsed = {}
    for value in values:
        name, sep, path = value.partition("=")
        parsed[name if sep else bench] = Path(path if sep else value)
    return parsed


def _run(args: argparse.Namespace) -> int:
    if args.framework == "vlmeval":
        from scifig_tasks.export.vlmeval_datasets import export_vlmeval

        if len(args.data) > 1:
            raise SystemExit("scifig export-upstream: --framework vlmeval takes one --data (a folder of TSVs)")
        exported = export_vlmeval(args.bench, args.out, Path(args.data[0]) if args.data else None)
        print("\n".join(exported.lines()))
        return 0
    from scifig_tasks.export.lmms_eval_folders import HOOKS, export, python_lines
    from scifig_tasks.export.style import LMMS_EVAL

    done = export(args.bench, args.out, _data_args(args.data, args.bench))
    print(f"exported {args.bench} to {done.folder} ({python_lines(done.folder)} Python lines)")
    print(f"shared code: {done.shared} ({python_lines(done.shared)} Python lines, all exported benchmarks)")
    for name, rule in done.questions.items():
        print(f"questions per row of {name}: {rule}, applied by {HOOKS.format(bench=args.bench)}.py")
    if done.judged:
        print(f"need an LLM judge (refused before any request without one): {', '.join(done.judged)}")
    for name, splits in done.data_files.items():
        for split, path in splits.items():
            print(f"data {name} {split}: {path}")
    pins = ", ".join(f"{name} {version}" for name, version in LMMS_EVAL.pins.items())
    print(f"formatted as lmms-eval's pre-commit configuration formats ({pins})")
    return 0
