"""The similarity filter (SciFIBench paper §3.3, step 5): a neighbour closer than a threshold is a near-duplicate and
never a negative; default threshold ``median - 3 x 1.4826 x MAD`` of the nearest-neighbour distances.
Manual: curation/scifibench/README.md, "Steps", **Similarity threshold**.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

ROBUST_Z = 3.0
MAD_TO_SD = 1.4826
QUANTILES = (0.0, 0.001, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


@dataclass(frozen=True)
class Threshold:
    """The filter threshold, how it was chosen and the nearest-neighbour distance distribution it came from."""

    value: float
    rule: str
    median: float
    mad: float
    quantiles: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def nearest_distances(distances: np.ndarray) -> np.ndarray:
    """Each pair's distance to its nearest other pair (finite values only)."""
    first = distances[:, 0] if distances.ndim == 2 else distances
    return first[np.isfinite(first)]


def choose_threshold(distances: np.ndarray, min_distance: float | None = None, z: float = ROBUST_Z) -> Threshold:
    """The threshold for neighbour ``distances`` (rows sorted nearest first): ``min_distance`` when given, else the
    robust outlier bound ``median - z * 1.4826 * MAD`` of the nearest-neighbour distances."""
    first = nearest_distances(distances)
    if first.size == 0:
        raise ValueError("no finite neighbour distance to choose a similarity threshold from")
    median = float(np.median(first))
    mad = float(np.median(np.abs(first - median)))
    quantiles = {f"q{q:g}": float(np.quantile(first, q)) for q in QUANTILES}
    if min_distance is not None:
        if min_distance < 0:
            raise ValueError(f"min_distance must be >= 0, got {min_distance}")
        return Threshold(float(min_distance), "given (--min-distance)", median, mad, quantiles)
    value = max(0.0, median - z * MAD_TO_SD * mad)
    rule = f"auto: median - {z:g} x {MAD_TO_SD} x MAD of nearest-neighbour distances"
    return Threshold(value, rule, median, mad, quantiles)


def kept_neighbours(indices: np.ndarray, distances: np.ndarray, threshold: float) -> np.ndarray:
    """Mask of the neighbours that pass the filter: found (index >= 0) and at distance >= ``threshold``."""
    return (indices >= 0) & np.isfinite(distances) & (distances >= threshold)
