"""Plot Twist in VLMEvalKit: its TSV layout and its dataset classes, over the same rules as the lmms-eval tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, message, served


class SciFigPlotTwist(SciFigDataset):
    """Plot Twist (base charts: scatter, bar, pie): the paper's prompt and extraction, standard / relaxed /
    range-based accuracy and their collective forms, breakdown per chart and question type; ``plot_twist_open`` and
    ``plot_twist_open_pali`` under the paper's CogVLM/ChartLlama and PaLI-3 protocols."""

    NAMES = served("plot_twist", lambda dataset: "robustness" not in dataset.name)
    BENCHMARK = "plot_twist"

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        return message(self.dump_image(line), plot_twist.task_prompt(self.doc(line), self.options))

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        """Scored under the dataset's ``protocol`` option (:data:`.rules.PROTOCOLS`: the prompt and the
        reformatting) and its ``margin_rule``."""
        doc, protocol = self.doc(line), self.options.get("protocol", plot_twist.DEFAULT_PROTOCOL)
        margin_rule = self.options.get("margin_rule", "synthetic")
        score = plot_twist.score_output(doc, reply, self.judge, margin_rule, protocol)
        return plot_twist.sample_record(doc, [score], protocol)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        metrics: dict[str, Any] = {"n": len(records)}
        for key in plot_twist.ACCURACIES:
            metrics[f"{key}_acc"] = plot_twist.accuracy(records, key)
        for key in plot_twist.ACCURACIES:
            metrics[f"collective_{key}"] = float(plot_twist.collective(records, key))
        return metrics, plot_twist.breakdown(records)


class SciFigPlotTwistRobustness(SciFigPlotTwist):
    """Plot Twist with every robustness variant (titles, markers, grid, Vega-Lite) and the base charts: the same
    metrics per variant and each variant's change against ``base``; under each of the three protocols."""

    NAMES = served("plot_twist", lambda dataset: "robustness" in dataset.name)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        metrics, table = super().summarise(records)
        table["delta_vs_base"] = plot_twist.deltas_vs_base(table["variant"])
        for variant, deltas in table["delta_vs_base"].items():
            metrics |= {f"delta_vs_base/{variant}/{metric}": value for metric, value in deltas.items()}
        return metrics, table
