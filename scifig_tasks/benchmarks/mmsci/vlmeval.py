"""VLMEvalKit dataset classes for MMSci (Li et al. 2025): multiple choice (three settings) and captioning, over
:mod:`scifig_tasks.benchmarks.mmsci.rules`, :mod:`scifig_tasks.core.multiple_choice` and
:mod:`scifig_tasks.benchmarks.mmsci.captioning_metrics`.

The same functions as the lmms-eval ``mmsci`` / ``mmsci_captioning`` tasks give the prompts (the authors' question +
``A: <option>`` lines + answer instruction; the captioning prompts with or without the abstract) and the scores:
letters resolved by rules then the judge, never guessed (unresolved answers are wrong and counted; the accuracy over
resolved answers only, the authors' denominator, is reported beside it as ``accuracy_paper_denominator``); the
headline ``accuracy`` is the paper's "Avg.", pooled over all questions of the three settings (``setting_mean`` is the
unweighted mean of the settings). Captioning reports BLEU (the paper's n-gram precisions p2/p4, and cumulative BLEU),
ROUGE, METEOR, BERTScore, CIDEr, FActScore and G-Eval from :func:`.captioning_metrics.evaluate` (a metric that
cannot be computed is ``None`` with its reason, never 0) — not VLMEvalKit's own MMSci captioning evaluation.
The ``_paper`` twins (:mod:`scifig_tasks.core.scoring_protocol`) score as the authors' code does: ``mmsci_paper`` and
the ``mmsci_<setting>_paper`` datasets read letters with :func:`core.multiple_choice_paper.resolve_mmsci`, the
``mmsci_caption_*_paper`` datasets score captions with the paper setting. VLMEvalKit asks the model once per question,
so a paper captioning dataset scores that one caption (k = 1); the lmms-eval ``*_paper`` tasks sample k = 3.

Names are the lmms-eval task names (:mod:`scifig_tasks.vlmeval.names`), all lower case: VLMEvalKit's special cases
for names containing "MMSci" are case-sensitive and none of its lower-cased checks matches them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scifig_tasks.benchmarks.mmsci import captioning_metrics as mmsci_captioning
from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.vlmeval.datasets import Message, SciFigDataset, message, served
from scifig_tasks.vlmeval.tsv_layout import INT, JSON_LIST, Field, OptionLetters, TsvFormat

MCQ_TSV_LAYOUT = TsvFormat(
    "image",
    (
        Field("question"),
        OptionLetters("options"),
        Field("answer"),
        Field("options", JSON_LIST),
        Field("uid"),
        Field("figure_index", INT),
        *(Field(name) for name in ("setting", "category", "subject", "subfigure")),
    ),
)
CAPTION_TSV_LAYOUT = TsvFormat(
    "image",
    (
        Field("answer", key="caption"),  # VLMEvalKit's name for the reference
        Field("abstract"),
        Field("uid"),
        Field("figure_index", INT),
        Field("category"),
        Field("subject"),
    ),
)


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
