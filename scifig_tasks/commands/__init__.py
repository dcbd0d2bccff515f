"""The ``scifig`` command line, one module per command: :mod:`~scifig_tasks.commands.main` builds the parser and
dispatches (``scifig = scifig_tasks.commands.main:main``); ``tasks``, ``compare``, ``rescore``, ``report``,
``vlmeval`` (with ``export-tsv``), ``presets``, ``doctor`` and ``config`` each register their sub-command;
:mod:`~scifig_tasks.commands.format` holds what every command shares (the parser class, help layout, the one-line
error boundary); :mod:`~scifig_tasks.commands.outputs` removes the empty output folders a failed command made.

Two commands register from their own package: ``export-upstream`` (:mod:`scifig_tasks.lmms_eval.export`, the
export itself) and ``finetune`` (``scifig_finetune.cli``, installed with the fine-tuning recipe).

:data:`COMMANDS` is the table of every sub-command: its name, the function that adds its parser and the one line
``scifig --help`` lists it with. A command imports its module only when it runs (or its ``--help`` is asked for):
``scifig --help``, ``--version`` and a mistyped command name are answered from this table alone
(:func:`scifig_tasks.commands.main.build_parser`; ``tests/cli/test_startup_imports.py`` holds each line equal to the
one its module registers).
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """One ``scifig`` sub-command."""

    name: str
    adds: str
    """``"module:function"``: ``function(commands)`` adds the command's parser (and those of the commands listed
    after it with the same ``adds``) to the ``add_subparsers`` group ``commands``."""
    help: str
    """Its line in ``scifig --help``; ``{titles}``: the titles of the benchmarks with a curate command."""


_MAIN = "scifig_tasks.commands.main"

COMMANDS: tuple[Command, ...] = (
    Command(
        "eval",
        f"{_MAIN}:_add_eval",
        "run lmms-eval with the scifig tasks; exit status 1 when any task or sample failed",
    ),
    Command(
        "demo",
        f"{_MAIN}:_add_demo",
        "offline demo: generate GRAB questions, score them through lmms-eval, write an HTML report",
    ),
    Command(
        "tasks",
        "scifig_tasks.commands.tasks:register",
        "list the tasks to run (lmms-eval and VLMEvalKit names, questions, paper table, protocol)",
    ),
    Command("curate", f"{_MAIN}:_add_curate", "build a benchmark's data locally ({titles})"),
    Command(
        "tasks-path",
        f"{_MAIN}:_add_tasks_path",
        "print the folder of the scifig lmms-eval tasks (for lmms-eval --include_path)",
    ),
    Command(
        "report",
        "scifig_tasks.commands.report:register",
        "tables and the papers' figures from evaluation results (HTML + Markdown)",
    ),
    Command(
        "compare",
        "scifig_tasks.commands.compare:register",
        "is one run better than another on the same questions? (paired test)",
    ),
    Command(
        "rescore",
        "scifig_tasks.commands.rescore:register",
        "score saved model outputs again with the current scorer (no model)",
    ),
    Command(
        "export-upstream",
        "scifig_tasks.lmms_eval.export:register",
        "write a self-contained lmms-eval task folder (lmms_eval/tasks/<bench>/) for upstream contribution",
    ),
    Command(
        "vlmeval",
        "scifig_tasks.commands.vlmeval:register",
        "run VLMEvalKit with the scifig datasets (options as for its run.py)",
    ),
    Command(
        "export-tsv", "scifig_tasks.commands.vlmeval:register", "write VLMEvalKit TSV files of the scifig datasets"
    ),
    Command(
        "presets", "scifig_tasks.commands.presets:register", "list the model presets (for scifig eval --preset NAME)"
    ),
    Command(
        "doctor",
        "scifig_tasks.commands.doctor:register",
        "check that this installation can run the benchmarks, and say how to fix what cannot",
    ),
    Command(
        "config",
        "scifig_tasks.commands.config:register",
        "print the effective settings (SCIFIG_* variables): value and where it came from",
    ),
    Command(
        "finetune",
        "scifig_finetune.cli:register",
        "LoRA fine-tuning of Qwen2-VL on curated data (the MMSci paper's recipe)",
    ),
    Command(
        "finetune-data",
        "scifig_finetune.cli:register",
        "convert curated data to the fine-tuning chat format (jsonl + images)",
    ),
)
"""Every ``scifig`` sub-command, in the order ``scifig --help`` lists them."""

HELP: dict[str, str] = {command.name: command.help for command in COMMANDS}
"""Command name -> its line in ``scifig --help``."""
