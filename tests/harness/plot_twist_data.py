"""Small Plot Twist sets built in tests, with scifig's own seeded generator (``scifig curate plot-twist``)."""

from __future__ import annotations

from pathlib import Path

from curation.plot_twist.build import build_plot_twist


def sample(root: Path) -> dict[str, str]:
    """Two charts of each type and one of each robustness variant under ``root`` (every task has questions): the
    settings that point at it."""
    built = build_plot_twist(root, plots_per_type=2, variant_plots=1, workers=1, progress=False)
    return {"SCIFIG_PLOT_TWIST_DATA": str(built.out)}
