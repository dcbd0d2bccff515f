"""How ``scifig ... --help`` is laid out, shared by every sub-command.

* :class:`HelpFormatter`: descriptions and epilogs are written as paragraphs; a paragraph of plain prose is wrapped to
  the terminal, a paragraph with an indented line (an example command, a list) is printed as written.
* :class:`Parser`: the ``scifig`` parser class; sub-parsers made with ``add_parser`` inherit it (argparse gives every
  ``add_subparsers`` group the class of its parent), so every sub-command gets the formatter.
* :class:`ForwardedHelp`: ``-h/--help`` of a command whose other arguments go to a framework unchanged (``scifig
  eval`` to lmms-eval, ``scifig vlmeval`` to VLMEvalKit): the command's own help, then the framework's options.
* :func:`error_line`: every command ends an error in one line, ``scifig COMMAND: what happened — what to do``
  (:class:`~scifig_tasks.core.errors.CommandError` for the mistakes a command finds itself).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from scifig_tasks.core.errors import CommandError


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Prose paragraphs wrapped, indented paragraphs (examples, lists) kept line by line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        blocks = []
        for block in textwrap.dedent(text).strip("\n").split("\n\n"):
            lines = block.splitlines()
            if any(line[:1].isspace() for line in lines):
                blocks.append("\n".join(indent + line for line in lines))
            else:
                blocks.append(
                    textwrap.fill(" ".join(block.split()), width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(blocks)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if isinstance(action, argparse._SubParsersAction):  # drop the bare "COMMAND" line above the command list
            text = text.split("\n", 1)[1]
        return text


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`HelpFormatter` unless told otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


class ForwardedHelp(argparse.Action):
    """``-h/--help`` that prints the command's help, then ``framework_help()``'s text, and exits 0."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str = argparse.SUPPRESS,
        default: Any = argparse.SUPPRESS,
        help: str | None = None,
        framework_help: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)
        self.framework_help = framework_help

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        parser.print_help()
        if self.framework_help is not None:
            print()
            print(self.framework_help())
        parser.exit()


def framework_help(framework: str, module: str, parser: str, prog: str, extra: str, given_to: str = "") -> str:
    """A framework's own option list under a heading (``module.parser()`` prints it), or how to install it."""
    import importlib

    heading = f"{framework} options (given to {given_to or prog} unchanged):"
    try:
        parse = getattr(importlib.import_module(module), parser)
    except ImportError as exc:
        return f"{heading}\n  {framework} is not installed here ({exc}): pip install 'scifig[{extra}]'"
    return f"{heading}\n\n{captured_help(parse, prog)}"


def captured_help(parse: Callable[[], Any], prog: str) -> str:
    """What a framework's own argument parser prints for ``--help``: ``parse()`` reads ``sys.argv``, prints its help
    and exits; the text is returned instead."""
    import io

    buffer = io.StringIO()
    with _argv([prog, "--help"]), contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        parse()
    return buffer.getvalue().rstrip()


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


_ADVICE = re.compile(
    r"(?:[;(—:]|\bor)\s*`?(?:set|run|use|give|pass|try|install|rerun|build|choose|see)\b", re.IGNORECASE
)
"""A message that already says what to do (``...; set SCIFIG_GRAB_DATA=DIR ...``) gets no generic advice added."""


def error_line(command: str, exc: BaseException) -> tuple[str, int]:
    """The one line ``scifig`` prints for an error that ended ``command``, and the exit status: ``scifig COMMAND:
    WHAT — TODO``. Known kinds (data, configuration, missing files, unknown names) say what to do; anything else is
    named by its type, with ``scifig --debug`` for the traceback."""
    from scifig_tasks.core.errors import ConfigError, DataError
    from scifig_tasks.core.run_files import is_run_file

    prefix = f"scifig {command}" if command else "scifig"
    if isinstance(exc, CommandError):
        return f"{prefix}: {_one_line(exc.what)}{f' — {exc.todo}' if exc.todo else ''}", exc.status
    what = _one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, DataError) and is_run_file(exc.origin):
        todo = "run the evaluation again, or restore the file from a copy of the run"
    elif isinstance(exc, DataError):
        todo = "fix the data it names, or build it again with scifig curate"
    elif isinstance(exc, ConfigError):
        todo = "fix the file or setting it names"
    elif isinstance(exc, FileNotFoundError | NotADirectoryError | IsADirectoryError):
        todo = "check the path"
    elif isinstance(exc, PermissionError):
        todo = "check that you may read or write that path"
    elif isinstance(exc, ValueError | LookupError):
        todo = f"see scifig {command} --help".replace("  ", " ")
    else:
        what = f"{type(exc).__name__}: {what}"
        todo = f"run scifig --debug {command} ... for the traceback".replace("  ", " ")
        return f"{prefix}: {what} — {todo}", 1
    if _ADVICE.search(what):
        return f"{prefix}: {what}", 1
    return f"{prefix}: {what} — {todo}", 1


def _one_line(text: str) -> str:
    return " ".join(text.split())
