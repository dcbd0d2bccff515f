"""The VLMEvalKit datasets choose their scoring protocol as the lmms-eval hooks do — the ``protocol`` option of the task
of the same name: the ``_paper`` twins score with the paper's protocol, a plain name with scifig's default unless a
deprecated ``SCIFIG_*_PROTOCOL`` variable says otherwise, and ``scifig rescore --protocol`` overrides both
(:func:`scifig_tasks.core.scoring_protocol.in_force`)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from scifig_tasks.core import scoring_protocol as protocol

scifibench_module: ModuleType
mmsci_module: ModuleType


@pytest.fixture(autouse=True, scope="module")
def dataset_modules() -> None:
    """The dataset modules, imported when the module's first test runs, not when the suite is collected (VLMEvalKit
    takes seconds to import)."""
    global scifibench_module, mmsci_module
    scifibench_module = pytest.importorskip("scifig_tasks.benchmarks.scifibench.vlmeval")
    mmsci_module = pytest.importorskip("scifig_tasks.benchmarks.mmsci.vlmeval")


MCQ_LINE = {
    "index": "0",
    "question": "Which caption best describes the figure?",
    **{letter: f"caption {letter}" for letter in "ABCD"},
    "answer": "B",
    "options": json.dumps([f"caption {letter}" for letter in "ABCD"]),
    "uid": "u1",
    "figure_index": "0",
    "setting": "fig2cap",
    "category": "Physical sciences",
    "subject": "Optics",
    "subfigure": "",
}
CAPTION_LINE = {
    "index": "0",
    "answer": "The reference caption.",
    "abstract": "An abstract.",
    "uid": "u1",
    "figure_index": "0",
    "category": "Physical sciences",
    "subject": "Optics",
}


def instance(cls: type, name: str):
    """A dataset object without its TSV (scoring one line needs none)."""
    dataset = cls.__new__(cls)
    dataset.dataset_name = name
    return dataset


@pytest.fixture(autouse=True)
def no_deprecated_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SCIFIG_PROTOCOL", "SCIFIG_MMSCI_PROTOCOL", "SCIFIG_SCIFIBENCH_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCIFIG_JUDGE", "off")


def test_the_name_chooses_the_protocol() -> None:
    plain = instance(mmsci_module.SciFigMMSciMCQ, "mmsci_fig2cap")
    paper = instance(mmsci_module.SciFigMMSciMCQ, "mmsci_fig2cap_paper")
    assert plain.score(MCQ_LINE, "B")["protocol"] == "default"
    assert paper.score(MCQ_LINE, "B")["protocol"] == "paper"
    assert (paper.score(MCQ_LINE, "B")["predicted"], paper.score(MCQ_LINE, "B")["reason"]) == ("B", "bare label")
    caption = instance(mmsci_module.SciFigMMSciCaption, "mmsci_caption_image_only")
    caption_paper = instance(mmsci_module.SciFigMMSciCaption, "mmsci_caption_image_only_paper")
    assert "protocol" not in caption.score(CAPTION_LINE, "A caption.")
    record = caption_paper.score(CAPTION_LINE, "A caption.")
    assert (record["protocol"], record["predictions"]) == ("paper", ["A caption."])
    scifibench = scifibench_module.SciFigSciFIBench
    named = {name: instance(scifibench, name).protocol() for name in scifibench.NAMES}
    assert named == {name: "paper" if name.endswith("_paper") else "default" for name in scifibench.NAMES}


def test_deprecated_variable_and_rescore_protocol_act_as_in_lmms_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = instance(mmsci_module.SciFigMMSciMCQ, "mmsci")
    paper = instance(mmsci_module.SciFigMMSciMCQ, "mmsci_paper")
    monkeypatch.setenv("SCIFIG_MMSCI_PROTOCOL", "paper")
    assert plain.score(MCQ_LINE, "B")["protocol"] == "paper"  # the deprecated switch, for a plain name only
    monkeypatch.delenv("SCIFIG_MMSCI_PROTOCOL")
    with protocol.rescoring_as("default"):
        assert paper.score(MCQ_LINE, "B")["protocol"] == "default"
    with protocol.rescoring_as("paper"):
        assert plain.score(MCQ_LINE, "B")["protocol"] == "paper"
    assert plain.score(MCQ_LINE, "B")["protocol"] == "default"
