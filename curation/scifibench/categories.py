"""Question categories computed from the corpus (SciFIBench paper §3.3, step 7).

Rule: the 10 most common arXiv categories are kept individually, the rest become ``other cs``, and cross-listed
papers become ``cross-list``. In a CS corpus (arXiv's cs listing, as SciCap) a *cross-listed* paper is one whose
primary category lies outside the home archive ``cs`` (e.g. ``stat.ML`` or ``eess.IV`` papers listed in cs); the
top 10 are counted over the pairs whose primary category is in the home archive, and ties are broken by name.
The published CS set has exactly these 12 labels (cs.NI, cs.CV, ..., ``other cs``, ``cross-list``).

A corpus without a home archive (``--domain General``, or ``home_archive=None``) has no cross-lists: its 10 most
common primary categories are kept and the rest become ``other``. Nothing is hard-coded: labels come from the data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

CROSS_LIST = "cross-list"
TOP_N = 10


def archive(category: str) -> str:
    """The arXiv archive of a category: ``cs.CV`` -> ``cs``, ``astro-ph.CO`` -> ``astro-ph``, ``hep-th`` stays."""
    return category.split(".", 1)[0]


def other_label(home_archive: str | None) -> str:
    return f"other {home_archive}" if home_archive else "other"


def top_categories(primaries: Sequence[str], home_archive: str | None, top_n: int = TOP_N) -> list[str]:
    """The ``top_n`` most common primary categories of the home archive (all, without one), most common first."""
    counts = Counter(p for p in primaries if home_archive is None or archive(p) == home_archive)
    return [name for name, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top_n]]


def categorise(primaries: Sequence[str], home_archive: str | None, top_n: int = TOP_N) -> list[str]:
    """The category label of every pair, from its paper's primary category."""
    top = set(top_categories(primaries, home_archive, top_n))
    other = other_label(home_archive)
    labels = []
    for primary in primaries:
        if home_archive is not None and archive(primary) != home_archive:
            labels.append(CROSS_LIST)
        else:
            labels.append(primary if primary in top else other)
    return labels


def describe_rule(home_archive: str | None, top: list[str]) -> str:
    """One sentence stating how the labels of this corpus were assigned."""
    kept = ", ".join(top) or "none"
    if home_archive is None:
        return f"the {len(top)} most common primary categories ({kept}) individually, the rest `other`."
    return (
        f"the {len(top)} most common `{home_archive}` primary categories ({kept}) individually, the other "
        f"`{home_archive}` ones `{other_label(home_archive)}`, papers whose primary category is outside "
        f"`{home_archive}` `{CROSS_LIST}`."
    )
