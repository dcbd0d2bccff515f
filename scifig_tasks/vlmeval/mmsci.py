"""VLMEvalKit dataset classes for MMSci (Li et al. 2025): multiple choice (three settings) and captioning, over
:mod:`scifig_tasks.core.mmsci`, :mod:`scifig_tasks.core.mcq` and :mod:`scifig_tasks.core.mmsci_captioning`.

The same functions as the lmms-eval ``mmsci`` / ``mmsci_captioning`` tasks give the prompts (the authors' question +
``A: <option>`` lines + answer instruction; the captioning prompts with or without the abstract) and the scores:
letters resolved by rules then the judge, never guessed (unresolved answers are wrong and counted; the accuracy over
resolved answers only, the authors' denominator, is reported beside it as ``accuracy_paper_denominator``); the
headline ``accuracy`` is the paper's "Avg.", pooled over all questions of the three settings (``setting_mean`` is the
unweighted mean of the settings). Captioning reports BLEU (the paper's n-gram precisions p2/p4, and cumulative BLEU),
ROUGE, METEOR, BERTScore, CIDEr, FActScore and G-Eval from :func:`core.mmsci_captioning.evaluate` (a metric that
cannot be computed is ``None`` with its reason, never 0) — not VLMEvalKit's own MMSci captioning evaluation.
``SCIFIG_MMSCI_PROTOCOL=paper`` scores captions as the authors' code does; the sampling of k = 3 captions belongs to
the model's configuration in VLMEvalKit (the lmms-eval ``*_paper`` tasks sample them).

Names use "MMSCI": VLMEvalKit special-cases dataset names containing "MMSci".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.core import mmsci, mmsci_captioning
from scifig_tasks.core.judge import get_judge
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, _message


class SciFigMMSciMCQ(SciFigDataset):
    """MMSci figure/caption matching, all three settings (``SciFig_MMSCI_MCQ`` test, ``..._Dev`` dev split)."""

    BENCHMARK = "mmsci"
    TYPE = "MCQ"
    NAMES = ("SciFig_MMSCI_MCQ", "SciFig_MMSCI_MCQ_Dev")
    PROMPT_VARIANT: mmsci.PromptVariant = "standard"

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        doc = self.doc(line)
        return _message(self.dump_image(line), mmsci.mcq_prompt(doc["question"], doc["options"], self.PROMPT_VARIANT))

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        doc = self.doc(line)
        return mmsci.sample_record(doc, mmsci.resolve_answer(doc, reply, get_judge()))

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        table = mmsci.breakdown(records, get_judge())
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
    """MMSci figure captioning, image only or with the article's abstract (test and ``_Dev`` splits)."""

    BENCHMARK = "mmsci"
    NAMES = (
        "SciFig_MMSCI_Caption_ImageOnly",
        "SciFig_MMSCI_Caption_WithAbstract",
        "SciFig_MMSCI_Caption_ImageOnly_Dev",
        "SciFig_MMSCI_Caption_WithAbstract_Dev",
    )

    def build_prompt(self, line: int | Mapping[str, Any]) -> Message:
        line = self._row(line)
        with_abstract = "_WithAbstract" in self.dataset_name
        prompt = mmsci.caption_prompt(self.doc(line)["abstract"]) if with_abstract else mmsci.caption_prompt()
        return _message(self.dump_image(line), prompt)

    def score(self, line: Mapping[str, Any], reply: str | None) -> dict[str, Any]:
        return mmsci.caption_record(self.doc(line), reply)

    def summarise(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        result = mmsci_captioning.evaluate(records)
        metrics: dict[str, Any] = {"n": len(records), **result["values"]}
        return metrics, result["report"]


MMSCI_CLASSES: tuple[type[SciFigDataset], ...] = (SciFigMMSciMCQ, SciFigMMSciCaption)
