"""Fine-tuning data and configuration: SFT jsonl validation, converters from curated SciFIBench / GRAB data, the
assistant-only loss mask, length planning, config validation and the packaged Table 9 config. No training here
(see tests/finetune/test_finetune.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image
from scifig_finetune.config import ConfigError, load_config, packaged_configs, parse_config
from scifig_finetune.data import (
    SftExample,
    examples_from,
    read_sft_jsonl,
    scifibench_examples,
    write_sft_jsonl,
)
from scifig_finetune.encode import IGNORE_INDEX, Collator, Encoder
from scifig_finetune.train import gradient_accumulation, language_model_targets

from scifig_tasks.core.errors import DataError
from tests.harness.tiny_qwen2_vl import MAX_PIXELS, MIN_PIXELS, build_tiny_qwen2_vl


def _png(size: tuple[int, int], colour: tuple[int, int, int] = (10, 200, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _write_sft(folder: Path, records: list[dict]) -> Path:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "images" / "a.png").write_bytes(_png((40, 30)))
    path = folder / "train.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


GOOD = {
    "id": "x",
    "source": "mmsci_mcq",
    "images": ["images/a.png"],
    "messages": [{"role": "user", "content": "<image>Q?"}, {"role": "assistant", "content": "A"}],
}


@pytest.mark.parametrize(
    ("record", "column", "problem"),
    [
        ({**GOOD, "images": ["images/missing.png"]}, "images[0]", "no image file 'images/missing.png' next to"),
        ({k: v for k, v in GOOD.items() if k != "source"}, "source", "missing"),
        ({**GOOD, "messages": [{"role": "user", "content": "<image>Q?"}]}, "messages", "no assistant turn"),
        (
            {**GOOD, "messages": [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A"}]},
            "messages[0].content",
            "has 0 <image> placeholder(s) for 1 image(s)",
        ),
        (
            {**GOOD, "messages": [{"role": "user", "content": "<image>Q"}, {"role": "system", "content": "A"}]},
            "messages[1].role",
            "must be one of user, assistant, got 'system'",
        ),
        (
            {
                **GOOD,
                "messages": [
                    {"role": "user", "content": "<image>Q"},
                    {"role": "assistant", "content": "A"},
                    {"role": "user", "content": "<image>again"},
                    {"role": "assistant", "content": "B"},
                ],
            },
            "messages[2].content",
            "placeholders belong in the first user turn",
        ),
        ({**GOOD, "messages": [{"role": "assistant", "content": "A"}], "images": []}, "messages[0].role", "must start"),
    ],
)
def test_sft_jsonl_errors_name_file_row_and_key(tmp_path: Path, record: dict, column: str, problem: str) -> None:
    path = _write_sft(tmp_path, [GOOD | {"id": "first"}, record])
    with pytest.raises(DataError) as error:
        list(read_sft_jsonl(path))
    assert (error.value.origin, error.value.row, error.value.column) == (str(path), 1, column)
    assert problem in error.value.problem


def test_sft_jsonl_rejects_duplicate_ids_and_bad_json(tmp_path: Path) -> None:
    path = _write_sft(tmp_path, [GOOD, GOOD])
    with pytest.raises(DataError, match=r"row 1 \(0-based\), column 'id': duplicate id 'x'"):
        list(read_sft_jsonl(path))
    path.write_text(json.dumps(GOOD) + "\n{not json\n")
    with pytest.raises(DataError, match=r"train.jsonl, row 1 \(0-based\): invalid JSON"):
        list(read_sft_jsonl(path))


def _scifibench_parquets(folder: Path) -> None:
    from curation.scifibench.writer import ParquetOut

    figure = {"bytes": _png((50, 40)), "path": None}
    base = {"Category": "cs.CV", "source_paper_id": "p", "option_figure_ids": ["f"] * 5, "difficulty": 0.5}
    f2c = ParquetOut(folder / "CS_Figure2Caption.parquet")
    options = ["A) cap one", "B) cap two", "C) cap three", "D) cap four", "E) cap five"]
    common = {**base, "Question": "Which caption best matches the image?", "Options": options, "Images": [figure]}
    f2c.write(
        [
            {**common, "ID": 7, "Answer": "C", "source_figure_id": "f7", "tier": "silver", "negatives": "nearest"},
            {**common, "ID": 8, "Answer": "A", "source_figure_id": "f8", "tier": "gold", "negatives": "nearest"},
            {**common, "ID": 9, "Answer": "B", "source_figure_id": "f9", "tier": "bronze", "negatives": "random"},
        ]
    )
    f2c.close()
    c2f = ParquetOut(folder / "CS_Caption2Figure.parquet")
    c2f.write(
        [
            {
                **base,
                "ID": 7,
                "Question": "Caption: A heat map. Which image best matches the caption?",
                "Options": [f"{letter}) image{index}" for index, letter in enumerate("ABCDE")],
                "Answer": "E",
                "Images": [{"bytes": _png((30 + index, 30)), "path": None} for index in range(5)],
                "source_figure_id": "f7",
                "tier": "bronze",
                "negatives": "nearest",
            }
        ]
    )
    c2f.close()


def test_scifibench_curated_parquet_becomes_the_evaluation_prompt(tmp_path: Path) -> None:
    _scifibench_parquets(tmp_path)
    examples = list(scifibench_examples(tmp_path))  # default: silver + bronze, nearest negatives
    assert [(example.id, example.source, len(example.images)) for example in examples] == [
        ("scifibench-CS_Caption2Figure-7", "scifibench_c2f", 5),
        ("scifibench-CS_Figure2Caption-7", "scifibench_f2c", 1),
    ]
    c2f, f2c = examples
    assert c2f.messages == (
        {
            "role": "user",
            "content": "A) <image>\nB) <image>\nC) <image>\nD) <image>\nE) <image>\nA heat map.\n"
            "Which of the images best matches the caption? Let's think step by step. "
            "Only provide the letter of the correct image as your answer. Answer:",
        },
        {"role": "assistant", "content": "E"},
    )
    assert f2c.messages == (
        {
            "role": "user",
            "content": "<image>A) cap one\nB) cap two\nC) cap three\nD) cap four\nE) cap five\n"
            "Which of the captions best describes the image? Let's think step by step. "
            "Only provide the letter of the correct caption as your answer. Answer:",
        },
        {"role": "assistant", "content": "C"},
    )
    with_gold = list(scifibench_examples(tmp_path, tiers=("gold",), negatives=("nearest", "random")))
    assert [example.id for example in with_gold] == ["scifibench-CS_Figure2Caption-8"]


@pytest.mark.slow
def test_grab_output_converts_and_round_trips_through_the_jsonl(tmp_path: Path) -> None:
    from curation.grab.build import build_grab

    built = build_grab(tmp_path / "grab", limit=2, tasks=["properties"], dpi=15, workers=1, progress=False)
    examples = list(examples_from("grab", built.out))
    pids = pq.read_table(built.out / "GRAB.parquet", columns=["pid"]).column("pid").to_pylist()
    assert pids[0] == 0 and [example.id for example in examples] == [f"grab-{pid}" for pid in pids]
    assert examples[0].messages == (
        {
            "role": "user",
            "content": "<image>\nWhat is the net area bounded by the function and x-axis? Give your answer to the "
            "nearest 10.\n Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. "
            "Answer: \n\n",
        },
        {"role": "assistant", "content": "-30"},
    )
    assert write_sft_jsonl(examples, tmp_path / "sft") == 2
    again = list(read_sft_jsonl(tmp_path / "sft" / "train.jsonl"))
    assert [(e.id, e.source, e.messages) for e in again] == [(e.id, e.source, e.messages) for e in examples]
    assert [Path(e.images[0]).read_bytes() for e in again] == [e.images[0] for e in examples]
    assert not (tmp_path / "sft" / "train.jsonl.partial").exists()


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Encoder:
    from transformers import AutoProcessor

    model = build_tiny_qwen2_vl(tmp_path_factory.mktemp("tiny"))
    processor = AutoProcessor.from_pretrained(model, size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS})
    return Encoder(processor, max_length=512)


def _example(size: tuple[int, int] = (60, 50)) -> SftExample:
    messages = (
        {"role": "user", "content": "<image>Which caption? A) x B) y"},
        {"role": "assistant", "content": "B"},
        {"role": "user", "content": "Why?"},
        {"role": "assistant", "content": "Because 42."},
    )
    return SftExample("e", "mmsci_mcq", (_png(size),), messages)


def _label_spans(encoded: dict, decode) -> list[str]:
    spans, current = [], []
    for token, label in zip(encoded["input_ids"].tolist(), encoded["labels"].tolist(), strict=True):
        if label != IGNORE_INDEX:
            assert label == token
            current.append(token)
        elif current:
            spans.append(decode(current))
            current = []
    return spans + ([decode(current)] if current else [])


def test_loss_mask_covers_exactly_the_assistant_turns(encoder: Encoder) -> None:
    encoded = encoder.encode(_example())
    assert _label_spans(encoded, encoder.tokenizer.decode) == ["B<|im_end|>\n", "Because 42.<|im_end|>\n"]
    # 60x50 -> resized to 56x56 (multiples of 28) -> 4x4 patches of 14 -> 2x2 merge -> 4 vision tokens
    assert encoded["image_grid_thw"].tolist() == [[1, 4, 4]]
    assert int((encoded["input_ids"] == encoder.image_token_id).sum()) == 4
    assert encoder.predicted_image_tokens(_example()) == [4]
    text = encoder.tokenizer.decode(encoded["input_ids"].tolist())
    assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n")


def test_length_plan_truncates_after_images_and_drops_when_images_do_not_fit(encoder: Encoder) -> None:
    full = encoder.plan(_example())
    assert full.action == "keep" and full.length == len(encoder.encode(_example())["input_ids"])
    short = Encoder(encoder.processor, max_length=full.length - 3)
    truncated = short.encode(_example())
    assert short.plan(_example()).action == "truncate"
    assert len(truncated["input_ids"]) == full.length - 3 == len(truncated["labels"])
    tiny = Encoder(encoder.processor, max_length=full.image_tokens_end)
    assert tiny.plan(_example()).action == "drop"
    with pytest.raises(ValueError, match=r"example 'e': \d+ tokens, images end at"):
        tiny.encode(_example())


def test_collator_pads_right_and_concatenates_images(encoder: Encoder) -> None:
    first, second = encoder.encode(_example()), encoder.encode(_example((120, 60)))
    batch = Collator(pad_token_id=0)([first, second])
    longest = max(len(first["input_ids"]), len(second["input_ids"]))
    assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape == (2, longest)
    shorter = 0 if len(first["input_ids"]) < longest else 1
    pad = longest - len((first, second)[shorter]["input_ids"])
    assert pad > 0
    assert batch["labels"][shorter, -pad:].tolist() == [IGNORE_INDEX] * pad
    assert batch["attention_mask"][shorter, -pad:].tolist() == [0] * pad
    assert batch["image_grid_thw"].tolist() == first["image_grid_thw"].tolist() + second["image_grid_thw"].tolist()


def test_lora_targets_skip_the_vision_tower() -> None:
    import re

    pattern = re.compile(language_model_targets(["q_proj", "down_proj"]))
    assert pattern.fullmatch("model.language_model.layers.0.self_attn.q_proj")
    assert pattern.fullmatch("model.language_model.layers.3.mlp.down_proj")
    assert not pattern.fullmatch("model.visual.blocks.0.mlp.down_proj")  # Qwen2.5-VL's vision MLP names
    assert not pattern.fullmatch("model.language_model.layers.0.self_attn.q_proj.lora_A")


def test_packaged_config_is_table_9(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sorted(packaged_configs()) == ["qwen2_vl_2b_mmsci_lora", "qwen2_vl_7b_mmsci_lora"]
    monkeypatch.setenv("SCIFIG_MMSCI_DATA", "/data/mmsci")
    config = load_config("qwen2_vl_7b_mmsci_lora")
    assert config.model == "Qwen/Qwen2-VL-7B-Instruct"
    assert [(source.format, str(source.path)) for source in config.data] == [("sft", "/data/mmsci/sft/train.jsonl")]
    assert config.lora.target_modules == ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "gate_proj", "down_proj")
    train = config.train
    assert (train.num_train_epochs, train.global_batch_size, train.learning_rate) == (1.0, 8, 1e-4)
    assert (train.lr_scheduler_type, train.warmup_ratio, train.weight_decay, config.max_length) == (
        "cosine",
        0.1,
        0.0,
        4096,
    )
    assert (train.bf16, train.gradient_checkpointing) == (True, True)
    assert gradient_accumulation(config, world_size=1) == 8
    assert gradient_accumulation(config, world_size=8) == 1
    with pytest.raises(ValueError, match="not a multiple of per_device_batch_size 1 x 3 process"):
        gradient_accumulation(config, world_size=3)
    monkeypatch.delenv("SCIFIG_MMSCI_DATA")
    with pytest.raises(ConfigError, match=r"key 'data\[0\].path': environment variable SCIFIG_MMSCI_DATA is not set"):
        load_config("qwen2_vl_7b_mmsci_lora")


MINIMAL = {"model": "m", "output_dir": "out", "data": [{"format": "sft", "path": "train.jsonl"}]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**MINIMAL, "lr": 1}, "key 'lr': unknown key (allowed: data, image_max_pixels, "),
        ({k: v for k, v in MINIMAL.items() if k != "model"}, "key 'model': missing required key"),
        (
            {**MINIMAL, "data": [{"format": "csv", "path": "x"}]},
            "key 'data[0].format': must be one of sft, scifibench,",
        ),
        ({**MINIMAL, "train": {"learning_rate": "1e-4"}}, "key 'train.learning_rate': must be float or int, got str"),
        ({**MINIMAL, "train": {"global_batch_size": 0}}, "key 'train.global_batch_size': must be > 0, got 0"),
        ({**MINIMAL, "train": {"bf16": 1}}, "key 'train.bf16': must be bool, got int 1"),
        ({**MINIMAL, "lora": {"rank": 8}}, "key 'lora.rank': unknown key (allowed: r, alpha, dropout, target_modules)"),
        ({**MINIMAL, "lora": {"target_modules": []}}, "key 'lora.target_modules': must be a non-empty list"),
        (
            {**MINIMAL, "train": {"global_batch_size": 8, "per_device_batch_size": 3}},
            "key 'train.global_batch_size': must be a multiple of train.per_device_batch_size",
        ),
    ],
)
def test_config_errors_name_the_file_and_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config(data, "my.yaml", base=Path("/cfg"))
    assert str(error.value).startswith(f"fine-tuning config my.yaml, {message}")


def test_relative_data_paths_resolve_against_the_config_folder() -> None:
    config = parse_config(MINIMAL, "my.yaml", base=Path("/cfg"))
    assert config.data[0].path == Path("/cfg/train.jsonl") and config.output_dir == Path("out")


def test_unreadable_image_stops_before_training_naming_the_example(tmp_path: Path, encoder: Encoder) -> None:
    from scifig_finetune.train import prepare_data

    path = _write_sft(tmp_path, [GOOD])
    (tmp_path / "images" / "a.png").write_bytes(b"not a png")
    config = parse_config({**MINIMAL, "data": [{"format": "sft", "path": str(path)}]}, "my.yaml")
    with pytest.raises(DataError) as error:
        prepare_data(config, encoder)
    assert (error.value.origin, error.value.column) == (str(path), "images")
    assert error.value.problem.startswith("example 'x': cannot identify image file")


def test_data_report_counts_truncated_and_dropped_examples(tmp_path: Path, encoder: Encoder) -> None:
    from scifig_finetune.train import prepare_data

    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "small.png").write_bytes(
        _png((40, 30))
    )  # resized up to 56x84: 4x6 patches / 2x2 merge = 6 tokens
    (tmp_path / "images" / "big.png").write_bytes(_png((400, 300)))  # down to 84x112: 6x8 patches = 12 tokens
    two = {"role": "user", "content": "<image><image>Q?"}
    records = [
        {**GOOD, "id": "small", "images": ["images/small.png"]},
        {**GOOD, "id": "big", "images": ["images/big.png"]},
        {**GOOD, "id": "two", "images": ["images/big.png"] * 2, "messages": [two, GOOD["messages"][1]]},
    ]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    small, big, both = (encoder.plan(example) for example in read_sft_jsonl(path))
    assert big.length - small.length == 6 and both.image_tokens_end - big.image_tokens_end == 14  # 12 + 2 markers
    cap = small.length  # small fits; big's images fit but its reply does not; two's images end after the cap
    assert big.image_tokens_end < cap < both.image_tokens_end
    config = parse_config({**MINIMAL, "data": [{"format": "sft", "path": str(path)}], "max_length": cap}, "my.yaml")
    kept, report = prepare_data(config, Encoder(encoder.processor, cap))
    assert [example.id for example in kept] == ["small", "big"]
    assert report["sources"][0] == {
        "format": "sft",
        "path": str(path),
        "read": 3,
        "kept": 1,
        "truncated": 1,
        "dropped": 1,
        "longest_tokens": both.length,
    }
