"""The report's building blocks: sections made of tables, figures and notes, rendered to Markdown and HTML.

Each registered benchmark contributes one :class:`Section`, from the section module its description names or the
generic one (:mod:`scifig_tasks.report.build`); this module knows nothing about benchmarks.
"""

from __future__ import annotations

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
th { background: #eef2f6; } td { text-align: right; overflow-wrap: anywhere; } td:first-child { text-align: left; }
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
may wrap, so no table is wider than the page at 1400 px (``t``: a long text cell, left-aligned)."""


def _cell_class(text: str) -> str:
    if NUMBER.match(text):
        return ' class="n"'
    return ' class="t"' if len(text) > 40 else ""


def _table_html(block: Table, css: str = "") -> list[str]:
    esc = html.escape
    parts = [f'<div class="table"><table{css}><caption>{esc(block.caption)}</caption><thead><tr>']
    parts += [f"<th>{esc(h)}</th>" for h in block.header]
    parts.append("</tr></thead><tbody>")
    for row in block.rows:
        kind = ' class="reference"' if row and row[0].startswith("(published)") else ""
        parts.append(f"<tr{kind}>" + "".join(f"<td{_cell_class(c)}>{esc(c)}</td>" for c in row) + "</tr>")
    parts.append("</tbody></table></div>")
    return parts


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
