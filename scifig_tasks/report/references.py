"""The papers' published reference rows (``references.yaml``), each with its citation.

Only numbers stated in the papers are listed (values in percent); a benchmark section shows them beside the
evaluated models, marked ``(published)`` and cited.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml


class Stated(float):
    """A published number that remembers how the paper wrote it (``87.40`` stays ``87.40``)."""

    text: str

    def __new__(cls, text: str) -> Stated:
        value = super().__new__(cls, text)
        value.text = text
        return value


class _Loader(yaml.SafeLoader):
    """Reads numbers as :class:`Stated`, keeping their written form."""


def _stated(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Stated:
    return Stated(loader.construct_scalar(node))


_Loader.add_constructor("tag:yaml.org,2002:float", _stated)
_Loader.add_constructor("tag:yaml.org,2002:int", _stated)


@dataclass(frozen=True)
class Reference:
    model: str
    citation: str
    values: dict[str, Stated]
    """Column key -> accuracy in percent, as written in the paper."""

    def label(self) -> str:
        return f"(published) {self.model} [{self.citation}]"


@cache
def _load() -> dict[str, Any]:
    text = (resources.files("scifig_tasks.report") / "references.yaml").read_text(encoding="utf-8")
    data = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    citations = data["citations"]
    for benchmark, rows in data.items():
        if benchmark == "citations":
            continue
        for index, row in enumerate(rows):
            if row.get("citation") not in citations:
                raise ValueError(f"references.yaml, {benchmark} row {index}: unknown citation {row.get('citation')!r}")
    return data


def references(benchmark: str) -> list[Reference]:
    rows = _load().get(benchmark, [])
    return [Reference(row["model"], row["citation"], dict(row["values"])) for row in rows]


def citation_text(key: str) -> str:
    return " ".join(str(_load()["citations"][key]).split())


def citations_note(refs: list[Reference]) -> str:
    keys = list(dict.fromkeys(ref.citation for ref in refs))
    return "Published rows: " + "; ".join(f"[{key}] {citation_text(key)}" for key in keys) + "."


def ref_cell(ref: Reference, key: str) -> str:
    """The published value as the paper states it, ``-`` when the paper gives none for ``key``."""
    value = ref.values.get(key)
    return "-" if value is None else value.text
