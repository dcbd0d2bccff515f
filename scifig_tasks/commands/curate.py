"""``scifig curate BENCHMARK ...``: build a benchmark's data locally. Each registered benchmark whose description names
a ``curate`` reference (``"curation.<bench>.cli:register"``) adds its own sub-commands; the manual: docs/curation.md;
how a benchmark's commands plug in: docs/cli.md.
"""

from __future__ import annotations

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
