"""The report's building blocks: sections made of tables, figures and notes, rendered to Markdown and HTML.

Each registered benchmark contributes one :class:`Section`, from the section module its description names or the
generic one (:mod:`scifig_tasks.report.build`); this module knows nothing about benchmarks.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]
    empty: str = "none"
    """Said in a sentence after the caption in place of a table without rows (no empty tables)."""
    kind: str = ""
    """``headline``: the report's first table (drawn a little larger)."""
    keys: int = 1
    """The leading columns that name a row (repeated in each part of a table too wide for the page)."""


@dataclass
class Figure:
    file: str
    """File name inside the report's ``figures/`` folder."""
    caption: str


@dataclass
class Note:
    text: str
    kind: str = ""
    """``coverage``: the run's data are not the published set its table compares with (drawn as a warning)."""


@dataclass
class Details:
    """Blocks shown collapsed under a one-line summary (HTML ``<details>``; Markdown: a bold line, then the blocks):
    what made the numbers, below the numbers themselves."""

    summary: str
    blocks: list[Table | Figure | Note] = field(default_factory=list)


Block = Table | Figure | Note | Details


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    anchor: str = ""
    """The HTML ``id`` of the section (``summary``)."""


def percent(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string (``0.4`` -> ``40.0``); ``-`` when missing."""
    return "-" if value is None else f"{100 * value:.{digits}f}"


def percent_ci(value: float | None, ci: list[float] | None) -> str:
    """``40.0 (11.8-76.9)``: accuracy with its 95% Wilson interval, in percent."""
    if value is None:
        return "-"
    if not ci:
        return percent(value)
    return f"{percent(value)} ({percent(ci[0])}-{percent(ci[1])})"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _flat(blocks: list[Block]) -> list[Table | Figure | Note | str]:
    """The blocks with each :class:`Details` as its summary line (a string) followed by its blocks."""
    flat: list[Table | Figure | Note | str] = []
    for block in blocks:
        if isinstance(block, Details):
            flat += [block.summary, *block.blocks]
        else:
            flat.append(block)
    return flat


def to_markdown(title: str, intro: list[str], sections: list[Section]) -> str:
    lines = [f"# {title}", "", *intro, ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        for block in _flat(section.blocks):
            if isinstance(block, str):
                lines += [f"**{block}**", ""]
            elif isinstance(block, Note):
                lines += [block.text, ""]
            elif isinstance(block, Figure):
                lines += [f"![{_md_cell(block.caption)}](figures/{block.file})", "", f"*{block.caption}*", ""]
            elif not block.rows:
                lines += [f"**{block.caption}**: {block.empty}.", ""]
            else:
                lines += [f"**{block.caption}**", ""]
                lines.append("| " + " | ".join(_md_cell(h) for h in block.header) + " |")
                lines.append("|" + "|".join(["---"] + ["---:"] * (len(block.header) - 1)) + "|")
                lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
                lines.append("")
    return "\n".join(lines)


_STYLE = """
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 2em auto; max-width: min(1300px, 96vw); color: #222; }
h1 { border-bottom: 2px solid #345; } h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #eef2f6; } td { text-align: right; } td:first-child { text-align: left; }
td.w, th.w { overflow-wrap: anywhere; }
td.n { white-space: nowrap; } td.t { text-align: left; min-width: 12em; }
tr.reference td { color: #555; font-style: italic; background: #fafafa; }
figure { margin: 1em 0 2em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; }
div.table { overflow-x: auto; }
p.coverage { border-left: 4px solid #c77c00; background: #fff6e5; padding: 0.5em 0.8em; color: #5a3a00; }
p.empty { font-style: italic; }
section#summary { background: #f4f7fa; border: 1px solid #ccd6e0; padding: 0 1em; }
p.judge { border-left: 4px solid #a31515; background: #fdecec; padding: 0.5em 0.8em; color: #5a0000; }
details { margin: 0.5em 0 1em 0; } details > summary { cursor: pointer; font-weight: bold; color: #345; }
table.headline td, table.headline th { font-size: 1.05em; }
"""

NUMBER = re.compile(r"^[-+]?[\d.,]+%?( ?± ?[\d.]+)?( \([-+]?[\d.]+-[\d.]+\))?( \([-+][\d.]+\))?$|^-$|^n/a$")
"""A cell that is a number (``40.0 (11.8-76.9)``, ``12.5 ± 1.2``, ``-3.0 (+1.5)``): kept on one line. Every other cell
may wrap where the browser breaks a line, at spaces and after hyphens (:func:`pieces`), never inside a word: a column is
as wide as the longest unbroken part of its names (``t``: a long text cell, left-aligned)."""

BREAK_AFTER = re.compile(r"(?<=[-–])(?=\w)")
"""Where a browser breaks a word besides spaces: after a hyphen or dash before a letter or digit (``meta-``
``llama/Llama-`` ``3.2-`` ``11B``); not after ``/`` or ``_``."""
LONGEST_PIECE = 40
"""An unbroken run longer than this is no name (a hash, a path without separators): its cell (``w``) may break it
anywhere, so no table is widened by it."""


def pieces(word: str) -> list[str]:
    """A word (no white space) cut where a browser may break it (:data:`BREAK_AFTER`): the shortest a cell may wrap
    to; a run longer than :data:`LONGEST_PIECE` counts as that long (its cell breaks it anywhere)."""
    return [part[:LONGEST_PIECE] for part in BREAK_AFTER.split(word)]


def _unbroken(text: str) -> bool:
    """Whether ``text`` holds a run longer than :data:`LONGEST_PIECE` that no space or hyphen breaks."""
    return any(len(part) > LONGEST_PIECE for word in text.split() for part in BREAK_AFTER.split(word))


EM_PX = 14.4
"""A table's font size in pixels (0.9em of the page's 16 px; the headline table's cells are 1.05 times larger)."""
PAD_PX = 20
"""A cell's left and right padding (0.6em each) and its border."""
TEXT_CELL_PX = 12 * EM_PX
"""The narrowest a long text cell (``t``) is drawn."""
BOX_PX = 1260
"""The narrowest box a table stands in when the page is 1400 px wide: the page's 1300 px less the summary box's
padding and borders."""
_WIDTHS = {**dict.fromkeys("0123456789", 0.64), **dict.fromkeys(" .,:;'!|ilIjft()[]-/", 0.4), "m": 0.98, "w": 0.82}
"""Character widths of DejaVu Sans in em, rounded up (any other character: 0.62, a capital: 0.78)."""


def _text_px(text: str, em: float, bold: bool = False) -> float:
    width = sum(_WIDTHS.get(c, 0.78 if c.isupper() else 0.62) for c in text) * em
    return width * (1.1 if bold else 1.0)


@functools.lru_cache(maxsize=65536)
def min_width(text: str, em: float = EM_PX, header: bool = False) -> float:
    """The narrowest a cell holding ``text`` can be drawn (pixels, an upper bound): a number on one line, a text at its
    longest piece (:func:`pieces`), a long text cell no narrower than :data:`TEXT_CELL_PX`."""
    if not header and NUMBER.match(text):
        return _text_px(text, em) + PAD_PX
    longest = max((_text_px(piece, em, header) for word in text.split() for piece in pieces(word)), default=0.0)
    if not header and len(text) > 40:
        longest = max(longest, TEXT_CELL_PX)
    return longest + PAD_PX


def column_parts(block: Table, box: float = BOX_PX) -> list[list[int]]:
    """The columns of ``block`` in tables that each fit ``box`` pixels: all of them when they fit; else the key
    columns (``block.keys``) repeated in every part, the others in order, as many per part as fit."""
    em = EM_PX * (1.05 if block.kind == "headline" else 1.0)
    widths = [
        max([min_width(header, em, header=True), *(min_width(row[i], em) for row in block.rows if i < len(row))])
        for i, header in enumerate(block.header)
    ]
    keys = list(range(min(block.keys, len(widths))))
    if sum(widths) <= box or len(widths) <= len(keys) + 1:
        return [list(range(len(widths)))]
    parts: list[list[int]] = []
    room = box - sum(widths[i] for i in keys)
    current: list[int] = []
    for column in range(len(keys), len(widths)):
        if current and sum(widths[i] for i in current) + widths[column] > room:
            parts.append(keys + current)
            current = []
        current.append(column)
    parts.append(keys + current)
    return parts


WRAP = ' class="w"'
"""A header cell holding an unbroken run longer than :data:`LONGEST_PIECE`: it may break anywhere."""


def _cell_class(text: str) -> str:
    if NUMBER.match(text):
        return ' class="n"'
    kinds = [kind for kind, holds in (("t", len(text) > 40), ("w", _unbroken(text))) if holds]
    return f' class="{" ".join(kinds)}"' if kinds else ""


def _table_html(block: Table, css: str = "") -> list[str]:
    esc = html.escape
    parts: list[str] = []
    columns = column_parts(block)
    for number, shown in enumerate(columns, start=1):
        caption = block.caption if len(columns) == 1 else f"{block.caption} ({PART_WORD} {number} of {len(columns)})"
        parts.append(f'<div class="table"><table{css}><caption>{esc(caption)}</caption><thead><tr>')
        headers = block.header
        parts += [f"<th{WRAP if _unbroken(headers[i]) else ''}>{esc(headers[i])}</th>" for i in shown]
        parts.append("</tr></thead><tbody>")
        for row in block.rows:
            kind = ' class="reference"' if row and row[0].startswith("(published)") else ""
            cells = "".join(f"<td{_cell_class(row[i])}>{esc(row[i])}</td>" for i in shown if i < len(row))
            parts.append(f"<tr{kind}>{cells}</tr>")
        parts.append("</tbody></table></div>")
    return parts


PART_WORD = "part"
"""A table too wide for the page is drawn in parts: ``<caption> (part 1 of 2)``, the key columns in each."""


def _block_html(block: Table | Figure | Note) -> list[str]:
    esc = html.escape
    if isinstance(block, Note):
        css = f' class="{esc(block.kind)}"' if block.kind else ""
        return [f"<p{css}>{esc(block.text)}</p>"]
    if isinstance(block, Figure):
        return [
            f'<figure><img src="figures/{esc(block.file)}" alt="{esc(block.caption)}">'
            f"<figcaption>{esc(block.caption)}</figcaption></figure>"
        ]
    if not block.rows:
        return [f'<p class="empty"><b>{esc(block.caption)}</b>: {esc(block.empty)}.</p>']
    return _table_html(block, ' class="headline"' if block.kind == "headline" else "")


def to_html(title: str, intro: list[str], sections: list[Section]) -> str:
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        *[f"<p>{esc(line)}</p>" for line in intro if line],
    ]
    for section in sections:
        if section.anchor:
            parts.append(f'<section id="{esc(section.anchor)}">')
        parts.append(f"<h2>{esc(section.title)}</h2>")
        for block in section.blocks:
            if isinstance(block, Details):
                parts.append(f"<details><summary>{esc(block.summary)}</summary>")
                for inner in block.blocks:
                    parts += _block_html(inner)
                parts.append("</details>")
            else:
                parts += _block_html(block)
        if section.anchor:
            parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
