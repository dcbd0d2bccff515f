"""MMSci captioning's settings, declared by its description (:mod:`scifig_tasks.benchmarks.mmsci.description`).

* FActScore and G-Eval score a random subset of the captions (paper section 4: 200 samples;
  :mod:`.judged_metrics`): ``SCIFIG_MMSCI_JUDGED_SUBSET`` (``all`` for every caption) and the
  seed it is drawn with, ``SCIFIG_MMSCI_JUDGED_SEED``.
* BERTScore's model and layer (:mod:`.captioning_metrics`): ``roberta-large``, layer 17, unless
  ``SCIFIG_MMSCI_BERTSCORE_MODEL`` / ``SCIFIG_MMSCI_BERTSCORE_LAYERS`` say otherwise. The model comes from the
  Hugging Face Hub at run time, so its setting is a :class:`~scifig_tasks.core.hub_cache.ModelSetting`: ``scifig
  doctor`` says whether the local cache holds it, and offline a local copy is named here.
"""

from __future__ import annotations

from scifig_tasks.core.hub_cache import ModelSetting
from scifig_tasks.core.settings import Setting, integer, subset, text

GROUP = "mmsci"

JUDGED_SUBSET: Setting[int | None] = Setting(
    "SCIFIG_MMSCI_JUDGED_SUBSET",
    subset,
    200,
    "captions scored by FActScore and G-Eval",
    "an integer >= 1 or all",
    GROUP,
)
JUDGED_SEED: Setting[int] = Setting(
    "SCIFIG_MMSCI_JUDGED_SEED", integer(), 0, "seed of the judged captions' subset", "an integer", GROUP
)
BERTSCORE_MODEL: ModelSetting = ModelSetting(
    "SCIFIG_MMSCI_BERTSCORE_MODEL",
    text,
    "roberta-large",
    "BERTScore model (id or local folder)",
    "a non-empty string",
    GROUP,
    label="bertscore",
    needed_by="MMSci captioning's BERTScore",
)
BERTSCORE_LAYERS: Setting[int | None] = Setting(
    "SCIFIG_MMSCI_BERTSCORE_LAYERS",
    integer(),
    None,
    "BERTScore layer",
    "an integer",
    GROUP,
    shown_default="17 for roberta-large, else bert-score's",
)

SETTINGS = (JUDGED_SUBSET, JUDGED_SEED, BERTSCORE_MODEL, BERTSCORE_LAYERS)
"""Every MMSci captioning setting, in ``scifig config``'s order."""
