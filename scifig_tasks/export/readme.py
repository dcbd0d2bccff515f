"""The README of an exported task folder (``scifig export-upstream``), made from the benchmark's package README.

An upstream task folder is reviewed by the framework's maintainers and read by its users, who have neither this
package's tests nor its commands: its README must stand alone, and be no longer than its neighbours' (the longest
README among lmms-eval's chart tasks is :data:`MAX_LINES` lines). The package README stays the full documentation;
the exported one is cut from it by a declared rule, the same for every benchmark, built-in or plugin:

1. **Sections by heading.** The opening (the title and the text before the first ``## `` heading) is kept. A ``## ``
   section is kept when its heading starts with one of :data:`EXPORTED_SECTIONS` (``## Scoring: captioning``,
   ``## Metrics over repeated sampling``); every other section (changelog, how the rules are implemented, local data,
   data revision, baselines, curation) stays in the package README.
2. **Summary, not detail.** A kept section is exported down to its first deeper heading (``### ``): what comes under
   a ``### `` heading of a kept section is detail for the package's own readers (the scifig commands that act on a
   run, how a rule was measured, rows about scifig's own data builders).
3. **Package-only columns.** In a table of a kept section, a column whose header is one of
   :data:`PACKAGE_ONLY_COLUMNS` (the fidelity table's ``test that proves it``) is left out.
4. **Nothing of the package alone.** What is left may not name what exists only in the package
   (:data:`PACKAGE_ONLY`: its tests, its modules by import path, a ``scifig`` command, a scifig version, a local-data
   variable, a relative link): such a sentence belongs under a ``### `` heading or in a section not exported, and a
   package README that puts one in an exported part is refused, naming the section and the text.
5. **Assembled** in this order: the opening, the kept sections in the package README's order, the exporter's
   ``## Data`` and ``## Code layout`` sections, one line linking to the full documentation (:data:`PACKAGE_HOME`),
   and the ``## Citation`` section last. A result longer than :data:`MAX_LINES` is refused.

A benchmark's package README is written for this rule: summary first in each exported section, detail in ``### ``
subsections or sections of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINES = 179
"""The most lines an exported README may have: the longest README among lmms-eval's neighbouring chart tasks."""

PACKAGE_HOME = "https://pypi.org/project/scifig/"
"""Where the scifig package, and with it each benchmark's full documentation, is published."""

EXPORTED_SECTIONS: tuple[str, ...] = (
    "Groups and tasks",
    "Tasks",
    "Prompt",
    "Protocol",
    "Answer extraction",
    "Scoring",
    "Metrics",
    "Fidelity",
    "Citation",
)
"""Heading prefixes of the ``## `` sections an exported README keeps: what a maintainer reviews and a user runs
(the tasks, what is asked, how it is scored, how it differs from the paper, what to cite)."""

CODE = "## Code layout"
"""The heading of the exporter's section on the vendored code."""

CITATION = "Citation"
"""The heading prefix of the section that goes last."""

PACKAGE_ONLY_COLUMNS: tuple[str, ...] = ("test that proves it",)
"""Table column headers left out of an exported README: they cite the package's own tests."""

PACKAGE_ONLY: tuple[tuple[str, str], ...] = (
    (r"\btests?/", "a path of the package's tests"),
    (r"\btests\.[a-z_]", "a module of the package's tests"),
    (r"\bscifig_tasks\b", "a module of the package by its import path"),
    (r"\bcuration/", "the package's data builders"),
    (r"`scifig [a-z][\w-]*", "a scifig command"),
    (r"\bscifig \d+(?:\.\d+)+", "a scifig version"),
    (r"\bSCIFIG_[A-Z_]*DATA\b", "a local-data variable the exported YAMLs do not read"),
    (r"\]\((?!https?://)[^)]*\)", "a relative link"),
)
"""What an exported part of a package README may not name (pattern, what it is): none of it exists upstream."""

_HEADING = re.compile(r"^## (.*)$")
_DEEPER = re.compile(r"^#{3,6} ")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class _Section:
    heading: str
    """The ``## `` heading's text; empty for the opening."""
    lines: list[str]
    """Its lines, the heading line first (the opening has none)."""

    @property
    def name(self) -> str:
        return f"section '## {self.heading}'" if self.heading else "opening (before the first ## heading)"


def _sections(text: str) -> list[_Section]:
    """The opening and every ``## `` section, split at ``## `` headings outside fenced code."""
    sections = [_Section("", [])]
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            sections.append(_Section(heading.group(1).strip(), [line]))
        else:
            sections[-1].lines.append(line)
    return sections


def _summary(lines: list[str]) -> list[str]:
    """The lines before the first ``### `` (or deeper) heading outside fenced code (rule 2)."""
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and _DEEPER.match(line):
            return lines[:index]
    return lines


def _cells(row: str) -> list[str]:
    return _CELL_SEPARATOR.split(row)


def _without_package_columns(lines: list[str]) -> list[str]:
    """Every table (a run of lines starting with ``|`` outside fenced code) without its package-only columns
    (rule 3): the columns are found by their header cells, the table's first row."""
    result: list[str] = []
    fenced, dropped = False, None
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or not line.lstrip().startswith("|"):
            dropped = None
            result.append(line)
            continue
        cells = _cells(line)
        if dropped is None:  # a table's header row
            dropped = {index for index, cell in enumerate(cells) if cell.strip() in PACKAGE_ONLY_COLUMNS}
        result.append("|".join(cell for index, cell in enumerate(cells) if index not in dropped))
    return result


def _trimmed(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n")


def _check(bench: str, section: _Section, text: str) -> None:
    """Rule 4: a ``ValueError`` naming the benchmark, the section and the text that exists only in the package."""
    for pattern, what in PACKAGE_ONLY:
        found = re.search(pattern, text)
        if found:
            line = text[: found.start()].count("\n") + 1
            raise ValueError(
                f"{bench}: the package README's {section.name} (line {line} of it) names {what} "
                f"({found.group(0)!r}), which the exported README cannot hold; move it under a ### heading or into a "
                f"section that is not exported (its heading starting with none of {', '.join(EXPORTED_SECTIONS)})"
            )


def upstream_readme(package_readme: str, *, bench: str, data_section: str, code_section: str) -> str:
    """The README of the exported task folder: the parts of the benchmark's package README that the module's rule
    exports, the exporter's ``## Data`` and ``## Code layout`` sections (``data_section``, ``code_section``), a line
    linking to the full documentation, and the citation last; self-contained, at most :data:`MAX_LINES` lines.

    A ``ValueError`` names the benchmark and what to change when an exported part names something of the package
    alone, when a given section does not start with its heading, or when the result is longer than the limit."""
    for argument, given, heading in (("data_section", data_section, "## Data"), ("code_section", code_section, CODE)):
        if not given.startswith(heading):
            raise ValueError(f"{bench}: {argument} must start with {heading!r}, not {given[:40]!r}")
    opening, *rest = _sections(package_readme)
    kept = [section for section in rest if section.heading.startswith(EXPORTED_SECTIONS)]
    body: list[str] = []
    citation: list[str] = []
    for section in [opening, *kept]:
        text = _trimmed(_without_package_columns(_summary(section.lines)))
        _check(bench, section, text)
        if text:
            (citation if section.heading.startswith(CITATION) else body).append(text)
    link = f"Full documentation (how each rule is implemented and tested, the changelog): scifig, {PACKAGE_HOME}"
    parts = [*body, data_section.strip("\n"), code_section.strip("\n"), link, *citation]
    readme = "\n\n".join(parts) + "\n"
    count = len(readme.splitlines())
    if count > MAX_LINES:
        raise ValueError(
            f"{bench}: the exported README has {count} lines, more than the {MAX_LINES} allowed; move detail of the "
            "package README's exported sections under ### headings (scifig_tasks/export/readme.py says what is kept)"
        )
    return readme
