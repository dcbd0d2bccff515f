"""The ``scifig`` command line, one module per command: :mod:`~scifig_tasks.commands.main` builds the parser and
dispatches (``scifig = scifig_tasks.commands.main:main``); :data:`COMMANDS` is the table of every sub-command, from
which ``scifig --help`` is answered without importing any command's module. How it fits together: docs/cli.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from scifig_tasks.core.benchmark import Benchmark


class Command(NamedTuple):
    """One ``scifig`` sub-command."""

    name: str
    adds: str
    """``"module:function"``: ``function(commands)`` adds the command's parser (and those of the commands listed
    after it with the same ``adds``) to the ``add_subparsers`` group ``commands``."""
    help: str
    """Its line in ``scifig --help``; ``{titles}``: the titles of the benchmarks with a curate command."""


COMMANDS: tuple[Command, ...] = (
    Command(
        "eval",
        "scifig_tasks.commands.eval:register",
        "run lmms-eval with the scifig tasks; exit status 1 when any task or sample failed",
    ),
    Command(
        "demo",
        "scifig_tasks.commands.demo:register",
        "offline demo: generate GRAB questions, score them through lmms-eval, write an HTML report",
    ),
    Command(
        "tasks",
        "scifig_tasks.commands.tasks:register",
        "list the tasks to run (lmms-eval and VLMEvalKit names, questions, paper table, protocol)",
    ),
    Command("curate", "scifig_tasks.commands.curate:register", "build a benchmark's data locally ({titles})"),
    Command(
        "tasks-path",
        "scifig_tasks.commands.tasks_path:register",
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
        "scifig_tasks.commands.export_upstream:register",
        "write a benchmark into an lmms-eval (or VLMEvalKit) checkout for upstream contribution",
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


CURATE_GROUP = "scifig.curate"
"""The entry-point group of ``scifig curate`` sub-commands: a benchmark's name -> its ``register(subparsers)``."""


def curate_commands() -> dict[str, Callable[[Any], Any]]:
    """Benchmark name -> the function adding its ``scifig curate`` sub-commands (its ``scifig.curate`` entry point,
    loaded now; the deprecated ``curate`` reference of its description when it has none)."""
    from importlib.metadata import entry_points

    from scifig_tasks.core import registry
    from scifig_tasks.core.deprecation import warn_once

    points = {point.name: point for point in entry_points(group=CURATE_GROUP)}
    found: dict[str, Callable[[Any], Any]] = {}
    for described in curated_benchmarks():
        if described.name in points:
            found[described.name] = points[described.name].load()
        else:
            warn_once(f"{described.name}'s curate= reference", f'register it as a "{CURATE_GROUP}" entry point')
            found[described.name] = registry.load_reference(described.curate)
    return found


def curated_benchmarks() -> list[Benchmark]:
    """The registered benchmarks with ``scifig curate`` sub-commands (a ``scifig.curate`` entry point of their name),
    in the registry's name order: the order those sub-commands are listed."""
    from importlib.metadata import entry_points

    from scifig_tasks.core import registry

    named = {point.name for point in entry_points(group=CURATE_GROUP)}
    return [described for name, described in registry.benchmarks().items() if name in named or described.curate]


def benchmark_titles(benchmarks: Iterable[Benchmark] | None = None) -> list[str]:
    """The titles of ``benchmarks`` (default: every registered one), in the registry's name order."""
    from scifig_tasks.core import registry

    chosen = registry.benchmarks().values() if benchmarks is None else benchmarks
    return [described.title for described in chosen]
