"""The LoRA recipe end to end on CPU: a tiny random Qwen2-VL, GRAB generator output plus MMSci-format multi-turn
SFT data, ``scifig finetune --merge`` through the real CLI, the adapter reloaded with PEFT, and the merged model
scored through the real lmms-eval CLI (``qwen2_vl`` model class) on the questions it was trained on.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from tests.harness.tiny_qwen2_vl import MAX_PIXELS, MIN_PIXELS, build_tiny_qwen2_vl

if importlib.util.find_spec("peft") is None:  # looked up, not imported: peft imports transformers and torch
    pytest.skip("peft is not installed", allow_module_level=True)
pytest.importorskip("decord", reason="lmms-eval's qwen2_vl model class imports decord")

GRAB_ROWS = 4
STEPS = 32


def _mmsci_sft(folder: Path) -> Path:
    """Two conversations in the MMSci SFT layout (schema.md): an MCQ turn, then a follow-up about a sub-figure."""
    (folder / "images").mkdir(parents=True)
    lines = []
    for index, colour in enumerate([(200, 30, 30), (30, 30, 200)]):
        Image.new("RGB", (70, 56), colour).save(folder / "images" / f"fig{index}.png")
        lines.append(
            {
                "id": f"mmsci-{index}",
                "source": "mmsci_subfigure",
                "images": [f"images/fig{index}.png"],
                "messages": [
                    {"role": "user", "content": "<image>Which of the following captions best describes the figure?"},
                    {"role": "assistant", "content": "AB"[index]},
                    {"role": "user", "content": "What does sub-figure (a) show?"},
                    {"role": "assistant", "content": f"A curve {index}."},
                ],
            }
        )
    path = folder / "train.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_lora_finetune_on_cpu_saves_reloads_and_evaluates(tmp_path: Path, lmms_env, run_cli) -> None:
    from curation.grab.build import build_grab

    model_dir = build_tiny_qwen2_vl(tmp_path / "tiny-qwen2-vl")
    grab = build_grab(tmp_path / "grab", limit=GRAB_ROWS, tasks=["properties"], dpi=20, workers=1, progress=False)
    sft = _mmsci_sft(tmp_path / "mmsci" / "sft")
    config = {
        "model": str(model_dir),
        "output_dir": str(tmp_path / "run"),
        "data": [{"format": "grab", "path": "grab"}, {"format": "sft", "path": "mmsci/sft/train.jsonl"}],
        "max_length": 1024,
        "image_min_pixels": MIN_PIXELS,
        "image_max_pixels": MAX_PIXELS,
        "train": {
            "global_batch_size": 4,
            "per_device_batch_size": 2,  # gradient accumulation 2
            "learning_rate": 0.03,
            "max_steps": STEPS,
            "logging_steps": 1,
            "save_steps": 1000,
            "bf16": False,
            "gradient_checkpointing": True,
            "dataloader_num_workers": 0,
            "seed": 0,
        },
    }
    config_path = tmp_path / "config.yaml"  # relative data paths resolve against this folder
    config_path.write_text(yaml.safe_dump(config))
    assert sft.is_file() and grab.rows == GRAB_ROWS

    command = [str(Path(sys.executable).parent / "scifig"), "finetune", "--config", str(config_path)]
    completed = subprocess.run(
        [*command, "--merge", "--device", "cpu"], env=lmms_env, capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]

    run = tmp_path / "run"
    report = json.loads((run / "data_report.json").read_text())
    assert [(s["format"], s["read"], s["kept"], s["dropped"]) for s in report["sources"]] == [
        ("grab", GRAB_ROWS, GRAB_ROWS, 0),
        ("sft", 2, 2, 0),
    ]
    log = json.loads((run / "train_log.json").read_text())
    assert log["gradient_accumulation_steps"] == 2
    losses = [entry["loss"] for entry in log["log_history"] if "loss" in entry]
    assert len(losses) == STEPS
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.5 * first, losses  # fixed seed: about 9.5 -> about 0.15 on this data

    # The adapter reloads onto the base model and equals the merged model; both differ from the base model.
    import torch
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    adapter_config = json.loads((run / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["r"] == 8 and adapter_config["lora_alpha"] == 16
    assert "visual" in adapter_config["target_modules"]  # the negative look-ahead that keeps the vision tower out
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    base = AutoModelForImageTextToText.from_pretrained(model_dir)
    base_logits = base(input_ids=ids).logits
    reloaded = PeftModel.from_pretrained(base, run / "adapter")
    assert {
        name.split(".lora_A")[0].rsplit(".", 1)[-1] for name, _ in reloaded.named_parameters() if "lora_A" in name
    } == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "up_proj",
        "gate_proj",
        "down_proj",
    }
    assert not any("visual" in name for name, _ in reloaded.named_parameters() if "lora_" in name)
    adapted_logits = reloaded(input_ids=ids).logits
    merged_logits = AutoModelForImageTextToText.from_pretrained(run / "merged")(input_ids=ids).logits
    assert torch.allclose(adapted_logits, merged_logits, atol=1e-4)
    assert not torch.allclose(base_logits, merged_logits, atol=1e-2)

    # The merged model through the real lmms-eval CLI: it answers the GRAB questions it was trained on.
    answers = pq.read_table(grab.out / "GRAB.parquet", columns=["answer"]).column("answer").to_pylist()
    model_args = (
        f"pretrained={run / 'merged'},device=cpu,device_map=cpu,min_pixels={MIN_PIXELS},max_pixels={MAX_PIXELS}"
    )
    args = ["--model", "qwen2_vl", "--model_args", model_args, "--tasks", "grab_properties"]
    args += ["--limit", str(GRAB_ROWS), "--gen_kwargs", "max_new_tokens=8", "--log_samples"]
    evaluation = run_cli("lmms-eval", args, {**lmms_env, "SCIFIG_GRAB_DATA": str(grab.out)}, tmp_path / "eval")
    assert evaluation.returncode == 0, evaluation.output[-4000:]
    results = evaluation.results()["results"]["grab_properties"]
    assert results["breakdown,none"]["overall"]["all"]["n"] == GRAB_ROWS
    samples = evaluation.samples("grab_properties")
    responses = [sample["filtered_resps"] for sample in samples]
    assert sorted(responses) == sorted(answers), responses
    assert results["accuracy,none"] == 1.0
