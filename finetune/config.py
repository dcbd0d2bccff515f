"""Fine-tuning configuration: YAML files in ``finetune/configs/`` (packaged) or anywhere, validated with errors that
name the file and the key.

Defaults are the MMSci paper's Table 9 (Qwen2-VL-7B-Instruct, authors' LLaMA-Factory run): LoRA on
``q_proj,k_proj,v_proj,o_proj,up_proj,gate_proj,down_proj`` of the language model, 1 epoch, global batch 8,
learning rate 1e-4 with a cosine schedule and warmup ratio 0.1, weight decay 0, max length 4096. The paper does not
state the LoRA rank, alpha or dropout; the defaults are LLaMA-Factory's (rank 8, alpha 16, dropout 0).

``data[*].path`` may use ``$VARS`` (e.g. ``${SCIFIG_MMSCI_DATA}/sft/train.jsonl``); relative paths are resolved
against the config file's folder; ``output_dir`` relative paths against the working directory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from scifig_finetune.data import FORMATS

from scifig_tasks.core import errors

TABLE9_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "gate_proj", "down_proj")


class ConfigError(errors.ConfigError):
    """A bad fine-tuning configuration, located by file and key."""

    kind = "fine-tuning config"


@dataclass(frozen=True)
class DataSource:
    format: str
    path: Path
    limit: int | None = None


@dataclass(frozen=True)
class LoraSettings:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = TABLE9_TARGETS


@dataclass(frozen=True)
class TrainSettings:
    num_train_epochs: float = 1.0
    max_steps: int = -1
    global_batch_size: int = 8
    per_device_batch_size: int = 1
    learning_rate: float = 1e-4
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    bf16: bool = True
    gradient_checkpointing: bool = True
    seed: int = 42
    logging_steps: int = 10
    save_steps: int = 500
    dataloader_num_workers: int = 2
    device: str | None = None  # None: accelerate decides (GPUs when present); "cpu" forces the CPU


@dataclass(frozen=True)
class FinetuneConfig:
    source: str
    model: str
    output_dir: Path
    data: tuple[DataSource, ...]
    max_length: int = 4096
    image_min_pixels: int = 3136
    image_max_pixels: int = 602112
    lora: LoraSettings = field(default_factory=LoraSettings)
    train: TrainSettings = field(default_factory=TrainSettings)

    def with_overrides(self, **changes: Any) -> FinetuneConfig:
        return replace(self, **changes)


def _check(source: str, key: str, value: Any, kind: type | tuple[type, ...], positive: bool = False) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and int not in kinds:
        kinds = (*kinds, int)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ConfigError(source, key, f"must be {names}, got {type(value).__name__} {value!r}")
    if positive and not isinstance(value, bool) and value <= 0:
        raise ConfigError(source, key, f"must be > 0, got {value!r}")
    return float(value) if kinds[0] is float else value


def _section(source: str, prefix: str, data: Any, settings: type, conversions: dict[str, Any]) -> Any:
    if data is None:
        return settings()
    if not isinstance(data, dict):
        raise ConfigError(source, prefix, f"must be a mapping, got {type(data).__name__}")
    fields = settings.__dataclass_fields__
    values = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(source, f"{prefix}.{key}", f"unknown key (allowed: {', '.join(fields)})")
        values[key] = conversions[key](f"{prefix}.{key}", value)
    return settings(**values)


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _path(source: str, key: str, value: Any, base: Path | None) -> Path:
    _check(source, key, value, str)
    missing = [name for name in _VARIABLE.findall(value) if name not in os.environ]
    if missing:
        raise ConfigError(source, key, f"environment variable {missing[0]} is not set (path {value!r})")
    path = Path(os.path.expandvars(value)).expanduser()
    return path if path.is_absolute() or base is None else base / path


def parse_config(data: Any, source: str, base: Path | None = None) -> FinetuneConfig:
    """Validate a loaded YAML mapping; ``base`` resolves relative data paths."""
    if not isinstance(data, dict):
        raise ConfigError(source, None, f"expected a mapping, got {type(data).__name__}")
    allowed = FinetuneConfig.__dataclass_fields__.keys() - {"source"}
    for key in data:
        if key not in allowed:
            raise ConfigError(source, key, f"unknown key (allowed: {', '.join(sorted(allowed))})")
    for key in ("model", "output_dir", "data"):
        if key not in data:
            raise ConfigError(source, key, "missing required key")
    model = _check(source, "model", data["model"], str)
    output_dir = Path(os.path.expandvars(_check(source, "output_dir", data["output_dir"], str))).expanduser()
    entries = data["data"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(source, "data", "must be a non-empty list of {format, path[, limit]}")
    sources = []
    for index, entry in enumerate(entries):
        key = f"data[{index}]"
        if not isinstance(entry, dict) or not {"format", "path"} <= set(entry) <= {"format", "path", "limit"}:
            raise ConfigError(source, key, "must be a mapping with keys format, path and optional limit")
        if entry["format"] not in FORMATS:
            raise ConfigError(source, f"{key}.format", f"must be one of {', '.join(FORMATS)}, got {entry['format']!r}")
        limit = entry.get("limit")
        if limit is not None:
            _check(source, f"{key}.limit", limit, int, positive=True)
        sources.append(DataSource(entry["format"], _path(source, f"{key}.path", entry["path"], base), limit))
    ints = {name: (lambda key, value: _check(source, key, value, int, positive=True)) for name in ("r", "alpha")}
    lora = _section(
        source,
        "lora",
        data.get("lora"),
        LoraSettings,
        {
            **ints,
            "dropout": lambda key, value: _check(source, key, value, float),
            "target_modules": lambda key, value: _targets(source, key, value),
        },
    )
    train_types: dict[str, Any] = {
        "num_train_epochs": (float, True),
        "max_steps": (int, False),
        "global_batch_size": (int, True),
        "per_device_batch_size": (int, True),
        "learning_rate": (float, True),
        "lr_scheduler_type": (str, False),
        "warmup_ratio": (float, False),
        "weight_decay": (float, False),
        "bf16": (bool, False),
        "gradient_checkpointing": (bool, False),
        "seed": (int, False),
        "logging_steps": (int, True),
        "save_steps": (int, True),
        "dataloader_num_workers": (int, False),
        "device": ((str, type(None)), False),
    }
    train = _section(
        source,
        "train",
        data.get("train"),
        TrainSettings,
        {
            name: (lambda key, value, kind=kind, positive=positive: _check(source, key, value, kind, positive))
            for name, (kind, positive) in train_types.items()
        },
    )
    if train.global_batch_size % train.per_device_batch_size:
        raise ConfigError(source, "train.global_batch_size", "must be a multiple of train.per_device_batch_size")
    if not 0 <= train.warmup_ratio < 1:
        raise ConfigError(source, "train.warmup_ratio", f"must be in [0, 1), got {train.warmup_ratio}")
    numbers = {
        key: _check(source, key, data[key], int, positive=True)
        for key in ("max_length", "image_min_pixels", "image_max_pixels")
        if key in data
    }
    return FinetuneConfig(
        source=source, model=model, output_dir=output_dir, data=tuple(sources), lora=lora, train=train, **numbers
    )


def _targets(source: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(source, key, "must be a non-empty list of module names")
    return tuple(value)


def packaged_configs() -> dict[str, Path]:
    """Configs shipped with the package, by name (file name without ``.yaml``)."""
    folder = Path(str(resources.files("scifig_finetune") / "configs"))
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def load_config(name_or_path: str | Path) -> FinetuneConfig:
    """Load a config from a YAML path or a packaged config name (``qwen2_vl_7b_mmsci_lora``)."""
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        configs = packaged_configs()
        if str(name_or_path) not in configs:
            raise ConfigError(
                str(name_or_path), None, f"no such file or packaged config (packaged: {', '.join(configs) or 'none'})"
            )
        path = configs[str(name_or_path)]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), None, f"invalid YAML: {exc}") from None
    return parse_config(data, str(path), base=path.parent)
