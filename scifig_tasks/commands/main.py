"""The ``scifig`` command (the console script ``scifig = scifig_tasks.commands.main:main``): the parser, built from
the table of commands (:data:`scifig_tasks.commands.COMMANDS`) with only the chosen command in full, and the dispatch
to that command's handler, the one-line error boundary. Each command lives in its own module; docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence
from typing import Any

from scifig_tasks.commands import COMMANDS, benchmark_titles, curated_benchmarks
from scifig_tasks.lmms_eval.deferred_imports import defer_unused_at_start


def in_words(items: Sequence[str]) -> str:
    """``a, b and c`` (``a`` for one item, empty for none)."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


DESCRIPTION = """\
Scientific-figure benchmarks - {titles} - for lmms-eval and VLMEvalKit: evaluate a model, build or extend the
benchmarks' data, report results with the papers' figures, fine-tune a model on curated data."""
"""``{titles}``: the registered benchmarks' titles (:func:`build_parser`)."""

EPILOG = """\
examples:
  scifig demo --out scifig-demo         offline, no model weights: generate GRAB, score it, write a report
  scifig presets                        the model presets
  scifig eval --preset gpt-4o --tasks grab,scifibench --output_path runs --log_samples
  scifig report runs --out report       tables and the papers' figures: report/report.html

Run "scifig COMMAND --help" for a command's options and an example."""


def version_line() -> str:
    """``scifig 0.2.0`` plus the checkout's commit when run from one."""
    from scifig_tasks.core.provenance import checkout, scifig_version

    commit, modified = checkout()
    where = f" (commit {commit[:12]}{', modified' if modified else ''})" if commit else ""
    return f"scifig {scifig_version()}{where}"


def build_parser(full: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``scifig`` parser: every sub-command in full, or (``full`` given) only the commands named in ``full``,
    the others listed by name and help line alone (:data:`~scifig_tasks.commands.COMMANDS`), so that their modules
    are not imported. ``scifig --help`` prints the same text either way."""
    import importlib

    from scifig_tasks.commands.format import Parser

    description = DESCRIPTION.format(titles=in_words(benchmark_titles()))
    parser = Parser(prog="scifig", description=description, epilog=EPILOG)
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "--debug", action="store_true", help="on an error, print the traceback instead of the one-line message"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    built = {command.adds for command in COMMANDS if full is None or command.name in full}
    added: set[str] = set()
    for command in COMMANDS:
        if command.adds not in built:
            titles = ", ".join(benchmark_titles(curated_benchmarks())) if "{titles}" in command.help else ""
            commands.add_parser(command.name, help=command.help.format(titles=titles))
        elif command.adds not in added:  # one function may add several commands (vlmeval and export-tsv)
            added.add(command.adds)
            module, _, function = command.adds.partition(":")
            getattr(importlib.import_module(module), function)(commands)
    return parser


class _Version(argparse._VersionAction):
    """``--version``: argparse's own, the line made only when it is asked for (it runs ``git``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        self.version = version_line()
        super().__call__(parser, namespace, values, option)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first argument that is not an option (the global options take no
    value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``scifig`` command; the error boundary: an error ends the command in one line on stderr (the traceback
    under ``--debug``) and a non-zero exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    defer_unused_at_start()
    chosen = chosen_command(argv)
    parser = build_parser(full=[chosen] if chosen else [])
    args, rest = parser.parse_known_args(argv)
    command = " ".join(filter(None, (args.command, getattr(args, "curate_command", None))))
    try:
        return _run(parser, args, rest)
    except KeyboardInterrupt:
        print(f"scifig {command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        from scifig_tasks.commands.format import error_line

        line, status = error_line(command, exc)
        print(line, file=sys.stderr)
        return status


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, rest: list[str]) -> int:
    if rest and not getattr(args, "passthrough", False):
        parser.error(f"unrecognised arguments: {' '.join(rest)}")
    args.rest = rest
    from scifig_tasks.commands.outputs import run_handler  # a failed command removes the empty folders it made

    return run_handler(args.handler, args)


if __name__ == "__main__":
    sys.exit(main())
