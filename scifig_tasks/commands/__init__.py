"""The ``scifig`` command line, one module per command: :mod:`~scifig_tasks.commands.main` builds the parser and
dispatches (``scifig = scifig_tasks.commands.main:main``); ``tasks``, ``compare``, ``rescore``, ``presets``,
``doctor`` and ``config`` each register their sub-command; :mod:`~scifig_tasks.commands.format` holds what every
command shares (the parser class, help layout, the one-line error boundary).

Commands that belong to another layer register from there (``scifig_tasks.report.cli``,
``scifig_tasks.lmms_eval.export``, ``scifig_tasks.vlmeval.cli``, ``scifig_finetune.cli``).
"""
