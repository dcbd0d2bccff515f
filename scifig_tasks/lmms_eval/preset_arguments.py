"""A model preset as lmms-eval arguments: ``scifig eval --preset NAME`` and ``scifig presets NAME`` (the preset files
and their schema: :mod:`scifig_tasks.core.model_presets`).

Manual: docs/lmms-eval.md, "Model presets as lmms-eval arguments".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from scifig_tasks.core.model_presets import Preset, PresetError, load_preset


def lmms_eval_args(preset: Preset, user_args: Sequence[str] = ()) -> list[str]:
    """lmms-eval CLI arguments for ``preset`` followed by ``user_args``; explicit user arguments win."""
    user = list(user_args)
    model_args = {**{key: _format(value) for key, value in preset.model_args.items()}}
    gen_kwargs = {**{key: _format(value) for key, value in preset.gen_kwargs.items()}}
    user_model_args, user = _pop_option(user, "--model_args")
    user_gen_kwargs, user = _pop_option(user, "--gen_kwargs")
    for given, merged in ((user_model_args, model_args), (user_gen_kwargs, gen_kwargs)):
        for item in given:
            merged.update(_split_pairs(item))
    user_model, user = _pop_option(user, "--model")
    if any(model != preset.lmms_model for model in user_model):
        raise PresetError(
            preset.source,
            "lmms_eval.model",
            f"--model {user_model[-1]} conflicts with the preset's {preset.lmms_model}",
        )
    args: list[str] = ["--model", preset.lmms_model]
    if model_args:
        args += ["--model_args", _join_pairs(model_args)]
    if gen_kwargs:
        args += ["--gen_kwargs", _join_pairs(gen_kwargs)]
    if preset.seed is not None and not _has_option(user, "--seed"):
        args += ["--seed", str(preset.seed)]
    if preset.batch_size is not None and not _has_option(user, "--batch_size", "-b"):
        args += ["--batch_size", str(preset.batch_size)]
    return args + user


def environment(preset: Preset, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables to set for lmms-eval's ``openai`` model (``OPENAI_API_BASE``, ``OPENAI_API_KEY``), read from the
    endpoint's variables; empty for local backends. Raises :class:`PresetError` naming an unset variable."""
    if preset.endpoint is None:
        return {}
    env = os.environ if environ is None else environ
    base_url = env.get(preset.endpoint.base_url_env, "").strip()
    if not base_url:
        hint = f" (e.g. {preset.endpoint.base_url_hint})" if preset.endpoint.base_url_hint else ""
        raise PresetError(preset.source, "endpoint.base_url_env", f"set {preset.endpoint.base_url_env}{hint}")
    key = env.get(preset.endpoint.api_key_env, "")
    if not key:
        raise PresetError(preset.source, "endpoint.api_key_env", f"set {preset.endpoint.api_key_env} (the API key)")
    return {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": key}


def command(preset: Preset) -> str:
    """The equivalent ``lmms-eval`` command line (credentials appear as variable names only)."""
    import shlex

    prefix = ""
    if preset.endpoint is not None:
        prefix = (
            f"OPENAI_API_BASE=${preset.endpoint.base_url_env} OPENAI_API_KEY=${preset.endpoint.api_key_env} "
            if (preset.endpoint.base_url_env, preset.endpoint.api_key_env) != ("OPENAI_API_BASE", "OPENAI_API_KEY")
            else ""
        )
    return prefix + "lmms-eval " + " ".join(shlex.quote(arg) for arg in lmms_eval_args(preset))


def _format(value: Any) -> str:
    return str(value)


def _split_pairs(text: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PresetError("command line", None, f"cannot parse {item!r} (expected key=value)")
        pairs[key.strip()] = value.strip()
    return pairs


def _join_pairs(pairs: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in pairs.items())


def _has_option(argv: Sequence[str], *names: str) -> bool:
    return any(arg in names or any(arg.startswith(f"{name}=") for name in names) for arg in argv)


def _pop_option(argv: Sequence[str], name: str) -> tuple[list[str], list[str]]:
    """Values of every ``name VALUE`` / ``name=VALUE`` in ``argv`` and the remaining arguments."""
    values, rest, index = [], [], 0
    argv = list(argv)
    while index < len(argv):
        arg = argv[index]
        if arg == name:
            if index + 1 >= len(argv):
                raise PresetError("command line", None, f"{name} needs a value")
            values.append(argv[index + 1])
            index += 2
            continue
        if arg.startswith(f"{name}="):
            values.append(arg[len(name) + 1 :])
        else:
            rest.append(arg)
        index += 1
    return values, rest


def apply_preset(argv: Sequence[str], environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Expand ``--preset NAME`` in lmms-eval arguments; sets the endpoint variables in ``environ`` (default
    ``os.environ``). Arguments without ``--preset`` are returned unchanged."""
    names, rest = _pop_option(argv, "--preset")
    if not names:
        return list(argv)
    if len(names) > 1:
        raise PresetError("command line", None, "--preset given more than once")
    preset = load_preset(names[0])
    env = os.environ if environ is None else environ
    env.update(environment(preset, env))
    return lmms_eval_args(preset, rest)
