"""GRAB in VLMEvalKit: its TSV layout and its dataset class, over the same rules as the lmms-eval tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.scoring import score_doc
from scifig_tasks.core.judged_hooks import JudgeRequired
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, served


class SciFigGRAB(SciFigDataset):
    """GRAB (all four tasks): the README prompt, text then image (the README's chat message), breakdown per
    task/category/complexity/precision. ``grab`` scores the answer as a whole, ``grab_paper`` (option ``protocol``)
    with the authors' truncation rule, as the lmms-eval tasks of those names. ``grab_llm_extract`` (option
    ``llm_extract``) is the paper's ablation
    protocol: the judge extracts the answer with the paper's prompt, then the same exact match; it refuses to start
    without a judge (``SCIFIG_JUDGE_*``, or VLMEvalKit's ``--judge`` options)."""

    NAMES = served("grab", lambda dataset: True)
    BENCHMARK = "grab"

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        text = {"type": "text", "value": grab.build_prompt(line["question"])}
        return [text, *({"type": "image", "value": path} for path in self.dump_image(line))]

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        doc, llm_extract = self.doc(line), bool(self.options.get("llm_extract", False))
        if llm_extract and self.judge is None:
            raise RuntimeError(JudgeRequired([self.dataset_name]).sentence)
        judge = self.judge if llm_extract else None
        score = score_doc(doc, reply, judge, llm_extract=llm_extract, protocol=self.protocol())
        return grab.sample_record(doc, score)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        table = grab.breakdown(records)
        correct = sum(record["correct"] for record in records)
        metrics = {"accuracy": correct / len(records), "n": len(records), "correct": correct}
        metrics |= {f"task={key}": cell["accuracy"] for key, cell in table.get("task", {}).items()}
        return metrics, table
