"""``scifig finetune`` (LoRA recipe) and ``scifig finetune-data`` (convert curated data to the SFT jsonl format).

* ``scifig finetune --config CONFIG [--merge] [--output-dir DIR] [--max-steps N] [--device cpu]`` — CONFIG is a YAML
  path or a packaged config name (``qwen2_vl_7b_mmsci_lora``). Multi-GPU:
  ``accelerate launch --num_processes 8 -m scifig_tasks.commands.main finetune --config ...``.
* ``scifig finetune-data --format {sft,scifibench,grab} --input PATH --out DIR [--limit N]`` — writes
  ``DIR/train.jsonl`` + ``DIR/images/`` (streaming), e.g. to mix several sources in one training file.
"""

from __future__ import annotations

import itertools
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
    """Convert; an input that gives no example is an error saying what it holds (nothing is written), and an input
    that is data a benchmark evaluates is converted with a warning (:mod:`scifig_finetune.inputs`)."""
    from scifig_finetune.data import examples_from, input_files, write_sft_jsonl
    from scifig_finetune.inputs import evaluated, nothing_converted

    if args.limit is not None and args.limit < 1:
        print(f"scifig finetune-data: --limit {args.limit} converts nothing: give 1 or more", file=sys.stderr)
        return 2
    try:
        files = input_files(args.format, args.input)
        for warning in evaluated(files):
            print(f"scifig finetune-data: warning: {warning}", file=sys.stderr)
        examples = examples_from(args.format, args.input, args.limit)
        first = next(examples, None)
        if first is None:
            print(f"scifig finetune-data: {nothing_converted(args.format, args.input, files)}", file=sys.stderr)
            return 1
        count = write_sft_jsonl(itertools.chain([first], examples), args.out)
    except (DataError, ValueError) as exc:
        print(f"scifig finetune-data: {exc}", file=sys.stderr)
        return 1
    print(f"{count} example(s) written to {args.out / 'train.jsonl'}")
    return 0


FINETUNE_DESCRIPTION = """\
LoRA fine-tuning of a vision-language model (Qwen2-VL) on curated data, with transformers, PEFT and accelerate.
The packaged configs follow the MMSci paper's recipe (LoRA on the attention and MLP projections, 1 epoch, global
batch 8, learning rate 1e-4, cosine schedule) on the MMSci fine-tuning data (SCIFIG_MMSCI_DATA); a config can mix in
SciFIBench and GRAB data. Writes OUTPUT/adapter/ (and OUTPUT/merged/ with --merge), the training log and a data
report; evaluate the result with scifig eval. Several GPUs: run it under accelerate launch."""

FINETUNE_EPILOG = """\
examples:
  SCIFIG_MMSCI_DATA=/data/mmsci scifig finetune --config qwen2_vl_7b_mmsci_lora --merge
  accelerate launch --num_processes 8 "$(command -v scifig)" finetune --config qwen2_vl_7b_mmsci_lora --merge
  scifig eval --preset qwen2-vl-7b-instruct --model_args pretrained=runs/qwen2_vl_7b_mmsci_lora/merged \\
      --tasks mmsci --output_path results"""

DATA_DESCRIPTION = """\
Convert curated data to the chat format the fine-tuning reads (OUT/train.jsonl, one conversation per example, and
OUT/images/), streaming: the MMSci fine-tuning jsonl, SciFIBench's curated silver and bronze tiers (the gold tier is
the test set and is left out) or GRAB generator output, with the same prompts as the evaluation. Useful to inspect
the training data, or to convert a large set once and train from the jsonl. An input that gives no example is an
error saying what it holds; data a benchmark evaluates (the folder a SCIFIG_*_DATA setting points at, the published
dataset) is converted with a warning: training on it contaminates every later evaluation on it."""

DATA_EPILOG = """\
example:
  scifig finetune-data --format grab --input grab-data --out grab-sft --limit 5000"""


def register(commands: Any) -> None:
    names = ", ".join(packaged_configs())
    parser = commands.add_parser(
        "finetune",
        help="LoRA fine-tuning of Qwen2-VL on curated data (the MMSci paper's recipe)",
        description=FINETUNE_DESCRIPTION,
        epilog=FINETUNE_EPILOG,
    )
    parser.add_argument("--config", required=True, help=f"YAML path or packaged config name ({names})")
    parser.add_argument("--merge", action="store_true", help="also write OUTPUT/merged: base + adapter, full model")
    parser.add_argument("--output-dir", type=Path, default=None, help="override the config's output_dir")
    parser.add_argument("--max-steps", type=int, default=None, help="override train.max_steps (-1: epochs decide)")
    parser.add_argument("--device", choices=("cpu",), default=None, help="force the CPU (tiny models, tests)")
    parser.set_defaults(handler=run_finetune)

    convert = commands.add_parser(
        "finetune-data",
        help="convert curated data to the fine-tuning chat format (jsonl + images)",
        description=DATA_DESCRIPTION,
        epilog=DATA_EPILOG,
    )
    convert.add_argument(
        "--format",
        choices=FORMATS,
        required=True,
        help="sft: MMSci fine-tuning jsonl; scifibench: curated SciFIBench parquet(s); grab: GRAB generator output",
    )
    convert.add_argument("--input", type=Path, required=True, help="SFT jsonl, SciFIBench parquet(s) or GRAB output")
    convert.add_argument("--out", type=Path, required=True, help="output folder (train.jsonl + images/)")
    convert.add_argument("--limit", type=int, default=None, help="convert at most this many examples (default: all)")
    convert.set_defaults(handler=run_convert)
