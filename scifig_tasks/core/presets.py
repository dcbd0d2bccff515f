"""Model presets: the papers' models and decoding settings, one name away, for lmms-eval and VLMEvalKit.

A preset is a YAML file in ``model_configs/models/`` (installed as ``scifig_model_configs/models``) or any YAML path::

    description: Qwen2-VL-7B-Instruct through Hugging Face transformers
    backend: hf                     # hf | vllm | openai | clip
    papers: [MMSci]                 # optional: which benchmark papers evaluated the model
    lmms_eval:
      model: qwen2_vl               # lmms-eval model name (resolved by its model registry)
      model_args: {pretrained: Qwen/Qwen2-VL-7B-Instruct}
      gen_kwargs: {temperature: 0, do_sample: false}
      seed: 0                       # optional: lmms-eval --seed (python, numpy, torch, fewshot)
      batch_size: 1                 # optional: lmms-eval --batch_size
    endpoint:                       # openai backend only: NAMES of environment variables, never values
      base_url_env: OPENAI_API_BASE
      api_key_env: OPENAI_API_KEY
      base_url_hint: https://api.openai.com/v1   # optional, shown when the variable is unset
    vlmeval_model: Qwen2-VL-7B-Instruct          # VLMEvalKit ``supported_VLM`` name, or null
    notes: ...                      # optional

Rules implemented:

* Schema: unknown, missing or mistyped keys raise :class:`PresetError` naming the file and the key. Secrets are never
  stored: model args named like ``api_key`` / ``base_url`` / ``token`` are refused; an endpoint names environment
  variables only.
* Expansion to lmms-eval arguments (:meth:`Preset.lmms_eval_args`): explicit user arguments win. ``--model_args``
  and ``--gen_kwargs`` are merged key by key (the user's value replaces the preset's for the same key); ``--seed`` and
  ``--batch_size`` given by the user replace the preset's; a ``--model`` other than the preset's is refused (the
  preset's model args would not fit it).
* API credentials reach lmms-eval's ``openai`` model through its environment variables ``OPENAI_API_BASE`` /
  ``OPENAI_API_KEY`` (:meth:`Preset.environment`), never through ``--model_args`` — lmms-eval writes model args into
  its results files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from scifig_tasks.core.errors import ConfigError

BACKENDS = ("hf", "vllm", "openai", "clip")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_ARG = re.compile(r"(api_?key|secret|token|password|base_url|api_base)", re.IGNORECASE)
_SCALAR = (str, int, float, bool)
_TOP_KEYS = {"description": True, "backend": True, "lmms_eval": True, "vlmeval_model": True}
_OPTIONAL_TOP = ("papers", "endpoint", "notes")
_LMMS_KEYS = ("model", "model_args", "gen_kwargs", "seed", "batch_size")
_ENDPOINT_KEYS = ("base_url_env", "api_key_env", "base_url_hint")
PRESETS_SUBDIR = "models"


class PresetError(ConfigError):
    """A bad preset (file and key named) or a preset that cannot be used in this environment."""

    kind = "model preset"


@dataclass(frozen=True)
class Endpoint:
    """Where an API model is reached: names of environment variables (values are read at use time only)."""

    base_url_env: str
    api_key_env: str
    base_url_hint: str | None = None


@dataclass(frozen=True)
class Preset:
    name: str
    source: str
    description: str
    backend: str
    lmms_model: str
    model_args: Mapping[str, Any] = field(default_factory=dict)
    gen_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    batch_size: int | None = None
    endpoint: Endpoint | None = None
    vlmeval_model: str | None = None
    papers: tuple[str, ...] = ()
    notes: str | None = None

    def lmms_eval_args(self, user_args: Sequence[str] = ()) -> list[str]:
        """lmms-eval CLI arguments for this preset followed by ``user_args``; explicit user arguments win."""
        user = list(user_args)
        model_args = {**{key: _format(value) for key, value in self.model_args.items()}}
        gen_kwargs = {**{key: _format(value) for key, value in self.gen_kwargs.items()}}
        user_model_args, user = _pop_option(user, "--model_args")
        user_gen_kwargs, user = _pop_option(user, "--gen_kwargs")
        for given, merged in ((user_model_args, model_args), (user_gen_kwargs, gen_kwargs)):
            for item in given:
                merged.update(_split_pairs(item))
        user_model, user = _pop_option(user, "--model")
        if any(model != self.lmms_model for model in user_model):
            raise PresetError(
                self.source,
                "lmms_eval.model",
                f"--model {user_model[-1]} conflicts with the preset's {self.lmms_model}",
            )
        args: list[str] = ["--model", self.lmms_model]
        if model_args:
            args += ["--model_args", _join_pairs(model_args)]
        if gen_kwargs:
            args += ["--gen_kwargs", _join_pairs(gen_kwargs)]
        if self.seed is not None and not _has_option(user, "--seed"):
            args += ["--seed", str(self.seed)]
        if self.batch_size is not None and not _has_option(user, "--batch_size", "-b"):
            args += ["--batch_size", str(self.batch_size)]
        return args + user

    def environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Variables to set for lmms-eval's ``openai`` model (``OPENAI_API_BASE``, ``OPENAI_API_KEY``), read from the
        endpoint's variables; empty for local backends. Raises :class:`PresetError` naming an unset variable."""
        if self.endpoint is None:
            return {}
        env = os.environ if environ is None else environ
        base_url = env.get(self.endpoint.base_url_env, "").strip()
        if not base_url:
            hint = f" (e.g. {self.endpoint.base_url_hint})" if self.endpoint.base_url_hint else ""
            raise PresetError(self.source, "endpoint.base_url_env", f"set {self.endpoint.base_url_env}{hint}")
        key = env.get(self.endpoint.api_key_env, "")
        if not key:
            raise PresetError(self.source, "endpoint.api_key_env", f"set {self.endpoint.api_key_env} (the API key)")
        return {"OPENAI_API_BASE": base_url, "OPENAI_API_KEY": key}

    def command(self) -> str:
        """The equivalent ``lmms-eval`` command line (credentials appear as variable names only)."""
        import shlex

        prefix = ""
        if self.endpoint is not None:
            prefix = (
                f"OPENAI_API_BASE=${self.endpoint.base_url_env} OPENAI_API_KEY=${self.endpoint.api_key_env} "
                if (self.endpoint.base_url_env, self.endpoint.api_key_env) != ("OPENAI_API_BASE", "OPENAI_API_KEY")
                else ""
            )
        return prefix + "lmms-eval " + " ".join(shlex.quote(arg) for arg in self.lmms_eval_args())


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


# --- loading and validation -------------------------------------------------------------------------------------


def presets_dir() -> Path:
    """The folder of shipped presets (``scifig_model_configs/models``; the source checkout's ``model_configs``)."""
    try:
        return Path(str(resources.files("scifig_model_configs") / PRESETS_SUBDIR))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "model_configs" / PRESETS_SUBDIR


def preset_names() -> list[str]:
    return sorted(path.stem for path in presets_dir().glob("*.yaml"))


def _require(source: str, key: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise PresetError(source, key, f"must be {what}, got {value!r}")
    if not isinstance(value, kind):
        raise PresetError(source, key, f"must be {what}, got {type(value).__name__} {value!r}")
    if isinstance(value, str) and not value.strip():
        raise PresetError(source, key, f"must be {what}, got an empty string")
    return value


def _mapping(source: str, key: str, value: Any, secrets_forbidden: bool) -> dict[str, Any]:
    if value is None:
        return {}
    _require(source, key, value, dict, "a mapping of names to scalar values")
    for name, item in value.items():
        _require(source, f"{key}.{name}", name, str, "a string name")
        if not isinstance(item, _SCALAR):
            raise PresetError(source, f"{key}.{name}", f"must be a scalar (string, number, boolean), got {item!r}")
        if isinstance(item, str) and ("," in item or "=" in item):
            raise PresetError(source, f"{key}.{name}", "must not contain ',' or '=' (lmms-eval key=value syntax)")
        if secrets_forbidden and _SECRET_ARG.search(name):
            raise PresetError(
                source, f"{key}.{name}", "credentials and endpoints are never stored: use endpoint.*_env instead"
            )
    return dict(value)


def parse_preset(data: Any, name: str, source: str) -> Preset:
    """Validate a loaded YAML mapping (see the module docstring for the schema)."""
    if not isinstance(data, dict):
        raise PresetError(source, None, f"expected a mapping of fields, got {type(data).__name__}")
    allowed = (*_TOP_KEYS, *_OPTIONAL_TOP)
    for key in data:
        if key not in allowed:
            raise PresetError(source, str(key), f"unknown key (allowed: {', '.join(allowed)})")
    for key in _TOP_KEYS:
        if key not in data:
            raise PresetError(source, key, "missing required key")
    description = _require(source, "description", data["description"], str, "a non-empty string")
    backend = data["backend"]
    if backend not in BACKENDS:
        raise PresetError(source, "backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    lmms = _require(source, "lmms_eval", data["lmms_eval"], dict, "a mapping")
    for key in lmms:
        if key not in _LMMS_KEYS:
            raise PresetError(source, f"lmms_eval.{key}", f"unknown key (allowed: {', '.join(_LMMS_KEYS)})")
    if "model" not in lmms:
        raise PresetError(source, "lmms_eval.model", "missing required key")
    model = _require(source, "lmms_eval.model", lmms["model"], str, "an lmms-eval model name")
    seed = lmms.get("seed")
    if seed is not None:
        _require(source, "lmms_eval.seed", seed, int, "an integer")
    batch_size = lmms.get("batch_size")
    if batch_size is not None and (_require(source, "lmms_eval.batch_size", batch_size, int, "an integer") < 1):
        raise PresetError(source, "lmms_eval.batch_size", f"must be >= 1, got {batch_size}")
    endpoint = None
    if backend == "openai":
        if "endpoint" not in data:
            raise PresetError(source, "endpoint", "missing: the openai backend needs base_url_env and api_key_env")
        raw = _require(source, "endpoint", data["endpoint"], dict, "a mapping")
        for key in raw:
            if key not in _ENDPOINT_KEYS:
                raise PresetError(source, f"endpoint.{key}", f"unknown key (allowed: {', '.join(_ENDPOINT_KEYS)})")
        for key in ("base_url_env", "api_key_env"):
            if key not in raw:
                raise PresetError(source, f"endpoint.{key}", "missing required key")
            if not isinstance(raw[key], str) or not _ENV_NAME.fullmatch(raw[key]):  # the value is not echoed
                raise PresetError(source, f"endpoint.{key}", "must name an environment variable")
        hint = raw.get("base_url_hint")
        if hint is not None:
            _require(source, "endpoint.base_url_hint", hint, str, "a URL string")
        endpoint = Endpoint(raw["base_url_env"], raw["api_key_env"], hint)
    elif "endpoint" in data:
        raise PresetError(source, "endpoint", f"only the openai backend takes an endpoint (backend is {backend!r})")
    vlmeval = data["vlmeval_model"]
    if vlmeval is not None:
        _require(source, "vlmeval_model", vlmeval, str, "a VLMEvalKit model name or null")
    papers = data.get("papers") or []
    if not isinstance(papers, list) or not all(isinstance(item, str) and item for item in papers):
        raise PresetError(source, "papers", "must be a list of paper names")
    notes = data.get("notes")
    if notes is not None:
        _require(source, "notes", notes, str, "a string")
    return Preset(
        name=name,
        source=source,
        description=description.strip(),
        backend=backend,
        lmms_model=model,
        model_args=_mapping(source, "lmms_eval.model_args", lmms.get("model_args"), secrets_forbidden=True),
        gen_kwargs=_mapping(source, "lmms_eval.gen_kwargs", lmms.get("gen_kwargs"), secrets_forbidden=False),
        seed=seed,
        batch_size=batch_size,
        endpoint=endpoint,
        vlmeval_model=vlmeval,
        papers=tuple(papers),
        notes=notes.strip() if notes else None,
    )


def load_preset(name_or_path: str | Path) -> Preset:
    """A shipped preset by name (``qwen2-vl-7b-instruct``) or a YAML file by path; validated."""
    path = Path(name_or_path).expanduser()
    if path.suffix not in (".yaml", ".yml") and len(path.parts) == 1:
        path = presets_dir() / f"{name_or_path}.yaml"
        if not path.is_file():
            raise PresetError(
                str(name_or_path), None, f"unknown preset; available: {', '.join(preset_names()) or 'none'}"
            )
    if not path.is_file():
        raise PresetError(str(path), None, "file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PresetError(str(path), None, f"invalid YAML: {exc}") from None
    return parse_preset(data, path.stem, str(path))


def list_presets() -> list[Preset]:
    """Every shipped preset, validated, by name."""
    return [load_preset(name) for name in preset_names()]


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
    env.update(preset.environment(env))
    return preset.lmms_eval_args(rest)
