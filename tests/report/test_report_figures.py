"""The report's figures keep every legend off the data: drawn with bars at 100% (where a legend inside the plot would
cover them), each legend's box lies outside its plotting area."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from scifig_tasks.report import figures

MODELS = ("model-a (default protocol)", "model-a (paper protocol)", "model-b")


def test_no_legend_covers_a_bar_or_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    boxes = []  # (plotting area, legend) of every axes with a legend, as saved
    save = figures._save

    def keep(fig: plt.Figure, path: Path) -> Path:
        fig.canvas.draw()  # lay the figure out as it is saved
        boxes.extend(
            (ax.get_window_extent(), legend.get_window_extent()) for ax in fig.axes if (legend := ax.get_legend())
        )
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", keep)
    full = {model: {"Extrema": (1.0, (0.8, 1.0)), "Range": (0.95, None)} for model in MODELS}
    figures.grouped_bars(tmp_path / "bars.png", {"per category": full})
    levels = {model: {0: (1.0, None), 1: (1.0, None)} for model in MODELS}
    figures.accuracy_vs_level(tmp_path / "levels.png", {"Functions": levels})
    figures.signed_bars(tmp_path / "signed.png", {m: {"marked_true": 30.0, "baseline": 0.0} for m in MODELS}, "points")
    figures.simple_bars(tmp_path / "simple.png", {m: {"bleu2": 1.0, "rougeL": 0.98} for m in MODELS}, "score", (0, 1))
    assert len(boxes) == 4
    for plot, legend in boxes:
        apart = legend.x0 >= plot.x1 or legend.x1 <= plot.x0 or legend.y0 >= plot.y1 or legend.y1 <= plot.y0
        assert apart, (plot, legend)
