"""``scifig_clip`` through the real lmms-eval CLI with the tiny open_clip model scifig ships (``pretrained=tiny``: its
configuration from the package data, random weights from the seed).

The expected predictions are computed in the test with open_clip directly (same architecture, same seed): the
option of highest cosine similarity between L2-normalised image and text embeddings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.core.clip_baseline import TINY_MODEL, tiny_config
from tests.harness.scifibench_data import Question, build, write_splits


def expected_letters(config: Path, f2c, c2f) -> dict[tuple[str, int], str]:
    import open_clip  # here, not when the suite is collected: open_clip and torch take seconds to import
    import torch

    open_clip.add_model_config(config)
    torch.manual_seed(3)
    model, _, preprocess = open_clip.create_model_and_transforms(TINY_MODEL, pretrained=None)
    tokenizer = open_clip.get_tokenizer(TINY_MODEL)
    model.eval()
    letters = {}
    with torch.no_grad():
        for row in f2c:
            image = model.encode_image(preprocess(row["Images"][0].convert("RGB")).unsqueeze(0), normalize=True)
            texts = model.encode_text(tokenizer([o.split(")", 1)[1].strip() for o in row["Options"]]), normalize=True)
            letters[("f2c", row["ID"])] = "ABCDE"[int((image @ texts.T).argmax())]
        for row in c2f:
            caption = row["Question"].removeprefix("Caption: ").removesuffix(" Which image best matches the caption?")
            text = model.encode_text(tokenizer([caption]), normalize=True)
            images = torch.stack([preprocess(image.convert("RGB")) for image in row["Images"]])
            letters[("c2f", row["ID"])] = "ABCDE"[int((text @ model.encode_image(images, normalize=True).T).argmax())]
    return letters


def test_clip_baseline_picks_the_most_similar_option(tmp_path: Path, lmms_env, run_cli) -> None:
    f2c = build([Question("f2c", "ABCDE"[i % 5]) for i in range(8)])
    c2f = build([Question("c2f", "ABCDE"[i % 5]) for i in range(6)], first_id=50)
    data = write_splits({"CS_Figure2Caption": f2c, "CS_Caption2Figure": c2f}, tmp_path / "data")
    model_args = "pretrained=tiny,device=cpu,seed=3"  # the shipped configuration, no weights to download
    args = ["--model", "scifig_clip", "--model_args", model_args, "--batch_size", "4", "--tasks", "scifibench_cs"]
    args += ["--log_samples"]

    run = run_cli("lmms-eval", args, {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(data)}, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    expected = expected_letters(tiny_config(), f2c, c2f)
    predicted = {
        (kind, sample["breakdown"]["ID"]): sample["breakdown"]["predicted"]
        for kind, task in (("f2c", "scifibench_cs_figure2caption"), ("c2f", "scifibench_cs_caption2figure"))
        for sample in run.samples(task)
    }
    assert predicted == expected
    answers = {("f2c", row["ID"]): row["Answer"] for row in f2c} | {("c2f", row["ID"]): row["Answer"] for row in c2f}
    correct = sum(expected[key] == answer for key, answer in answers.items())
    assert run.results()["groups"]["scifibench_cs"]["accuracy,none"] == correct / 14
    assert run.results()["groups"]["scifibench_cs"]["breakdown,none"]["flags"]["resolution"] == {"rule": 14}


def test_the_row_query_comes_from_the_benchmarks_description() -> None:
    """scifig_clip asks the registry what a row compares (SciFIBench's ``contrastive`` rule); a task whose benchmark
    declares none is refused in one line naming it."""
    from scifig_tasks.lmms_eval.clip_model import query_of

    row = {"Question": "Which figure best matches the caption?", "Options": ["A) one", "B) two"]}
    assert query_of("scifibench_cs_figure2caption", row, 1).texts == ("one", "two")
    with pytest.raises(ValueError, match="scifig_clip cannot answer task 'grab_properties'"):
        query_of("grab_properties", {}, 1)
