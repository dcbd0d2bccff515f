"""MMSci reference-based captioning metrics against values computed by hand, and unavailable metrics reported as
``None`` with a reason (never 0)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import captioning_metrics as captioning
from scifig_tasks.lmms_eval import TASKS_DIR
from tests.harness.mmsci_data import tiny_bert

PREDICTIONS = ["the cat sat on the mat", "a b c d e", ""]
REFERENCES = ["the cat is on the mat", "a b c d f", "x y z"]


def test_bleu2_and_bleu4_are_the_authors_ngram_precisions() -> None:
    # evaluate's BLEU "precisions" (TensorFlow-NMT count over 13a tokens), counted by hand:
    # "the cat sat on the mat" vs "the cat is on the mat": bigrams the-cat, on-the, the-mat of 5 -> p2 = 3/5; no
    # 4-gram of the 3 matches -> p4 = 0. "a b c d e" vs "a b c d f": p2 = 3/4, p4 = 1/2. The empty output scores 0.
    bleu2 = captioning.bleu_precision(PREDICTIONS, REFERENCES, 2)
    assert bleu2.per_sample == [3 / 5, 3 / 4, 0.0]
    assert bleu2.value == pytest.approx((3 / 5 + 3 / 4) / 3)
    bleu4 = captioning.bleu_precision(PREDICTIONS, REFERENCES, 4)
    assert bleu4.per_sample == [0.0, 1 / 2, 0.0]
    # 13a tokens, case kept: "The state-of-the-art 3.5-nm Films, and 10-fold" -> The | state-of-the-art | 3.5 | - |
    # nm | Films | , | and | 10 | - | fold (a dash splits only after a digit, a comma always, "3.5" stays whole)
    assert captioning.tokens_13a("The state-of-the-art 3.5-nm Films, and 10-fold") == [
        "The", "state-of-the-art", "3.5", "-", "nm", "Films", ",", "and", "10", "-", "fold",
    ]  # fmt: skip
    # against the lower-cased text: "The" and "Films" miss; p1 = 9/11, p2 = 7/10, p3 = 5/9, p4 = 3/8
    precisions = captioning.ngram_precisions(
        "The state-of-the-art 3.5-nm Films, and 10-fold", "the state-of-the-art 3.5-nm films, and 10-fold"
    )
    assert precisions == [9 / 11, 7 / 10, 5 / 9, 3 / 8]
    # clipping: "the" occurs once in the reference; a caption shorter than n has p_n = 0 (no division by zero)
    assert captioning.ngram_precisions("the the the the", "the cat") == [1 / 4, 0.0, 0.0, 0.0]
    assert captioning.ngram_precisions("spectra .", "spectra .") == [1.0, 1.0, 0.0, 0.0]


def test_cumulative_bleu_is_reported_under_its_own_names() -> None:
    # "the cat sat on the mat": p1 = 5/6, p2 = 3/5, BP = 1 -> sqrt(5/6 * 3/5) = 0.707 (above p2 = 0.6);
    # "a b c d e": p1..p4 = 4/5, 3/4, 2/3, 1/2 -> BLEU-4 = (1/5)^(1/4) = 0.669 (above p4 = 0.5); a p_k of 0 gives 0
    cumulative2 = captioning.bleu(PREDICTIONS, REFERENCES, 2)
    assert cumulative2.per_sample == pytest.approx([math.sqrt(5 / 6 * 3 / 5), math.sqrt(4 / 5 * 3 / 4), 0.0])
    assert cumulative2.value == pytest.approx((math.sqrt(1 / 2) + math.sqrt(3 / 5)) / 3)
    cumulative4 = captioning.bleu(PREDICTIONS, REFERENCES, 4)
    assert cumulative4.per_sample == pytest.approx([0.0, (1 / 5) ** 0.25, 0.0])
    # the brevity penalty lowers it below p2: a 3-word output against a 4-word reference, all n-grams matching
    assert captioning.bleu(["a b c"], ["a b c d"], 2).value == pytest.approx(math.exp(1 - 4 / 3))
    assert captioning.bleu_precision(["a b c"], ["a b c d"], 2).value == 1.0


def test_metric_names_never_contain_one_another() -> None:
    # lmms-eval's group aggregation matches metric names by substring
    folder = TASKS_DIR / "mmsci" / "tasks"
    names: set[str] = set()
    for path in [*folder.glob("*.yaml"), *folder.glob("_*template_yaml")]:
        names |= set(re.findall(r"^  - metric: (\S+)$", path.read_text(), flags=re.MULTILINE))
    assert {"bleu2", "bleu4", "cumulative_bleu_2", "cumulative_bleu_4", "accuracy", "breakdown"} <= names
    assert [(a, b) for a in names for b in names if a != b and a in b] == []


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


def test_k_captions_are_averaged_and_the_paper_setting_leaves_empty_outputs_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(captioning.shutil, "which", lambda name: None)  # no java: METEOR / CIDEr unavailable
    env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "absent"), "SCIFIG_JUDGE": "off"}
    records = [
        {"uid": "a", "figure_index": 0, "predictions": ["a b c d e", ""], "reference": "a b c d f"},
        {
            "uid": "b",
            "figure_index": 1,
            "predictions": ["the cat sat on the mat"] * 2,
            "reference": "the cat is on the mat",
        },
    ]
    for record in records:
        record["prediction"] = record["predictions"][0]
    # p2 per caption index: index 0 -> 3/4 and 3/5; index 1 -> the empty output (0 by default, left out by the paper
    # setting) and 3/5; the metric is the mean of the two indices' means
    default = captioning.evaluate(records, env, judge=None)
    assert default["values"]["bleu2"] == pytest.approx(((3 / 4 + 3 / 5) / 2 + (0 + 3 / 5) / 2) / 2)
    assert default["report"]["protocol"] == {
        "name": "default",
        "captions_per_figure": 2,
        "empty_outputs": "scored 0 (G-Eval 1)",
    }
    assert default["report"]["outputs"] == {"ok": 3, "empty": 1, "request_failed": 0}
    assert default["report"]["metrics"]["bleu2"]["per_caption_index"] == pytest.approx([(3 / 4 + 3 / 5) / 2, 3 / 10])

    paper = captioning.evaluate(records, {**env, "SCIFIG_MMSCI_PROTOCOL": "paper"}, judge=None)
    assert paper["values"]["bleu2"] == pytest.approx(((3 / 4 + 3 / 5) / 2 + 3 / 5) / 2)
    assert paper["values"]["bleu4"] == pytest.approx(((1 / 2 + 0) / 2 + 0) / 2)
    assert paper["report"]["protocol"]["name"] == "paper"
    # records written by the *_paper tasks carry the protocol themselves
    tagged = captioning.evaluate([{**record, "protocol": "paper"} for record in records], env, judge=None)
    assert tagged["values"]["bleu2"] == paper["values"]["bleu2"]
    with pytest.raises(ValueError, match="mix scoring protocols"):
        captioning.evaluate(
            [{**records[0], "protocol": "paper"}, {**records[1], "protocol": "default"}], env, judge=None
        )


def test_a_judge_passed_in_is_the_one_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FActScore and G-Eval ask the judge passed in (VLMEvalKit's ``--judge``, a notebook's second judge), whatever the
    settings say (here off), and a different judge is a different cache entry."""
    from scifig_tasks.core.judge import JudgeConfig, JudgeResult

    monkeypatch.setattr(captioning.shutil, "which", lambda name: None)

    class Recording:
        config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="passed-in")

        def __init__(self) -> None:
            self.prompts: list[str] = []

        def complete_many(self, prompts: list[str], **settings: object) -> list[JudgeResult]:
            self.prompts += prompts
            return [JudgeResult(status="judged", text="- a fact" if "fact" in p.lower() else "5") for p in prompts]

    env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(tmp_path / "absent"), "SCIFIG_JUDGE": "off"}
    records = [{"uid": "a", "figure_index": 0, "prediction": "a caption of a plot", "reference": "a plot"}]
    off = captioning.evaluate(records, env, judge=None)
    assert off["values"]["geval_relevance"] is None  # no judge: the judged metrics are unavailable
    judge = Recording()
    passed = captioning.evaluate(records, env, judge=judge)
    assert judge.prompts and passed["values"]["geval_relevance"] is not None
