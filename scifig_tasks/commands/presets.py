"""``scifig presets``: list the model presets, show one's lmms-eval command, check them against the installed
frameworks.

* ``scifig presets`` — a table: name, backend, lmms-eval model, VLMEvalKit equivalent (100 columns at most).
* ``scifig presets NAME`` — the preset's lmms-eval command line (credentials as variable names) and its fields.
* ``scifig presets --check`` — every preset is schema-valid, its lmms-eval model name resolves in lmms-eval's model
  registry, every model arg is a named parameter of the model class (lmms-eval's HF classes reject unknown args; its
  ``openai`` class ignores them), and, when VLMEvalKit is importable, its ``vlmeval_model`` is in
  ``vlmeval.config.supported_VLM``. Exit status 1 on any problem.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.core.model_presets import Preset, PresetError, list_presets, load_preset
from scifig_tasks.lmms_eval.preset_arguments import command


def model_parameters(cls: type) -> set[str]:
    """Keyword names an lmms-eval model class accepts: its ``__init__`` parameters, plus its parents' while an
    ``__init__`` takes ``**kwargs`` (forwarded up the MRO)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]
        names |= {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return names


def check_lmms_eval(preset: Preset) -> list[str]:
    """Problems of ``preset`` against the installed lmms-eval (empty when it would be accepted)."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    try:
        MODEL_REGISTRY_V2.resolve(preset.lmms_model)
    except ValueError:
        return [f"{preset.source}: lmms-eval has no model {preset.lmms_model!r} (key 'lmms_eval.model')"]
    try:
        cls = MODEL_REGISTRY_V2.get_model_class(preset.lmms_model)
    except Exception as exc:  # an optional dependency of the model class is missing
        return [f"{preset.source}: lmms-eval model {preset.lmms_model!r} does not import here: {exc}"]
    accepted = model_parameters(cls)
    return [
        f"{preset.source}: key 'lmms_eval.model_args.{name}' is not a parameter of {cls.__module__}.{cls.__name__}"
        for name in preset.model_args
        if name not in accepted
    ]


def check_vlmeval(preset: Preset) -> list[str] | None:
    """Problems of ``preset.vlmeval_model`` against VLMEvalKit's model table; None when VLMEvalKit is not installed."""
    try:
        from vlmeval.config import supported_VLM
    except ImportError:
        return None
    if preset.vlmeval_model is None or preset.vlmeval_model in supported_VLM:
        return []
    return [f"{preset.source}: VLMEvalKit has no model {preset.vlmeval_model!r} (key 'vlmeval_model')"]


WIDTH = 100
"""``scifig presets`` fits a terminal of this many columns."""


def table(presets: list[Preset]) -> str:
    """The presets as an aligned Markdown table (name, backend, lmms-eval model, VLMEvalKit model), at most
    :data:`WIDTH` columns; each preset's description is in ``scifig presets NAME``."""
    header = ("preset", "backend", "lmms-eval model", "VLMEvalKit model")
    rows = [
        (f"`{p.name}`", p.backend, f"`{p.lmms_model}`", f"`{p.vlmeval_model}`" if p.vlmeval_model else "—")
        for p in presets
    ]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    hint = "scifig presets NAME: a preset's description, lmms-eval command and fields"
    return "\n".join([line(header), rule, *map(line, rows), "", hint])


def show(preset: Preset) -> str:
    lines = [f"{preset.name}: {preset.description}", f"  file: {preset.source}", f"  command: {command(preset)}"]
    if preset.endpoint is not None:
        hint = f" (e.g. {preset.endpoint.base_url_hint})" if preset.endpoint.base_url_hint else ""
        lines.append(f"  needs: {preset.endpoint.base_url_env}{hint} and {preset.endpoint.api_key_env}")
    lines.append(f"  VLMEvalKit: {preset.vlmeval_model or 'no equivalent'}")
    if preset.papers:
        lines.append(f"  papers: {', '.join(preset.papers)}")
    if preset.notes:
        lines.append(f"  notes: {preset.notes}")
    return "\n".join(lines)


def run(args: Any) -> int:
    try:
        if args.name:
            print(show(load_preset(args.name)))
            return 0
        presets = list_presets()
    except PresetError as exc:
        print(f"scifig presets: {exc}", file=sys.stderr)
        return 1
    if not args.check:
        print(table(presets))
        return 0
    problems: list[str] = []
    vlmeval_checked = True
    for preset in presets:
        problems += check_lmms_eval(preset)
        found = check_vlmeval(preset)
        if found is None:
            vlmeval_checked = False
        else:
            problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    checked = "lmms-eval and VLMEvalKit" if vlmeval_checked else "lmms-eval (VLMEvalKit not installed: skipped)"
    print(f"{len(presets)} preset(s) checked against {checked}: {len(problems)} problem(s)")
    return 1 if problems else 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "presets",
        help=HELP["presets"],
        description=(
            "A model preset names a model the papers evaluated and the lmms-eval arguments that run it (model, "
            "model_args, endpoint variables), with its VLMEvalKit equivalent. Without arguments: the table of "
            "presets. With NAME: that preset's lmms-eval command and fields. With --check: every preset checked "
            "against the installed lmms-eval (and VLMEvalKit); exit status 1 on any problem."
        ),
        epilog=(
            "examples:\n"
            "  scifig presets\n"
            "  scifig presets qwen2-vl-7b-instruct\n"
            "  scifig eval --preset qwen2-vl-7b-instruct --tasks grab --output_path runs"
        ),
    )
    parser.add_argument("name", nargs="?", help="show one preset (a name or a YAML path)")
    parser.add_argument("--check", action="store_true", help="check every preset against the installed frameworks")
    parser.set_defaults(handler=run)
