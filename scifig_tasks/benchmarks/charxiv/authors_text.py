"""The CharXiv authors' prompt and grading texts, byte for byte: ``authors_text.json``.

The texts of ``src/constants.py`` in github.com/princeton-nlp/CharXiv (Apache-2.0, commit 7ebe88f), kept as data so
that every whitespace and typo the authors' model and grader saw is kept: the response instructions of the 19
descriptive templates and of the 4 reasoning answer types, and the grader's prefixes, overarching questions, rubrics
with in-context examples and reasoning rules. Keys are the authors' template ids and answer types, as strings.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TEXT_FILE = Path(__file__).with_name("authors_text.json")


@cache
def authors_text() -> dict[str, Any]:
    """Every text of ``authors_text.json`` by its name (see the module docstring)."""
    return json.loads(TEXT_FILE.read_text(encoding="utf-8"))


def text(name: str, key: int | str | None = None) -> str:
    """One text: ``text("descriptive_grading_prefix")``, ``text("descriptive_response_instructions", 13)``."""
    found = authors_text()[name]
    return found if key is None else found[str(key)]
