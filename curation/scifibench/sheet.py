"""The verification sheet of the gold candidate pool (SciFIBench paper §3.3, step 9: gold questions are
human-verified; we produce the candidate pool and a verification sheet, and cannot verify for the user).

``verification/index.html`` shows every candidate question of both tasks as the model would see it — the figure and
the five captions (Figure→Caption), or the caption and the five figures A–E (Caption→Figure) — with the expected
answer marked, its category and difficulty, and Accept / Reject buttons. Decisions are kept in the browser's local
storage (per sheet) and "Download accepted.txt" saves them in the format ``scifibench-accept`` reads: one
``<task> <ID>`` line per accepted question (``Figure2Caption 123``). Images are written once each to
``verification/images/`` and loaded lazily, so a 1,000-question pool opens quickly.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from PIL import Image

from curation.scifibench.pairs import Pairs
from curation.scifibench.questions import LETTERS, TASKS, Question, render

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px;color:#222}
.card{border:1px solid #bbb;border-radius:6px;padding:.8em;margin:1em 0}
.card.accept{border-color:#2a2;background:#f3fbf3}.card.reject{border-color:#c33;background:#fdf3f3}
.meta{color:#555;font-size:.9em}.figure{max-width:560px;max-height:420px;min-width:120px;border:1px solid #ddd}
.options li{margin:.25em 0}.answer{font-weight:bold;background:#ffef9f}
.grid{display:flex;flex-wrap:wrap;gap:.6em}.grid figure{margin:0;padding:.3em;border:2px solid transparent}
.grid figure.answer{border-color:#d4a000}.grid img{max-width:260px;max-height:220px;min-width:120px;display:block}
.bar{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ccc;z-index:1}
label{margin-right:1em}
"""

_SCRIPT = """
const KEY = "scifig-scifibench-verification:" + document.body.dataset.sheet;
const state = JSON.parse(localStorage.getItem(KEY) || "{}");
function paint() {
  const counts = {};
  document.querySelectorAll(".card").forEach(card => {
    const decision = state[card.dataset.key] || "";
    card.className = "card " + decision;
    const task = card.dataset.task;
    counts[task] = counts[task] || {accept: 0, reject: 0, total: 0};
    counts[task].total += 1;
    if (decision) counts[task][decision] += 1;
  });
  document.getElementById("counts").textContent = Object.entries(counts).map(
    ([task, c]) => `${task}: ${c.accept} accepted, ${c.reject} rejected, ${c.total - c.accept - c.reject} to do`
  ).join(" | ");
}
document.querySelectorAll("input[type=radio]").forEach(radio => {
  if (state[radio.name] === radio.value) radio.checked = true;
  radio.addEventListener("change", () => {
    state[radio.name] = radio.value;
    localStorage.setItem(KEY, JSON.stringify(state));
    paint();
  });
});
document.getElementById("download").addEventListener("click", () => {
  const lines = Object.entries(state).filter(([, v]) => v === "accept").map(([k]) => k.replace(":", " ")).sort();
  const blob = new Blob([lines.join("\\n") + "\\n"], {type: "text/plain"});
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "accepted.txt";
  link.click();
});
paint();
"""


def _image_file(data: bytes, directory: Path) -> str:
    with Image.open(io.BytesIO(data)) as image:
        extension = (image.format or "png").lower().replace("jpeg", "jpg")
    name = f"{hashlib.sha256(data).hexdigest()[:20]}.{extension}"
    target = directory / name
    if not target.exists():
        target.write_bytes(data)
    return f"images/{name}"


def _card(task: str, question: Question, pairs: Pairs, seed: int, images: Mapping[int, str]) -> str:
    item = render(question, task, pairs.captions, pairs.figure_ids, seed)  # type: ignore[arg-type]
    key = f"{task}:{question.pair}"
    head = (
        f'<div class="meta"><b>{task} ID {question.pair}</b> · category <b>{html.escape(question.category)}</b> · '
        f"difficulty {question.difficulty:.4f} · figure {html.escape(pairs.figure_ids[question.pair])} · "
        f"answer <b>{item.Answer}</b></div>"
    )
    if task == "Figure2Caption":
        options = "".join(
            f'<li class="{"answer" if option[0] == item.Answer else ""}">{html.escape(option)}</li>'
            for option in item.Options
        )
        body = (
            f'<img class="figure" loading="lazy" src="{images[question.pair]}" alt="figure {question.pair}">'
            f'<p>{html.escape(item.Question)}</p><ol class="options" style="list-style:none;padding:0">{options}</ol>'
        )
    else:
        figures = "".join(
            f'<figure class="{"answer" if LETTERS[i] == item.Answer else ""}"><figcaption>{LETTERS[i]})</figcaption>'
            f'<img loading="lazy" src="{images[pair]}" alt="option {LETTERS[i]}"></figure>'
            for i, pair in enumerate(item.images)
        )
        body = f'<p>{html.escape(item.Question)}</p><div class="grid">{figures}</div>'
    buttons = (
        f'<label><input type="radio" name="{key}" value="accept"> Accept</label>'
        f'<label><input type="radio" name="{key}" value="reject"> Reject</label>'
    )
    return f'<div class="card" data-key="{key}" data-task="{task}">{head}{body}<p>{buttons}</p></div>'


def write_sheet(
    directory: Path, pool: Sequence[Question], pairs: Pairs, seed: int, split_names: Mapping[str, str]
) -> Path:
    """Write ``directory/index.html`` (and its images) for the candidate ``pool``; returns the HTML path."""
    image_dir = directory / "images"
    image_dir.mkdir(parents=True, exist_ok=True)
    needed = sorted({pair for question in pool for pair in (question.pair, *question.negatives)})
    images = {pair: _image_file(data, image_dir) for pair, data in zip(needed, pairs.image_bytes(needed), strict=True)}
    sheet_id = hashlib.sha256(
        json.dumps([pairs.figure_ids[q.pair] for q in pool] + [seed] + sorted(split_names.values())).encode()
    ).hexdigest()[:16]
    counts = Counter(question.category for question in pool)
    table = "".join(f"<tr><td>{html.escape(name)}</td><td>{counts[name]}</td></tr>" for name in sorted(counts))
    sections = []
    for task in TASKS:
        cards = "".join(_card(task, question, pairs, seed, images) for question in pool)
        sections.append(f'<h2 id="{task}">{task} — split {html.escape(split_names[task])}</h2>{cards}')
    document = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>SciFIBench gold verification</title><style>{_STYLE}</style></head>
<body data-sheet="{sheet_id}">
<h1>SciFIBench gold candidates — verification sheet</h1>
<p>For every question, check that the highlighted answer is correct and the only option that fits (no other option
is an equally good match, the figure is legible, the caption describes this figure). Choose <b>Accept</b> or
<b>Reject</b>. Decisions stay in this browser. When done, press <b>Download accepted.txt</b> and run
<code>scifig curate scifibench-accept --out DIR --accepted accepted.txt</code>: the gold split is chosen from the
accepted questions, hardest first and category-balanced.</p>
<table><tr><th>category</th><th>candidates per task</th></tr>{table}</table>
<div class="bar"><a href="#Figure2Caption">Figure2Caption</a> · <a href="#Caption2Figure">Caption2Figure</a> ·
<button id="download">Download accepted.txt</button> <span id="counts"></span></div>
{"".join(sections)}
<script>{_SCRIPT}</script>
</body></html>
"""
    path = directory / "index.html"
    path.write_text(document, encoding="utf-8")
    return path
