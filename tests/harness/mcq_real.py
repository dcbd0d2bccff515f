"""The real-output multiple-choice fixture (tests/fixtures/mcq_outputs): outputs public models produced, each with
the letter it states, labelled by hand (see the README there for provenance and the labelling rule)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.harness.paths import FIXTURES

FIXTURE_DIR = FIXTURES / "mcq_outputs"
COLLECTIONS = {
    "first": FIXTURE_DIR,
    "tuning": FIXTURE_DIR / "tuning",
    "held_out": FIXTURE_DIR / "held_out",
    "third": FIXTURE_DIR / "third",
}
"""The first collection (the rules were written against it), the second collection's two halves (the rules were
tuned on ``tuning``; ``held_out`` was scored, not read, while they were written) and the third collection (models
and prompts no rule was written against, scored before any rule was changed; see the fixture's README)."""
LOWER_CASE_LABEL_SOURCES = frozenset({"psunlpgroup/VisOnlyQA"})
"""Sources whose prompts label options (a)-(e): outside scifig's upper-case label grammar."""


@dataclass(frozen=True)
class RealOutput:
    id: str
    source: str
    model: str
    options: tuple[str, ...]
    output: str
    label: str | None
    basis: str
    question: str = ""
    collection: str = "first"

    @property
    def labelled_options(self) -> list[str]:
        """The options as SciFIBench stores them: ``A) text``."""
        return [f"{chr(65 + index)}) {text}" for index, text in enumerate(self.options)]

    @property
    def prompt(self) -> str:
        """The question with its options labelled as the source's prompt labels them (``(a)`` for VisOnlyQA): what
        decides whether the resolver may read lower-case labels."""
        if self.source in LOWER_CASE_LABEL_SOURCES:
            listed = [f"({chr(97 + index)}) {text}" for index, text in enumerate(self.options)]
        else:
            listed = self.labelled_options
        return "\n".join([self.question, *listed])


def load_real_outputs(collection: str | None = None) -> list[RealOutput]:
    """Every output of one collection (``first``, ``tuning``, ``held_out``, ``third``), or of all of them."""
    items = []
    for name, directory in COLLECTIONS.items():
        if collection not in (None, name):
            continue
        for path in sorted(directory.glob("*.jsonl")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                row = json.loads(line)
                try:
                    items.append(
                        RealOutput(
                            row["id"],
                            row["source"],
                            row["model"],
                            tuple(row["options"]),
                            row["output"],
                            row["label"],
                            row["basis"],
                            row["question"],
                            name,
                        )
                    )
                except KeyError as missing:
                    raise AssertionError(f"{path.name} line {number}: no {missing} field") from None
    return items
