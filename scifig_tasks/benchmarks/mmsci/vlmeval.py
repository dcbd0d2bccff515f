"""VLMEvalKit dataset classes for MMSci (Li et al. 2025): multiple choice (three settings) and captioning.

The same prompts and scores as the lmms-eval tasks (MMSci paper Table 4's "Avg." as the headline), not VLMEvalKit's
own MMSci evaluation. Manual: tasks/README.md, 'VLMEvalKit datasets'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.mmsci import captioning_metrics as mmsci_captioning
from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, message, served


class SciFigMMSciMCQ(SciFigDataset):
    """MMSci figure/caption matching: all three settings (``mmsci``, ``mmsci_dev``) or one (``mmsci_fig2cap``, ...,
    ``mmsci_dev_subcap2fig``); the ``_paper`` datasets (option ``protocol``) read answers as the authors' code does."""

    BENCHMARK = "mmsci"
    TYPE = "MCQ"
    NAMES = served("mmsci", lambda dataset: dataset.source == "mmsci_mcq")

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        doc = self.doc(line)
        return message(
            self.dump_image(line), mmsci.mcq_prompt(doc["question"], doc["options"], self.options["prompt_variant"])
        )

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        doc = self.doc(line)
        return mmsci.sample_record(doc, mmsci.resolve_answer(doc, reply, self.judge, self.protocol()))

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        table = mmsci.breakdown(records, self.judge)
        per_setting = mmsci.setting_accuracies(table)
        pooled = table["overall"]["all"]
        answered = table[mmsci.PAPER_DENOMINATOR].get("overall", {}).get("all", {"n": 0, "correct": 0})
        metrics: dict[str, Any] = {
            "accuracy": pooled["correct"] / pooled["n"],  # the paper's "Avg.": pooled over all questions
            "accuracy_paper_denominator": answered["correct"] / answered["n"] if answered["n"] else None,
            "setting_mean": mmsci.setting_mean(per_setting),
            "n": pooled["n"],
            "correct": pooled["correct"],
            "unresolved": table["flags"]["resolution"].get("unresolved", 0),
        }
        metrics |= {f"setting={name}": value for name, value in per_setting.items()}
        return metrics, table


class SciFigMMSciCaption(SciFigDataset):
    """MMSci figure captioning, image only or with the article's abstract (option ``prompt_variant``; test and dev
    splits); the ``_paper`` datasets (option ``protocol``) score with the authors' setting."""

    BENCHMARK = "mmsci"
    NAMES = served("mmsci", lambda dataset: dataset.source == "mmsci_captioning")

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        return message(self.dump_image(line), mmsci.task_caption_prompt(self.doc(line), self.options))

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        """The caption record; under the paper protocol it holds the reply as its one sample (``protocol: paper``)."""
        if self.protocol() == "paper":
            return mmsci.caption_record(self.doc(line), reply, [reply])
        return mmsci.caption_record(self.doc(line), reply)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        result = mmsci_captioning.evaluate(records, judge=self.judge)
        metrics: dict[str, Any] = {"n": len(records), **result["values"]}
        return metrics, result["report"]
