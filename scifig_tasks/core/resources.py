"""What the installation provides besides this package's code: preset files and the curation package's hooks.

* Preset files shipped in ``model_configs/`` (installed as ``scifig_model_configs``), for the model presets
  (:mod:`scifig_tasks.core.model_presets`) and the judge presets (:mod:`scifig_tasks.core.judge`). A preset is given by
  name (no ``.yaml``/``.yml`` suffix, no directory: a file of the shipped ``<kind>`` folder) or by path to any YAML
  file. An unknown name lists the shipped names; a missing file and invalid YAML are errors naming the file.
* Entry points (pyproject), public extension points (``docs/architecture.md``): data builders (``scifig.builders``) are
  found by name (benchmarks themselves register under ``scifig.benchmarks``, :mod:`scifig_tasks.core.registry`). The
  ``curation`` package registers its own, and any installed package can add more; ``scifig_tasks`` never imports
  ``curation`` (it sits above, importing the core), a rule ``tests/project/test_layering.py`` holds.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from scifig_tasks.core.errors import ConfigError


def shipped_config_dir(kind: str) -> Path:
    """The folder of shipped ``kind`` presets (``models``, ``judges``): ``scifig_model_configs/<kind>`` when
    installed, the source checkout's ``model_configs/<kind>`` otherwise."""
    try:
        return Path(str(resources.files("scifig_model_configs") / kind))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "model_configs" / kind


PRESET_SUFFIXES = (".yaml", ".yml")
"""A shipped preset's file: ``<name>.yaml``, or ``<name>.yml`` where a framework's task scanner would take a
``.yaml`` file for a task (the folders ``scifig export-upstream`` writes)."""


def shipped_names(kind: str) -> list[str]:
    folder = shipped_config_dir(kind)
    return sorted({path.stem for suffix in PRESET_SUFFIXES for path in folder.glob(f"*{suffix}")})


def _shipped_file(kind: str, name: str) -> Path:
    """The shipped preset ``name``'s file (the first suffix found; the ``.yaml`` one when there is none)."""
    candidates = [shipped_config_dir(kind) / f"{name}{suffix}" for suffix in PRESET_SUFFIXES]
    return next((path for path in candidates if path.is_file()), candidates[0])


def read_config(
    name_or_path: str | Path, kind: str, error: type[ConfigError], unknown_hint: str = ""
) -> tuple[str, str, Any]:
    """``(name, file, parsed YAML)`` of a shipped ``kind`` preset given by name or of a YAML file given by path; a
    name has no ``.yaml``/``.yml`` suffix and no directory. ``error`` (naming the file) for an unknown name (the
    shipped names listed, then ``unknown_hint``), a missing file or invalid YAML."""
    path = Path(name_or_path).expanduser()
    if path.suffix not in PRESET_SUFFIXES and len(path.parts) == 1:
        path = _shipped_file(kind, str(name_or_path))
        if not path.is_file():
            available = ", ".join(shipped_names(kind)) or "none"
            raise error(str(name_or_path), None, f"unknown preset; available: {available}{unknown_hint}")
    if not path.is_file():
        raise error(str(path), None, "file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise error(str(path), None, f"invalid YAML: {exc}") from None
    return path.stem, str(path), data


def check_fields(
    data: Any, required: Iterable[str], optional: Iterable[str], error: type[ConfigError], source: str
) -> dict[str, Any]:
    """A preset's mapping of fields: each key known, every required one present; ``error`` names the file and key."""
    if not isinstance(data, dict):
        raise error(source, None, f"expected a mapping of fields, got {type(data).__name__}")
    required = tuple(required)
    allowed = (*required, *optional)
    for key in data:
        if key not in allowed:
            raise error(source, str(key), f"unknown key (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in data:
            raise error(source, key, "missing required key")
    return data


def installed_entry_point(group: str, name: str) -> Any:
    """The object registered as ``name`` in the entry-point ``group``; :class:`ConfigError` saying how to install it."""
    found = importlib.metadata.entry_points(group=group, name=name)
    if not found:
        raise ConfigError(
            f"entry point {name!r} of {group}",
            None,
            "not installed: reinstall scifig with its curation extra "
            "(`pip install 'scifig[curation]'`, or `pip install -e '.[curation]'` in a checkout)",
        )
    return next(iter(found)).load()
