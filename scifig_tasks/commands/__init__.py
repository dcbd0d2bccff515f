"""The ``scifig`` command line, one module per command: :mod:`~scifig_tasks.commands.main` builds the parser and
dispatches (``scifig = scifig_tasks.commands.main:main``); ``tasks``, ``compare``, ``rescore``, ``report``,
``vlmeval`` (with ``export-tsv``), ``presets``, ``doctor`` and ``config`` each register their sub-command;
:mod:`~scifig_tasks.commands.format` holds what every command shares (the parser class, help layout, the one-line
error boundary).

Two commands register from their own package: ``export-upstream`` (:mod:`scifig_tasks.lmms_eval.export`, the
export itself) and ``finetune`` (``scifig_finetune.cli``, installed with the fine-tuning recipe).
"""
