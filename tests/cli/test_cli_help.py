"""``scifig --help`` and every sub-command's ``--help`` are written for users: exit 0, say what the command does,
give each option a help text and show an example; no reStructuredText markup and no names from inside the code.

``scifig eval --help`` and ``scifig vlmeval --help`` print their own help, then the options of the framework their
other arguments go to (lmms-eval's, VLMEvalKit's run.py's).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from scifig_tasks.commands import curated_benchmarks
from scifig_tasks.commands.main import build_parser, main
from scifig_tasks.core import registry
from tests.harness import warm_start

COMMANDS = [
    "eval",
    "demo",
    "tasks",
    "curate",
    "tasks-path",
    "report",
    "compare",
    "rescore",
    "export-upstream",
    "vlmeval",
    "export-tsv",
    "presets",
    "doctor",
    "config",
    "finetune",
    "finetune-data",
]
CURATE_COMMANDS = {
    "charxiv_full": ["charxiv_full"],
    "grab": ["grab"],
    "mmsci": ["mmsci", "mmsci-from-vlmeval", "mmsci-from-authors"],
    "plot_twist": ["plot-twist"],
    "scifibench": ["scifibench", "scifibench-accept", "scifibench-from-scicap"],
}
"""The documented ``scifig curate`` sub-commands of each benchmark."""
CURATED = [described.name for described in curated_benchmarks()]
"""The registered benchmarks with a curate command, in the registry's order (the order they are listed)."""
CURATE = [command for name in CURATED for command in CURATE_COMMANDS.get(name, [])]
ALL_HELP = [[], *([name] for name in COMMANDS), *(["curate", name] for name in CURATE)]
FORBIDDEN = ("``", ":func:", ":mod:", ":class:", ":data:", "handler", "COMMAND_MODULES", "CURATION_CLIS", "register(")
MODULE_PATH = re.compile(r"\b(scifig_tasks|scifig_finetune|curation\.(grab|scifibench|plot_twist|mmsci))\.\w")
FRAMEWORK_HEADINGS = ("lmms-eval options (given to lmms-eval unchanged):", "VLMEvalKit options (given to its run.py")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (group,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(group.choices)


def every_parser(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from every_parser(child, (*path, name))


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code in (0, None), argv
    return capsys.readouterr().out


def scifig_part(text: str) -> str:
    """The help scifig wrote: the framework's own option list, printed after it, is not scifig's text."""
    cut = min([text.index(heading) for heading in FRAMEWORK_HEADINGS if heading in text], default=len(text))
    return text[:cut]


def test_the_commands_are_the_documented_ones() -> None:
    parser = build_parser()
    assert list(subcommands(parser)) == COMMANDS
    assert sorted(CURATED) == sorted(CURATE_COMMANDS)  # every curated benchmark's commands are documented here
    assert list(subcommands(subcommands(parser)["curate"])) == CURATE


def test_every_option_and_command_has_a_help_text() -> None:
    missing = []
    for path, parser in every_parser(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{' '.join(path)} {choice.dest}" for choice in action._choices_actions if not choice.help]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
        if path:
            assert parser.description, f"scifig {' '.join(path)}: no description"
            assert parser.epilog, f"scifig {' '.join(path)}: no example"
    assert missing == []


@pytest.mark.parametrize("argv", ALL_HELP, ids=lambda argv: " ".join(argv) or "scifig")
@pytest.mark.cli
def test_help_speaks_to_users(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    text = help_of(argv, capsys)
    own = scifig_part(text)
    assert own.startswith(f"usage: scifig {' '.join(argv)}".rstrip())
    assert re.search(r"^examples?:\n  \S", own, re.MULTILINE), own
    assert [word for word in FORBIDDEN if word in own] == []
    assert MODULE_PATH.search(own) is None, MODULE_PATH.search(own)
    if argv == ["eval"]:
        assert "--preset NAME" in own and "--tasks TASKS" in text and "--model_args MODEL_ARGS" in text
    if argv == ["vlmeval"]:
        assert FRAMEWORK_HEADINGS[1] in text
        if importlib.util.find_spec("vlmeval") is not None:
            assert "--work-dir WORK_DIR" in text


@pytest.mark.slow
@pytest.mark.cli
def test_scifig_help_from_the_installed_command() -> None:
    scifig = Path(sys.executable).parent / "scifig"
    completed = warm_start.run([str(scifig), "--help"], {**os.environ, "COLUMNS": "100"}, timeout=120)
    assert completed.returncode == 0, completed.stderr
    text = completed.stdout
    assert text.startswith("usage: scifig [-h] [--version] [--debug] COMMAND ...\n\nScientific-figure benchmarks - ")
    titles = [described.title for described in registry.benchmarks().values()]
    benchmarks = f"{', '.join(titles[:-1])} and {titles[-1]}" if len(titles) > 1 else titles[0]
    assert f"Scientific-figure benchmarks - {benchmarks} - for lmms-eval and VLMEvalKit:" in " ".join(text.split())
    listed = re.findall(r"^    ([a-z-]+)(?: |$)", text, re.MULTILINE)
    assert listed == COMMANDS
    assert "  scifig demo --out scifig-demo " in text
    assert text.rstrip().endswith('Run "scifig COMMAND --help" for a command\'s options and an example.')
