"""Synthetic MMSci article records for the curation tests: tiny PNG figures and captions of known shape.

``write_articles(root, subjects)`` writes ``root/articles.jsonl`` (the ``scifig curate mmsci`` input) and one PNG per
figure under ``root/images/``. Every article has :data:`FIGURES` figures:

* figures 0-3: ``Figure N: <title>`` captions with 4 sub-captions ``(a)``-``(d)`` and a description long enough for
  captioning (>= 50 words);
* figure 4: no ``Figure N:`` prefix and a short description with two sub-captions.

Titles, sub-captions and pixel colours are unique per article and figure, so an option's origin can be read back.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image

FIGURES = 5
LABELS = "abcd"


def png(seed: int, size: int = 8) -> bytes:
    """A small PNG whose colour depends on ``seed``."""
    colour = ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256)
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def title(uid: str, figure: int) -> str:
    return f"Title {figure} of article {uid} on measured quantities."


def subcaption(uid: str, figure: int, label: str) -> str:
    return (
        f"Panel {label} of figure {figure} in {uid} shows the measured response of sample {label}{figure} "
        f"under the stated conditions with error bars."
    )


def figure_record(uid: str, figure: int) -> dict[str, str]:
    name = f"images/{uid}_figure_{figure}.png"
    if figure < 4:
        description = " ".join(f"({label}) {subcaption(uid, figure, label)}" for label in LABELS)
        return {
            "image_filename": name,
            "caption": f"Figure {figure + 1}: {title(uid, figure)}",
            "description": description,
        }
    short = f"(a) {subcaption(uid, figure, 'a')} (b) {subcaption(uid, figure, 'b')}"
    return {"image_filename": name, "caption": f"Overview of {uid}", "description": short}


def article_record(uid: str, category: str, subject: str) -> dict[str, object]:
    return {
        "uid": uid,
        "category": category,
        "subject": subject,
        "title": f"Article {uid}",
        "abstract": f"Abstract of {uid}: we report measurements of several samples and discuss them in detail.",
        "images": [figure_record(uid, figure) for figure in range(FIGURES)],
    }


def write_articles(root: Path, subjects: dict[tuple[str, str], int]) -> Path:
    """Articles ``<subject-slug>-<n>`` per ``(category, subject): count``; returns the JSONL path."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    seed = 0
    for (category, subject), count in subjects.items():
        slug = subject.lower().replace(" ", "")
        for number in range(count):
            uid = f"{slug}{number:03d}"
            record = article_record(uid, category, subject)
            for figure in record["images"]:  # type: ignore[union-attr]
                seed += 1
                (root / figure["image_filename"]).write_bytes(png(seed))
            lines.append(json.dumps(record))
    path = root / "articles.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
