"""LoRA fine-tuning of Qwen2-VL (MMSci paper, Table 9) with transformers' Trainer, PEFT and accelerate: LoRA on the
language model's projections, the vision tower frozen, loss on assistant tokens only.
Manual: finetune/README.md, "What is trained" and "Outputs".
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scifig_finetune.config import FinetuneConfig
from scifig_finetune.data import SftExample, examples_from
from scifig_finetune.encode import Collator, Encoder

from scifig_tasks.core.errors import DataError

logger = logging.getLogger("scifig.finetune")

ADAPTER_DIR = "adapter"
MERGED_DIR = "merged"


def language_model_targets(names: Sequence[str]) -> str:
    """PEFT ``target_modules`` regex: the named projections anywhere except in the vision tower (``visual``)."""
    alternatives = "|".join(sorted(set(names)))
    return rf"^(?!.*\bvisual\b).*\.({alternatives})$"


def load_processor(model: str, config: FinetuneConfig) -> Any:
    from transformers import AutoProcessor

    size = {"shortest_edge": config.image_min_pixels, "longest_edge": config.image_max_pixels}  # pixel counts
    return AutoProcessor.from_pretrained(model, size=size)


class PlannedDataset:
    """Map-style dataset over the kept examples; encodes (and loads the images of) one example per access."""

    def __init__(self, examples: Sequence[SftExample], encoder: Encoder) -> None:
        self.examples, self.encoder = list(examples), encoder

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.encoder.encode(self.examples[index])


def prepare_data(config: FinetuneConfig, encoder: Encoder) -> tuple[list[SftExample], dict[str, Any]]:
    """Read every source, plan each example; returns the kept examples and the report (never silently drops)."""
    kept: list[SftExample] = []
    report: dict[str, Any] = {"max_length": config.max_length, "sources": []}
    for source in config.data:
        counts: Counter[str] = Counter()
        longest = 0
        for example in examples_from(source.format, source.path, source.limit):
            try:
                plan = encoder.plan(example)
            except (OSError, ValueError) as exc:  # unreadable image, template problem
                raise DataError(str(source.path), None, "images", f"example {example.id!r}: {exc}") from None
            counts[plan.action] += 1
            longest = max(longest, plan.length)
            if plan.action != "drop":
                kept.append(example)
        entry = {
            "format": source.format,
            "path": str(source.path),
            "read": sum(counts.values()),
            "kept": counts["keep"],
            "truncated": counts["truncate"],
            "dropped": counts["drop"],
            "longest_tokens": longest,
        }
        report["sources"].append(entry)
        if counts["truncate"] or counts["drop"]:
            logger.warning(
                "%s: %d example(s) longer than %d tokens: %d truncated at the end, %d dropped (images do not fit)",
                source.path,
                counts["truncate"] + counts["drop"],
                config.max_length,
                counts["truncate"],
                counts["drop"],
            )
    if not kept:
        raise ValueError(f"{config.source}: no training examples left after reading {len(config.data)} source(s)")
    report["examples"] = len(kept)
    return kept, report


def gradient_accumulation(config: FinetuneConfig, world_size: int) -> int:
    per_step = config.train.per_device_batch_size * world_size
    if config.train.global_batch_size % per_step:
        raise ValueError(
            f"{config.source}: train.global_batch_size {config.train.global_batch_size} is not a multiple of "
            f"per_device_batch_size {config.train.per_device_batch_size} x {world_size} process(es)"
        )
    return config.train.global_batch_size // per_step


def _model_dtype(config: FinetuneConfig) -> Any:
    import torch

    return torch.bfloat16 if config.train.bf16 else torch.float32


def check_base_model(config: FinetuneConfig) -> str | None:
    """The base model checked before anything is loaded or trained, by the rule every model scifig fetches at run
    time follows (:func:`scifig_tasks.core.hub_cache.check_model`): a local folder, or a Hub id in the local Hugging
    Face cache, goes ahead; one not cached is :class:`~scifig_tasks.core.hub_cache.Unavailable` at once (one line, exit
    status 1) when offline or when the Hub cannot be reached, instead of transformers retrying every file of it for
    minutes. Returns the line saying the run went offline (the model cached, the Hub silent), else ``None``."""
    from scifig_finetune.config import packaged_configs

    from scifig_tasks.core.hub_cache import check_model

    packaged = Path(config.source) in packaged_configs().values()
    folder = "a local model folder (a copy of the model)"
    instead = (
        f"copy {config.source}, set its model: to {folder} and run scifig finetune --config COPY"
        if packaged
        else f"set model: in {config.source} to {folder}"
    )
    return check_model(config.model, f"base model {config.model} (model: of {config.source})", instead)


def train(config: FinetuneConfig, merge: bool = False) -> Path:
    """Run the recipe; returns the output directory. The base model is checked first (:func:`check_base_model`)."""
    went_offline = check_base_model(config)
    if went_offline is not None:
        logger.warning("%s", went_offline)
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText, Trainer, TrainingArguments, set_seed

    settings = config.train
    set_seed(settings.seed)
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    processor = load_processor(config.model, config)
    encoder = Encoder(processor, config.max_length)
    examples, report = prepare_data(config, encoder)
    (out / "data_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    accumulation = gradient_accumulation(config, world_size)
    model = AutoModelForImageTextToText.from_pretrained(config.model, dtype=_model_dtype(config))
    model.config.use_cache = False
    lora = LoraConfig(
        r=config.lora.r,
        lora_alpha=config.lora.alpha,
        lora_dropout=config.lora.dropout,
        target_modules=language_model_targets(config.lora.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if trainable == 0:
        raise ValueError(f"{config.source}: lora.target_modules matched no module of {config.model}")
    logger.info("LoRA: %d trainable parameters", trainable)

    arguments = TrainingArguments(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=settings.per_device_batch_size,
        gradient_accumulation_steps=accumulation,
        num_train_epochs=settings.num_train_epochs,
        max_steps=settings.max_steps,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler_type,
        warmup_steps=settings.warmup_ratio,
        weight_decay=settings.weight_decay,
        bf16=settings.bf16,
        gradient_checkpointing=settings.gradient_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if settings.gradient_checkpointing else None,
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=settings.save_steps,
        seed=settings.seed,
        data_seed=settings.seed,
        report_to="none",
        remove_unused_columns=False,
        dataloader_num_workers=settings.dataloader_num_workers,
        use_cpu=settings.device == "cpu",
        disable_tqdm=False,
    )
    trainer = Trainer(
        model=model,
        args=arguments,
        train_dataset=PlannedDataset(examples, encoder),
        data_collator=Collator(processor.tokenizer.pad_token_id or 0),
    )
    trainer.train()
    if trainer.is_world_process_zero():
        adapter = out / ADAPTER_DIR
        model.save_pretrained(str(adapter))
        processor.save_pretrained(str(adapter))
        log = {
            "config": _jsonable(asdict(config)),
            "world_size": world_size,
            "gradient_accumulation_steps": accumulation,
            "trainable_parameters": trainable,
            "log_history": trainer.state.log_history,
        }
        (out / "train_log.json").write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
        if merge:
            del trainer, model
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            merge_adapter(config.model, adapter, out / MERGED_DIR, dtype=_model_dtype(config))
    return out


def merge_adapter(base: str, adapter: Path, out: Path, dtype: Any = None) -> Path:
    """Reload ``base`` + the saved ``adapter``, merge the LoRA weights and save a full model directory (+ processor)."""
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(base, dtype=dtype)
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(str(out))
    AutoProcessor.from_pretrained(str(adapter)).save_pretrained(str(out))
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value
