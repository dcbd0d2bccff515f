"""A ``scifig`` command imports what it uses: ``scifig --version``, ``--help``, ``tasks`` and ``config`` import no
data, model or framework library (``datasets``, ``pyarrow``, ``torch``, ``lmms_eval``, the ``openai`` SDK) and not
``curation``; the parser lists every other command from the table of commands
(:data:`scifig_tasks.commands.COMMANDS`), whose lines and help must be those the commands' own modules register.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

import pytest

from scifig_tasks.commands import COMMANDS
from scifig_tasks.commands.main import build_parser

HEAVY = ("datasets", "pyarrow", "pandas", "torch", "lmms_eval", "openai", "curation", "numpy", "PIL")
"""Top-level packages none of the light commands may import."""
LIGHT = (["--version"], ["--help"], ["tasks"], ["config"], ["taks"])
"""Commands answered without importing any of :data:`HEAVY` (``taks``: a mistyped command name)."""

_PROBE = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from scifig_tasks.commands.main import main

    for argv in json.loads(sys.argv[1]):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                main(argv)
            except SystemExit:
                pass
    print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
    """
)


def test_light_commands_import_no_heavy_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(LIGHT)], capture_output=True, text=True, timeout=60, check=True
    )
    imported = set(json.loads(done.stdout))
    assert "scifig_tasks" in imported  # the probe ran the commands
    assert sorted(imported.intersection(HEAVY)) == []


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (group,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(group.choices)


def test_the_table_of_commands_is_what_the_modules_register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    full = build_parser()
    assert [command.name for command in COMMANDS] == list(_subcommands(full))
    assert build_parser(full=()).format_help() == full.format_help()  # scifig --help: every line from the table
    for command in COMMANDS:  # scifig COMMAND --help: the command's own parser, in full
        alone = _subcommands(build_parser(full={command.name}))[command.name]
        assert alone.format_help() == _subcommands(full)[command.name].format_help(), command.name
