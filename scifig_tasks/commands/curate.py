"""``scifig curate BENCHMARK ...``: build a benchmark's data locally. Each registered benchmark whose description names
a ``curate`` reference (``"curation.<bench>.cli:register"``) adds its own sub-commands; the manual: docs/curation.md;
how a benchmark's commands plug in: docs/cli.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP, benchmark_titles, curate_commands, curated_benchmarks

DESCRIPTION = """\
Build a benchmark's data on this machine ({titles}), in the schema of the published Hugging Face dataset: each
benchmark's commands below generate it, curate it from source material or convert a published copy. Each command
ends by printing the variable that points the tasks at the result ({variables}) instead of the Hub."""
"""``{titles}``, ``{variables}``: of the benchmarks with a curate command (:func:`register`)."""

EPILOG = """\
examples:
  scifig curate grab --out grab-data --limit 40
  SCIFIG_GRAB_DATA=grab-data scifig eval --preset gpt-4o --tasks grab --output_path runs"""


def curate_variables() -> list[str]:
    """The variables ``scifig curate`` commands print (each curated benchmark's data sources that a curate command
    builds), in the registry's order."""
    found: list[str] = []
    for described in curated_benchmarks():
        for source in described.sources.values():
            if source.build_command and source.env_var not in found:
                found.append(source.env_var)
    return found


def register(commands: Any) -> None:
    """Add ``scifig curate`` and, under it, each curated benchmark's sub-commands (``register(subparsers)`` of its
    ``scifig.curate`` entry point: this package never imports ``curation`` by name)."""
    curated = curated_benchmarks()
    titles = benchmark_titles(curated)
    curate = commands.add_parser(
        "curate",
        help=HELP["curate"].format(titles=", ".join(titles)),
        description=DESCRIPTION.format(titles=", ".join(titles), variables=", ".join(curate_variables())),
        epilog=EPILOG,
    )
    benchmarks = curate.add_subparsers(dest="curate_command", required=True, metavar="BENCHMARK", title="benchmarks")
    for add in curate_commands().values():
        add(benchmarks)
    for parser in _leaves(curate):
        handler = parser.get_default("handler")
        if handler is not None:
            parser.set_defaults(handler=_with_absolute_paths(handler))


def _leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser``'s sub-commands, at every depth (``scifig curate charxiv_full import-published``), or ``parser``
    itself when it has none."""
    choices = [
        sub
        for action in parser._actions  # argparse keeps its sub-commands there
        if isinstance(action, argparse._SubParsersAction)
        for sub in dict.fromkeys(action.choices.values())  # an alias names the same parser again
    ]
    if not choices:
        yield parser
    for sub in choices:
        yield from _leaves(sub)


def _with_absolute_paths(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` given every path option (a :class:`~pathlib.Path`, or a list of them) as an absolute path, ``~``
    expanded: the lines a curate command prints — ``use SCIFIG_<BENCH>_DATA=...``, the files written, the next
    command — then hold paths that work pasted in any folder, and the command lines the builders record in their
    dataset cards reproduce the build from any folder."""

    @wraps(handler)
    def run(args: argparse.Namespace) -> int:
        for name, value in vars(args).items():
            if isinstance(value, Path):
                setattr(args, name, value.expanduser().absolute())
            elif isinstance(value, list) and value and all(isinstance(item, Path) for item in value):
                setattr(args, name, [item.expanduser().absolute() for item in value])
        return handler(args)

    return run
