"""The frameworks' own code style, applied to everything an export writes, with the formatters and versions their
``.pre-commit-config.yaml`` pins (the ``export`` extra installs them):

* lmms-eval (the repository's ``.pre-commit-config.yaml``, unchanged from v0.7 to the main branch of December 2026):
  black 25.1.0 with ``--line-length=240``, then isort 6.0.1 with ``--profile black``; ``lmms_eval`` is its
  first-party package (isort finds it as the folder at the repository root).
* VLMEvalKit (``.pre-commit-config.yaml`` and ``setup.cfg`` of its repository, December 2026): isort 6.0.1 with the
  ``[isort]`` section of its ``setup.cfg``, yapf 0.43.0 with ``--style={column_limit=120}``, checked by flake8 7.1.2
  with ``--max-line-length=120 --ignore=W503``.

:func:`check_versions` refuses other versions: formatters change their output between releases, and a folder
formatted by another version fails the framework's pre-commit check. VLMEvalKit's three tools disagree on some code,
so its style also settles what they leave (:attr:`Style.settle`): :data:`VLMEVAL`'s ``format`` alone gives files that
pass its flake8, isort and yapf unchanged.
"""

from __future__ import annotations

import ast
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.export.vendoring import ExportError


@dataclass(frozen=True)
class Style:
    """One framework's pre-commit formatting: the pinned tools and their settings."""

    framework: str
    pins: Mapping[str, str]
    """Distribution -> the version the framework's pre-commit configuration pins."""
    isort: Mapping[str, Any] = field(default_factory=dict)
    black_line_length: int | None = None
    yapf_style: str | None = None
    flake8_args: tuple[str, ...] = ()
    """The arguments the framework's pre-commit gives flake8 (``--max-line-length``, ``--ignore``)."""
    settle: bool = False
    """Whether :meth:`format` makes its output pass the framework's flake8, isort and yapf unchanged, where they
    disagree (:func:`_settled`): VLMEvalKit's pre-commit runs all three, and its yapf undoes what its isort and flake8
    want on some code."""

    @property
    def line_limit(self) -> int:
        """flake8's ``--max-line-length`` (79, flake8's own, when not given)."""
        return int(self._flake8_option("max-line-length") or 79)

    @property
    def flake8_ignore(self) -> tuple[str, ...]:
        """flake8's ``--ignore`` codes."""
        return tuple(code for code in (self._flake8_option("ignore") or "").split(",") if code)

    def _flake8_option(self, name: str) -> str | None:
        for argument in self.flake8_args:
            option, _, value = argument.partition("=")
            if option == f"--{name}":
                return value
        return None

    def check_versions(self) -> None:
        """Each pinned tool installed at its pinned version, else one line saying what to install."""
        wrong = []
        for name, version in self.pins.items():
            try:
                found = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                found = None
            if found != version:
                wrong.append(f"{name}=={version} (found {found or 'none'})")
        if wrong:
            wanted = " ".join(f"{name}=={version}" for name, version in self.pins.items())
            raise ExportError(
                f"{self.framework}'s pre-commit formatting needs {', '.join(wrong)}: "
                f'pip install "scifig[export]" (or: pip install {wanted})'
            )

    def format(self, text: str, path: Path) -> str:
        """``text`` formatted as the framework's pre-commit hooks leave it (run twice: the result is their fixed
        point; with :attr:`settle`, run once and settled, which ends where all its tools leave the text unchanged);
        ``path`` names the file in an error. A text already formatted in this process is not formatted again
        (exporting several benchmarks formats the shared core once)."""
        key = (self.framework, text)
        if key not in _FORMATTED:
            if self.settle:
                formatted = _settled(self, text, path)
            else:
                formatted = text
                for _ in range(2):
                    formatted = self._once(formatted, path)
            _FORMATTED[key] = formatted
        return _FORMATTED[key]

    def _once(self, text: str, path: Path) -> str:
        import isort

        if self.black_line_length is not None:
            import black

            try:
                text = black.format_str(text, mode=black.Mode(line_length=self.black_line_length))
            except black.InvalidInput as exc:
                raise ExportError(f"{path}: black cannot parse it: {exc}") from None
        text = isort.code(text, **self.isort)
        if self.yapf_style is not None:
            from yapf.yapflib.yapf_api import FormatCode

            text, _ = FormatCode(text, style_config=self.yapf_style)
        return text


_FORMATTED: dict[tuple[str, str], str] = {}


LMMS_EVAL = Style(
    framework="lmms-eval",
    pins={"black": "25.1.0", "isort": "6.0.1"},
    isort={"profile": "black", "known_first_party": ["lmms_eval"]},
    black_line_length=240,
)

VLMEVAL_ISORT = {
    "line_length": 99,
    "multi_line_output": 0,
    "known_first_party": ["vlmeval"],
    "no_lines_before": ["STDLIB", "LOCALFOLDER"],
    "sections": ["FUTURE", "STDLIB", "THIRDPARTY", "FIRSTPARTY", "LOCALFOLDER"],
}
"""The ``[isort]`` section of VLMEvalKit's ``setup.cfg``."""

VLMEVAL = Style(
    framework="VLMEvalKit",
    pins={"isort": "6.0.1", "yapf": "0.43.0", "flake8": "7.1.2"},
    isort=VLMEVAL_ISORT,
    yapf_style="{based_on_style: pep8, column_limit: 120}",
    flake8_args=("--max-line-length=120", "--ignore=W503"),
    settle=True,
)


def replace_lines(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with lines ``start..end`` (1-based, inclusive) of each edit replaced by its text."""
    lines = text.splitlines(keepends=True)
    for start, end, new in sorted(edits, reverse=True):
        lines[start - 1 : end] = [new]
    return "".join(lines)


# ---- settling what VLMEvalKit's flake8, isort and yapf disagree on --------------------------------------------------

YAPF_OFF, YAPF_ON = "# yapf: disable", "# yapf: enable"
SETTLE_ROUNDS = 4


def _style_problems(text: str, style: Style) -> list[tuple[int, str]]:
    """``(line, code)`` of each complaint of pycodestyle (flake8's E/W checks) as the framework's pre-commit runs
    flake8 (VLMEvalKit: ``--max-line-length=120 --ignore=W503``, which also drops pycodestyle's default ignore
    list)."""
    import pycodestyle

    found: list[tuple[int, str]] = []

    class Report(pycodestyle.BaseReport):
        def error(self, line_number: int, offset: int, message: str, check: Any) -> str | None:
            code = message[:4]
            if code not in self.expected and not self._ignore_code(code):
                found.append((line_number, code))
            return code

    guide = pycodestyle.StyleGuide(max_line_length=style.line_limit, ignore=list(style.flake8_ignore), quiet=True)
    checker = pycodestyle.Checker(
        lines=text.splitlines(keepends=True), options=guide.options, report=Report(guide.options)
    )
    checker.check_all()
    return found


def _prose_lines(tree: ast.Module) -> set[int]:
    """The lines of statement-level strings (docstrings: text no code reads)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            assert node.end_lineno is not None
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def _wrapped(line: str, comment: bool, limit: int) -> list[str]:
    """A prose or full-line comment line of more than ``limit`` columns, broken at spaces (the continuation indented as
    the line; a comment's continuation is a comment)."""
    indent = line[: len(line) - len(line.lstrip())]
    lead = indent + ("# " if comment else "")
    found, rest = [], line
    while len(rest) > limit:
        cut = rest.rfind(" ", len(lead) + 1, limit + 1)
        if cut <= len(lead):
            break
        found.append(rest[:cut].rstrip())
        rest = lead + rest[cut + 1 :]
    return [*found, rest]


def _statements(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _span(node: ast.stmt) -> tuple[int, int]:
    """The lines of a simple statement, or of a compound statement's header."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return node.lineno, body[0].lineno - 1
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        return start, node.body[0].lineno - 1
    assert node.end_lineno is not None
    return node.lineno, node.end_lineno


def _settled(style: Style, text: str, path: Path) -> str:
    """``text`` formatted once by ``style``'s isort and yapf, then made to pass its flake8, isort and yapf unchanged.
    VLMEvalKit's isort (99 columns) and yapf (120 columns) wrap a long import differently, and yapf's pep8 style leaves
    what its flake8 (``--ignore=W503``, so W504, E125 and E226 apply) refuses; each such statement keeps the layout
    isort gives it (for an import) or its source's, between ``# yapf: disable`` / ``# yapf: enable``. Docstring and
    comment lines longer than the line limit (renaming the modules made them so) are broken at spaces, and a long
    string literal is split into two adjacent literals. Raises :class:`ExportError` naming the line when the three
    still disagree."""
    import isort
    from yapf.yapflib.yapf_api import FormatCode

    assert style.yapf_style is not None
    limit, tools = style.line_limit, f"{style.framework}'s flake8, isort and yapf"
    source = isort.code(isort.code(text, **style.isort), **style.isort)
    original = source.splitlines(keepends=True)
    kept = _statements(ast.parse(source))
    text = style._once(text, path)
    for _ in range(SETTLE_ROUNDS):
        tree = ast.parse(text)
        prose = _prose_lines(tree)
        lines = text.splitlines(keepends=True)
        long_imports = {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and (node.end_lineno != node.lineno or " import (" in lines[node.lineno - 1])
            and not _off(lines, node.lineno)
        }
        problems = {line for line, _ in _style_problems(text, style)} | long_imports
        if (
            not problems
            and isort.check_code(text, **style.isort)
            and FormatCode(text, style_config=style.yapf_style)[0] == text
        ):
            return text
        edits: list[tuple[int, int, str]] = []
        taken: set[int] = set()
        for number in sorted(problems):
            line = lines[number - 1].rstrip("\n")
            comment = line.lstrip().startswith("#")
            if (number in prose or comment) and len(line) > limit:
                edits.append((number, number, "".join(f"{part}\n" for part in _wrapped(line, comment, limit))))
                continue
            index, node = _innermost(_statements(tree), number)
            if _disabled(lines, number):  # already the source's layout: only a long string is left to break
                split = _split_string(line, limit) if len(line) > limit else None
                if split is None:
                    raise ExportError(f"{path}, line {number}: {tools} disagree here")
                edits.append((number, number, "".join(f"{part}\n" for part in split)))
                continue
            if node is None:
                raise ExportError(f"{path}, line {number}: {tools} disagree here")
            if index in taken:
                continue
            taken.add(index)
            start, end = _span(node)
            was_start, was_end = _span(kept[index])
            indent = " " * (len(lines[start - 1]) - len(lines[start - 1].lstrip()))
            body = "".join(original[was_start - 1 : was_end])
            edits.append((start, end, f"{indent}{YAPF_OFF}\n{body}{indent}{YAPF_ON}\n"))
        text = style._once(replace_lines(text, edits), path)
    raise ExportError(f"{path}: {tools} still disagree after {SETTLE_ROUNDS} rounds")


def _split_string(line: str, limit: int) -> list[str] | None:
    """A continuation line inside brackets that starts with a string literal longer than ``limit`` columns, as two
    adjacent
    literals (Python joins them: the same value) broken after a space, else anywhere outside an escape sequence, an
    f-string field or a doubled brace; None when it is not one."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    first = tokens[0]
    if first.type != tokenize.STRING or first.start[1] != 0:
        return None
    literal = first.string
    prefix = literal[: len(literal) - len(literal.lstrip("rRbBfFuU"))]
    quote = literal[len(prefix)]
    if literal[len(prefix) : len(prefix) + 3] == quote * 3:
        return None
    body, rest = literal[len(prefix) + 1 : -1], line.strip()[len(literal) :]
    indent = line[: len(line) - len(line.lstrip())]
    room = limit - len(indent) - len(prefix) - 2
    formatted = "f" in prefix.lower()
    depth, cut, anywhere, position = 0, -1, -1, 0
    while position < min(room, len(body)):
        escaped = len(body[:position]) - len(body[:position].rstrip("\\"))
        if depth == 0 and escaped % 2 == 0 and position > 0:
            anywhere = position  # a cut before this character splits no escape sequence, field or doubled brace
            cut = position if body[position - 1] == " " else cut
        pair = body[position : position + 2]
        if formatted and pair in ("{{", "}}") and depth == 0:
            position += 2
            continue
        if formatted and body[position] in "{}":
            depth += 1 if body[position] == "{" else -1
        position += 1
    cut = cut if cut > 0 else anywhere
    if cut <= 0:
        return None
    return [f"{indent}{prefix}{quote}{body[:cut]}{quote}", f"{indent}{prefix}{quote}{body[cut:]}{quote}{rest}"]


def _disabled(lines: list[str], number: int) -> bool:
    """Whether line ``number`` lies between a ``# yapf: disable`` and its ``# yapf: enable``."""
    for line in reversed(lines[: number - 1]):
        if line.strip() in (YAPF_OFF, YAPF_ON):
            return line.strip() == YAPF_OFF
    return False


def _off(lines: list[str], number: int) -> bool:
    """Whether line ``number`` follows a ``# yapf: disable`` line."""
    return number >= 2 and lines[number - 2].strip() == YAPF_OFF


def _innermost(statements: list[ast.stmt], number: int) -> tuple[int, ast.stmt | None]:
    """The statement whose own lines (:func:`_span`) hold line ``number``, and its position among ``statements``."""
    found: tuple[int, ast.stmt | None] = (-1, None)
    for index, node in enumerate(statements):
        start, end = _span(node)
        if start <= number <= end:
            found = (index, node)
    return found
