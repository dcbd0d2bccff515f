"""SciFIBench in VLMEvalKit: its TSV layout and its dataset class, over the same rules as the lmms-eval tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.scifibench import rules as scifibench
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, message, served


class SciFigSciFIBench(SciFigDataset):
    """SciFIBench, four splits (``scifibench_cs_figure2caption`` ...): the paper's prompts (Caption→Figure
    interleaved), letter resolution by rules then the judge for what they refuse, never guessing; accuracy overall
    and per category. The ``_reasoning`` datasets ask with the paper's "reasoning" prompt (option ``prompt_variant``),
    the ``_paper`` ones score as the paper does (option ``protocol``: the judge parses every output,
    :func:`scifig_tasks.core.multiple_choice_paper.resolve_scifibench`)."""

    TYPE = "MCQ"
    BENCHMARK = "scifibench"
    NAMES = served("scifibench", lambda dataset: True)

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        doc, images = self.doc(line), self.dump_image(line)
        variant = self.options.get("prompt_variant", "standard")
        if len(images) == 1:
            return message(images, scifibench.f2c_text(doc["Options"], variant))
        segments = scifibench.c2f_segments(doc["Question"], len(images), variant)
        return [
            {"type": "text", "value": segment}
            if isinstance(segment, str)
            else {"type": "image", "value": images[segment]}
            for segment in segments
        ]

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        doc = self.doc(line)
        resolution = scifibench.resolve_answer(doc, reply, self.judge, self.protocol())
        return scifibench.sample_record(doc, resolution)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        table = scifibench.breakdown(records, self.judge)
        correct = sum(record["correct"] for record in records)
        unresolved = sum(record["resolution"] == "unresolved" for record in records)
        metrics = {"accuracy": correct / len(records), "n": len(records), "correct": correct, "unresolved": unresolved}
        metrics |= {f"category={key}": cell["accuracy"] for key, cell in table.get("category", {}).items()}
        return metrics, table
