"""The task templates' ``dataset_kwargs.revision`` (what plain lmms-eval's own loader passes to ``load_dataset``) is
the pinned revision of the source whose Hub dataset they name: declared once, in the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scifig_tasks.core import registry
from scifig_tasks.core.schema import UNPINNED


class _TaggedLoader(yaml.SafeLoader):
    """Reads lmms-eval YAML, its ``!function`` tags as None."""


_TaggedLoader.add_multi_constructor("!", lambda loader, suffix, node: None)
TASKS = Path(registry.__file__).parents[1] / "benchmarks"


def _templates() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(TASKS.glob("*/tasks/_*template_yaml")):
        found[str(path.relative_to(TASKS))] = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaggedLoader) or {}
    return found


def test_every_template_naming_a_hub_dataset_pins_the_sources_revision() -> None:
    hub = {source.hub_path: source for source in registry.sources().values() if source.hub_path}
    named = {name: config for name, config in _templates().items() if config.get("dataset_path") in hub}
    assert {config["dataset_path"] for config in named.values()} == set(hub)  # GRAB and SciFIBench
    for name, config in named.items():
        source = hub[config["dataset_path"]]
        written = (config.get("dataset_kwargs") or {}).get("revision")
        assert written == (None if source.revision == UNPINNED else source.revision), name
