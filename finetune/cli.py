"""``scifig finetune`` (LoRA recipe) and ``scifig finetune-data`` (convert curated data to the SFT jsonl format).

* ``scifig finetune --config CONFIG [--merge] [--output-dir DIR] [--max-steps N] [--device cpu]`` — CONFIG is a YAML
  path or a packaged config name (``qwen2_vl_7b_mmsci_lora``). Multi-GPU:
  ``accelerate launch --num_processes 8 -m scifig_tasks.cli finetune --config ...``.
* ``scifig finetune-data --format {sft,scifibench,grab} --input PATH --out DIR [--limit N]`` — writes
  ``DIR/train.jsonl`` + ``DIR/images/`` (streaming), e.g. to mix several sources in one training file.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from scifig_finetune.config import ConfigError, load_config, packaged_configs
from scifig_finetune.data import FORMATS

from scifig_tasks.core.errors import DataError


def run_finetune(args: Any) -> int:
    from scifig_finetune.train import train

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"scifig finetune: {exc}", file=sys.stderr)
        return 2
    if args.output_dir is not None:
        config = replace(config, output_dir=args.output_dir)
    changes = {}
    if args.max_steps is not None:
        changes["max_steps"] = args.max_steps
    if args.device is not None:
        changes["device"] = args.device
    if changes:
        config = replace(config, train=replace(config.train, **changes))
    try:
        out = train(config, merge=args.merge)
    except (DataError, ValueError) as exc:
        print(f"scifig finetune: {exc}", file=sys.stderr)
        return 1
    print(f"adapter: {out / 'adapter'}" + (f"\nmerged model: {out / 'merged'}" if args.merge else ""))
    return 0


def run_convert(args: Any) -> int:
    from scifig_finetune.data import examples_from, write_sft_jsonl

    try:
        count = write_sft_jsonl(examples_from(args.format, args.input, args.limit), args.out)
    except (DataError, ValueError) as exc:
        print(f"scifig finetune-data: {exc}", file=sys.stderr)
        return 1
    print(f"{count} example(s) written to {args.out / 'train.jsonl'}")
    return 0


def register(commands: Any) -> None:
    names = ", ".join(packaged_configs())
    parser = commands.add_parser("finetune", help="LoRA fine-tuning of Qwen2-VL on curated data (MMSci recipe)")
    parser.add_argument("--config", required=True, help=f"YAML path or packaged config name ({names})")
    parser.add_argument("--merge", action="store_true", help="also write OUTPUT/merged: base + adapter, full model")
    parser.add_argument("--output-dir", type=Path, default=None, help="override the config's output_dir")
    parser.add_argument("--max-steps", type=int, default=None, help="override train.max_steps (-1: epochs decide)")
    parser.add_argument("--device", choices=("cpu",), default=None, help="force the CPU (tiny models, tests)")
    parser.set_defaults(handler=run_finetune)

    convert = commands.add_parser("finetune-data", help="convert curated data to the SFT chat jsonl format")
    convert.add_argument("--format", choices=FORMATS, required=True)
    convert.add_argument("--input", type=Path, required=True, help="SFT jsonl, SciFIBench parquet(s) or GRAB output")
    convert.add_argument("--out", type=Path, required=True, help="output folder (train.jsonl + images/)")
    convert.add_argument("--limit", type=int, default=None)
    convert.set_defaults(handler=run_convert)
