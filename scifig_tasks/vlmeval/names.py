"""The names of the scifig datasets in VLMEvalKit: the lmms-eval task names, one switch for both frameworks.

Rule: a VLMEvalKit dataset is called exactly as the lmms-eval task that asks the same questions under the same
protocol (a leaf task, or the group when one VLMEvalKit dataset holds all of a group's questions: ``grab``,
``plot_twist``, ``mmsci``). The protocol is part of the name (:mod:`scifig_tasks.core.scoring_protocol`): ``_paper``
twins score as the paper does. A group that VLMEvalKit serves as several datasets (``scifibench``: its four splits) is
expanded by :func:`expand`, so ``scifig vlmeval --data scifibench`` runs what ``scifig eval --tasks scifibench`` runs.

None of these names triggers VLMEvalKit's name-based special cases (its ``listinstr`` and ``.lower()`` checks for
MMSci, ChartQA, MMBench, MMMU, ``cn``, ``mme``, ...: ``tests/vlmeval/test_vlmeval_names.py`` checks them all).

The ``SciFig_*`` names of earlier releases are accepted for one more version (:data:`DEPRECATED`): mapped to the new
name with a one-line warning (:func:`current`). Files written under them stay readable (:func:`known`).

This module imports neither VLMEvalKit nor the datasets library.
"""

from __future__ import annotations

from collections.abc import Iterable

from scifig_tasks.core.deprecation import warn_once

_SCIFIBENCH_SPLITS = ("CS_Figure2Caption", "CS_Caption2Figure", "General_Figure2Caption", "General_Caption2Figure")
_MMSCI_SETTINGS = ("fig2cap", "subfig2cap", "subcap2fig")
_PROTOCOL_SUFFIXES = ("", "_paper")


def scifibench_split(name: str) -> str:
    """The published split a SciFIBench dataset reads, ``scifibench_cs_figure2caption_paper``: ``CS_Figure2Caption``."""
    for split in _SCIFIBENCH_SPLITS:
        if name.startswith(f"scifibench_{split.lower()}"):
            return split
    raise KeyError(f"{name!r} is not a SciFIBench dataset")


GRAB = ("grab", "grab_llm_extract")
SCIFIBENCH = tuple(
    f"scifibench_{split.lower()}{suffix}" for suffix in ("", "_paper", "_reasoning") for split in _SCIFIBENCH_SPLITS
)
PLOT_TWIST = (
    "plot_twist",
    "plot_twist_robustness",
    "plot_twist_open",
    "plot_twist_open_pali",
    "plot_twist_robustness_open",
    "plot_twist_robustness_open_pali",
)
MMSCI_MCQ = (
    *(f"mmsci{suffix}" for suffix in _PROTOCOL_SUFFIXES),
    "mmsci_dev",
    *(f"mmsci_{setting}{suffix}" for suffix in _PROTOCOL_SUFFIXES for setting in _MMSCI_SETTINGS),
    *(f"mmsci_dev_{setting}" for setting in _MMSCI_SETTINGS),
)
MMSCI_CAPTIONING = tuple(
    f"mmsci_caption{split}_{setting}{suffix}"
    for suffix in _PROTOCOL_SUFFIXES
    for split in ("", "_dev")
    for setting in ("image_only", "with_abstract")
)
DATASETS: tuple[str, ...] = (*GRAB, *SCIFIBENCH, *PLOT_TWIST, *MMSCI_MCQ, *MMSCI_CAPTIONING)
"""Every scifig VLMEvalKit dataset, by its (lmms-eval) name."""

GROUPS: dict[str, tuple[str, ...]] = {
    "scifibench": SCIFIBENCH[:4],
    "scifibench_cs": SCIFIBENCH[:2],
    "scifibench_general": SCIFIBENCH[2:4],
    "scifibench_paper": SCIFIBENCH[4:8],
    "scifibench_reasoning": SCIFIBENCH[8:12],
    **{
        f"mmsci_captioning{split}{suffix}": (
            f"mmsci_caption{split}_image_only{suffix}",
            f"mmsci_caption{split}_with_abstract{suffix}",
        )
        for split in ("", "_dev")
        for suffix in _PROTOCOL_SUFFIXES
    },
}
"""lmms-eval groups whose questions VLMEvalKit serves as several datasets: group → its datasets, in the group's
order. (A group VLMEvalKit serves as one dataset — ``grab``, ``plot_twist``, ``mmsci`` — is that dataset.)"""

DEPRECATED: dict[str, str] = {
    "SciFig_GRAB": "grab",
    "SciFig_GRAB_LLMExtract": "grab_llm_extract",
    **{f"SciFig_SciFIBench_{split}": f"scifibench_{split.lower()}" for split in _SCIFIBENCH_SPLITS},
    **{f"SciFig_SciFIBench_{split}_Reasoning": f"scifibench_{split.lower()}_reasoning" for split in _SCIFIBENCH_SPLITS},
    "SciFig_PlotTwist": "plot_twist",
    "SciFig_PlotTwist_Robustness": "plot_twist_robustness",
    "SciFig_PlotTwist_Open": "plot_twist_open",
    "SciFig_PlotTwist_Open_PaLI": "plot_twist_open_pali",
    "SciFig_PlotTwist_Robustness_Open": "plot_twist_robustness_open",
    "SciFig_PlotTwist_Robustness_Open_PaLI": "plot_twist_robustness_open_pali",
    "SciFig_MMSCI_MCQ": "mmsci",
    "SciFig_MMSCI_MCQ_Dev": "mmsci_dev",
    "SciFig_MMSCI_Caption_ImageOnly": "mmsci_caption_image_only",
    "SciFig_MMSCI_Caption_WithAbstract": "mmsci_caption_with_abstract",
    "SciFig_MMSCI_Caption_ImageOnly_Dev": "mmsci_caption_dev_image_only",
    "SciFig_MMSCI_Caption_WithAbstract_Dev": "mmsci_caption_dev_with_abstract",
}
"""The dataset names of earlier releases → today's name; accepted for one more version
(:data:`scifig_tasks.core.deprecation.REMOVED_IN`)."""


def vlmeval_names() -> dict[str, str]:
    """lmms-eval task or group name → the VLMEvalKit dataset name that runs it, for every scifig task VLMEvalKit
    offers (the same name: the two frameworks share them)."""
    return {name: name for name in DATASETS}


def current(name: str) -> str:
    """Today's name of ``name``: an old ``SciFig_*`` name is mapped (warning on stderr, once per name and process),
    any other name is returned as it is."""
    new = DEPRECATED.get(name)
    if new is None:
        return name
    warn_once(f"VLMEvalKit dataset {name}", f"use {new}")
    return new


def expand(names: Iterable[str]) -> list[str]:
    """The datasets ``names`` run, in order, without repeats: old names mapped (:func:`current`), lmms-eval groups
    served as several datasets expanded (:data:`GROUPS`); any other name is kept for VLMEvalKit to judge."""
    found: list[str] = []
    for name in names:
        name = current(name)
        for member in GROUPS.get(name, (name,)):
            if member not in found:
                found.append(member)
    return found


def known(name: str) -> bool:
    """Whether ``name`` names a scifig dataset, today's or a deprecated one (files written under either are read)."""
    return name in DATASETS or name in DEPRECATED
