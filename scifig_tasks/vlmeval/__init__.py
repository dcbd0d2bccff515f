"""VLMEvalKit integration: dataset classes over :mod:`scifig_tasks.core`, ``register()`` and the runner.

* :func:`register` adds the dataset classes of every registered benchmark (:func:`dataset_classes`) to an imported
  VLMEvalKit (``vlmeval.dataset``), in place;
* :mod:`scifig_tasks.vlmeval.datasets` holds the classes of GRAB, SciFIBench and Plot Twist, and
  :mod:`scifig_tasks.vlmeval.mmsci` those of MMSci (importing either imports VLMEvalKit);
* :mod:`scifig_tasks.vlmeval.generic` serves every other registered task and group from its YAML's hooks
  (:mod:`scifig_tasks.vlmeval.task_hooks`), so each is a dataset of its name with no code;
* :mod:`scifig_tasks.vlmeval.names` names the datasets as the lmms-eval tasks (no VLMEvalKit import);
* :mod:`scifig_tasks.vlmeval.judging` picks the judge: VLMEvalKit's ``--judge`` options, else ``SCIFIG_JUDGE_*``;
* :mod:`scifig_tasks.vlmeval.tsv` writes VLMEvalKit TSV files from the Hub or local data (no VLMEvalKit import);
* :mod:`scifig_tasks.commands.vlmeval` adds ``scifig vlmeval`` (VLMEvalKit's own runner after ``register()``) and
  ``scifig export-tsv``.
* :mod:`scifig_tasks.vlmeval.rescore` reads a work dir's prediction files for ``scifig rescore`` and scores them
  again with the dataset classes;
* :mod:`scifig_tasks.vlmeval.chance_model` is ``scifig_chance``, the chance baseline as a VLMEvalKit model (the
  lmms-eval model's answers), which :func:`register` adds too: ``scifig vlmeval`` without an API or weights.

Which datasets and classes there are is read from the registered benchmarks (:mod:`scifig_tasks.core.registry`: the
descriptions' optional ``vlmeval`` block, and every task folder); no module of this package lists the benchmarks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scifig_tasks.vlmeval.datasets import SciFigDataset


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
