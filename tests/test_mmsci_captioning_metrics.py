"""MMSci reference-based captioning metrics against values computed by hand, and unavailable metrics reported as
``None`` with a reason (never 0)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scifig_tasks.core import mmsci_captioning as captioning
from tests.harness.mmsci_data import tiny_bert

PREDICTIONS = ["the cat sat on the mat", "a b c d e", ""]
REFERENCES = ["the cat is on the mat", "a b c d f", "x y z"]


def test_bleu_is_cumulative_bleu_per_caption_averaged() -> None:
    # "the cat sat on the mat" vs "the cat is on the mat": p1 = 5/6, p2 = 3/5, no 4-gram match, BP = 1
    # "a b c d e" vs "a b c d f": p1 = 4/5, p2 = 3/4, p3 = 2/3, p4 = 1/2, BP = 1; the empty output scores 0
    bleu2 = captioning.bleu(PREDICTIONS, REFERENCES, 2)
    assert bleu2.per_sample == pytest.approx([math.sqrt(5 / 6 * 3 / 5), math.sqrt(4 / 5 * 3 / 4), 0.0])
    assert bleu2.value == pytest.approx((math.sqrt(1 / 2) + math.sqrt(3 / 5)) / 3)
    bleu4 = captioning.bleu(PREDICTIONS, REFERENCES, 4)
    assert bleu4.per_sample == pytest.approx([0.0, (1 / 5) ** 0.25, 0.0])
    # brevity penalty: a 3-word output against a 4-word reference, all n-grams matching
    assert captioning.bleu(["a b c"], ["a b c d"], 2).value == pytest.approx(math.exp(1 - 4 / 3))


def test_rouge_f_measures() -> None:
    scores = captioning.rouge(PREDICTIONS, REFERENCES)
    assert scores["rouge1"].per_sample == pytest.approx([5 / 6, 4 / 5, 0.0])
    assert scores["rouge2"].per_sample == pytest.approx([3 / 5, 3 / 4, 0.0])
    assert scores["rougeL"].per_sample == pytest.approx([5 / 6, 4 / 5, 0.0])  # LCS "the cat on the mat", "a b c d"


def test_meteor_and_corpus_cider_with_the_bundled_jars() -> None:
    predictions = [
        "the figure shows spectra of the sample under pressure",
        "schematic of the device with two electrodes",
        "completely unrelated words here",
        "",
    ]
    references = [
        "the figure shows spectra of the sample under pressure",
        "schematic of the device and the measured current",
        "scale bar of one micron in every panel",
        "cells in the plot",
    ]
    scores = captioning.meteor_and_cider(predictions, references)
    meteor, cider = scores["meteor"], scores["cider"]
    assert meteor.per_sample[0] > 0.9 and 0 < meteor.per_sample[1] < meteor.per_sample[0]
    assert meteor.per_sample[2] == 0.0 and meteor.per_sample[3] == 0.0
    assert meteor.value == pytest.approx(sum(meteor.per_sample) / 4)
    assert cider.value > 0 and cider.per_sample[0] > cider.per_sample[1] > 0
    assert cider.per_sample[2] == 0.0 and cider.per_sample[3] == 0.0
    assert cider.value == pytest.approx(sum(cider.per_sample) / 4)


def test_without_java_meteor_and_cider_are_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(captioning.shutil, "which", lambda name: None)
    scores = captioning.meteor_and_cider(["a b"], ["a b"])
    assert {name: (result.value, "java" in (result.reason or "")) for name, result in scores.items()} == {
        "meteor": (None, True),
        "cider": (None, True),
    }


def test_bertscore_with_a_local_model_and_unavailable_without_one(tmp_path: Path) -> None:
    model = tiny_bert(tmp_path / "tiny-bert")
    env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(model)}
    assert captioning.bertscore_settings(env) == (str(model), None)
    assert captioning.bertscore_settings({}) == ("roberta-large", 17)
    predictions = ["the figure shows cells", "", "plot of device current"]
    references = ["the figure shows cells", "a plot", "schematic under pressure one micron"]
    result = captioning.bertscore(predictions, references, env)
    assert result.per_sample[0] == pytest.approx(1.0, abs=1e-5)  # identical texts
    assert result.per_sample[1] == 0.0  # empty output
    assert result.per_sample[2] == pytest.approx(_greedy_f1(model, predictions[2], references[2]), abs=1e-5)
    assert result.value == pytest.approx(sum(result.per_sample) / 3)
    assert result.details == {"model": str(model), "layers": None}

    missing = captioning.bertscore(["a"], ["b"], {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "absent")})
    assert missing.value is None and "does not exist" in missing.reason
    broken = tmp_path / "broken"
    broken.mkdir()
    unloadable = captioning.bertscore(["a"], ["b"], {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(broken)})
    assert unloadable.value is None and "cannot load BERTScore model" in unloadable.reason


def _greedy_f1(model_dir: Path, candidate: str, reference: str) -> float:
    """BERTScore F1 computed directly (bert-score's definition): last-layer token embeddings, each content token of one
    side matched to its most similar token of the other side (whose [CLS]/[SEP] take part), averaged, F1 of the two."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(str(model_dir)), AutoModel.from_pretrained(str(model_dir))
    model.eval()

    def embed(text: str) -> torch.Tensor:
        with torch.no_grad():
            hidden = model(torch.tensor([tokenizer.encode(text)])).last_hidden_state[0]
        return hidden / hidden.norm(dim=-1, keepdim=True)

    cand, ref = embed(candidate), embed(reference)
    precision = (cand[1:-1] @ ref.T).max(dim=1).values.mean().item()
    recall = (ref[1:-1] @ cand.T).max(dim=1).values.mean().item()
    return 2 * precision * recall / (precision + recall)
