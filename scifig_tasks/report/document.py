"""The report's building blocks: sections made of tables, figures and notes, rendered to Markdown and HTML.

Each registered benchmark contributes one :class:`Section`, from the section module its description names or the
generic one (:mod:`scifig_tasks.report.build`); this module knows nothing about benchmarks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field


@dataclass
class Table:
    caption: str
    header: list[str]
    rows: list[list[str]]
    empty: str = "none"
    """Said in a sentence after the caption in place of a table without rows (no empty tables)."""


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


Block = Table | Figure | Note


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


def to_markdown(title: str, intro: list[str], sections: list[Section]) -> str:
    lines = [f"# {title}", "", *intro, ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        for block in section.blocks:
            if isinstance(block, Note):
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
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { border-bottom: 2px solid #345; } h2 { margin-top: 2em; border-bottom: 1px solid #bbb; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #eef2f6; } td { text-align: right; white-space: nowrap; } td:first-child { text-align: left; }
tr.reference td { color: #555; font-style: italic; background: #fafafa; }
figure { margin: 1em 0 2em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #444; }
div.table { overflow-x: auto; }
p.coverage { border-left: 4px solid #c77c00; background: #fff6e5; padding: 0.5em 0.8em; color: #5a3a00; }
p.empty { font-style: italic; }
section#summary { background: #f4f7fa; border: 1px solid #ccd6e0; padding: 0 1em; }
section#summary td { white-space: normal; }
"""


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
            if isinstance(block, Note):
                css = f' class="{esc(block.kind)}"' if block.kind else ""
                parts.append(f"<p{css}>{esc(block.text)}</p>")
            elif isinstance(block, Figure):
                parts.append(
                    f'<figure><img src="figures/{esc(block.file)}" alt="{esc(block.caption)}">'
                    f"<figcaption>{esc(block.caption)}</figcaption></figure>"
                )
            elif not block.rows:
                parts.append(f'<p class="empty"><b>{esc(block.caption)}</b>: {esc(block.empty)}.</p>')
            else:
                parts.append(f'<div class="table"><table><caption>{esc(block.caption)}</caption><thead><tr>')
                parts += [f"<th>{esc(h)}</th>" for h in block.header]
                parts.append("</tr></thead><tbody>")
                for row in block.rows:
                    css = ' class="reference"' if row and row[0].startswith("(published)") else ""
                    parts.append(f"<tr{css}>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
                parts.append("</tbody></table></div>")
        if section.anchor:
            parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
