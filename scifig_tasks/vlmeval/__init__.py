"""VLMEvalKit integration: dataset classes over :mod:`scifig_tasks.core`, ``register()`` and the runner.

* :func:`register` adds this package's dataset classes to an imported VLMEvalKit (``vlmeval.dataset``), in place;
* :mod:`scifig_tasks.vlmeval.datasets` holds the classes (importing it imports VLMEvalKit);
* :mod:`scifig_tasks.vlmeval.names` names the datasets as the lmms-eval tasks (no VLMEvalKit import);
* :mod:`scifig_tasks.vlmeval.judging` picks the judge: VLMEvalKit's ``--judge`` options, else ``SCIFIG_JUDGE_*``;
* :mod:`scifig_tasks.vlmeval.tsv` writes VLMEvalKit TSV files from the Hub or local data (no VLMEvalKit import);
* :mod:`scifig_tasks.vlmeval.cli` adds ``scifig vlmeval`` (VLMEvalKit's own runner after ``register()``) and
  ``scifig export-tsv``.
* :mod:`scifig_tasks.vlmeval.rescore` reads a work dir's prediction files for ``scifig rescore`` and scores them
  again with the dataset classes.
"""

from __future__ import annotations


def register() -> list[str]:
    """Add the scifig dataset classes to VLMEvalKit in place; return the dataset names they serve (the lmms-eval task
    names, :mod:`scifig_tasks.vlmeval.names`).

    VLMEvalKit has no plugin mechanism: its ``build_dataset`` looks names up in ``vlmeval.dataset.DATASET_CLASSES``
    and its listings use ``SUPPORTED_DATASETS``, so both lists are extended (once) and each class is also set as an
    attribute of ``vlmeval.dataset`` (config files name classes by attribute: ``"class": "SciFigGRAB"``). The
    deprecated ``SciFig_*`` names still build their datasets (each class's ``supported_datasets``), under the new
    name with a one-line warning; VLMEvalKit's listing shows today's names only.
    """
    import vlmeval.dataset as vlmeval_dataset

    from scifig_tasks.vlmeval.datasets import CLASSES
    from scifig_tasks.vlmeval.mmsci import MMSCI_CLASSES

    names: list[str] = []
    for cls in (*CLASSES, *MMSCI_CLASSES):
        if cls not in vlmeval_dataset.DATASET_CLASSES:
            vlmeval_dataset.DATASET_CLASSES.append(cls)
        for name in cls.NAMES:
            if name not in vlmeval_dataset.SUPPORTED_DATASETS:
                vlmeval_dataset.SUPPORTED_DATASETS.append(name)
            names.append(name)
        setattr(vlmeval_dataset, cls.__name__, cls)
    return names
