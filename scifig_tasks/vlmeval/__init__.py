"""VLMEvalKit integration: dataset classes over :mod:`scifig_tasks.core`, ``register()`` and the runner; which datasets
and classes there are is read from the registered benchmarks.

Manual: docs/vlmeval.md, "The integration's parts".
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scifig_tasks.vlmeval.datasets import SciFigDataset

NO_ENV_FILE = "Did not detect the .env file at "
"""How VLMEvalKit's import says it found no ``.env`` file (an ERROR line of the root logger)."""


class _NoEnvFileLine(logging.Filter):
    """Drops VLMEvalKit's :data:`NO_ENV_FILE` line, and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(NO_ENV_FILE)


def import_vlmeval() -> Path:
    """Import VLMEvalKit without the ERROR line its import logs when it finds no ``.env`` file (``vlmeval/__init__.py``,
    ``load_env``): that file is optional — VLMEvalKit reads API keys from it, at one place only, the folder above its
    package (``site-packages/.env`` for an installed VLMEvalKit, the clone's root for an editable one), and the same
    keys set in the environment work without it — so its absence is no error. Returns that file's path (read as
    VLMEvalKit reads it: a file there is still loaded). Raises ``ImportError`` when VLMEvalKit is not installed."""
    quiet = _NoEnvFileLine()
    root = logging.getLogger()
    root.addFilter(quiet)  # the line is logged on the root logger, while the module is first imported
    try:
        import vlmeval
    finally:
        root.removeFilter(quiet)
    return Path(str(vlmeval.__file__)).parent.parent / ".env"


def dataset_classes() -> list[type[SciFigDataset]]:
    """The dataset classes every registered benchmark description names (``vlmeval.classes``, imported now: this
    imports VLMEvalKit), in the registry's order, each once; then
    :class:`~scifig_tasks.vlmeval.generic.SciFigTask`, serving every other registered task and group."""
    from scifig_tasks.core import registry
    from scifig_tasks.vlmeval import names

    found: list[type[SciFigDataset]] = []
    for described in registry.benchmarks().values():
        for reference in described.vlmeval.classes if described.vlmeval else ():
            cls = registry.load_reference(reference)
            if cls not in found:
                found.append(cls)
    if names.GENERIC:
        from scifig_tasks.vlmeval.generic import SciFigTask

        found.append(SciFigTask)
    return found


def register() -> list[str]:
    """Add the scifig dataset classes (:func:`dataset_classes`) to VLMEvalKit in place; return the dataset names they
    serve (the lmms-eval task names, :mod:`scifig_tasks.vlmeval.names`).

    VLMEvalKit has no plugin mechanism: its ``build_dataset`` looks names up in ``vlmeval.dataset.DATASET_CLASSES``
    and its listings use ``SUPPORTED_DATASETS``, so both lists are extended (once) and each class is also set as an
    attribute of ``vlmeval.dataset`` (config files name classes by attribute: ``"class": "SciFigGRAB"``). The
    deprecated ``SciFig_*`` names still build their datasets (each class's ``supported_datasets``), under the new
    name with a one-line warning; VLMEvalKit's listing shows today's names only.

    The model ``scifig_chance`` (:class:`~scifig_tasks.vlmeval.chance_model.SciFigChance`) is added the same way:
    to ``vlmeval.config.supported_VLM`` (``--model scifig_chance``) and as an attribute of ``vlmeval.vlm`` (a config
    file's ``"class": "SciFigChance"``).
    """
    import vlmeval.config as vlmeval_config
    import vlmeval.dataset as vlmeval_dataset
    import vlmeval.vlm as vlmeval_vlm

    from scifig_tasks.vlmeval.chance_model import MODEL_NAME, SciFigChance

    vlmeval_config.supported_VLM.setdefault(MODEL_NAME, SciFigChance)
    setattr(vlmeval_vlm, SciFigChance.__name__, SciFigChance)

    names: list[str] = []
    for cls in dataset_classes():
        if cls not in vlmeval_dataset.DATASET_CLASSES:
            vlmeval_dataset.DATASET_CLASSES.append(cls)
        for name in cls.NAMES:
            if name not in vlmeval_dataset.SUPPORTED_DATASETS:
                vlmeval_dataset.SUPPORTED_DATASETS.append(name)
            names.append(name)
        setattr(vlmeval_dataset, cls.__name__, cls)
    return names
