"""The dataset card of a curated set: ``README.md`` in its output folder, the Hub YAML header and the text each
benchmark's ``card.py`` renders (how the set was made, its composition, columns, citation). The manual:
docs/curation.md.
"""

from __future__ import annotations

from pathlib import Path

CARD = "README.md"
"""The card's file name in the output folder (the name the Hub reads)."""


def write_card(out: Path, text: str) -> Path:
    """Write ``text`` as the dataset card of the set in ``out``; return the card's path."""
    path = Path(out) / CARD
    path.write_text(text, encoding="utf-8")
    return path
