"""Each benchmark's task version: bumped whenever a change can move a published number (prompt, resolution,
metric, denominator, data generation), with the reason in the task folder README's changelog.

lmms-eval reads the same number from every task YAML's ``metadata: version``; the VLMEvalKit datasets write it into
their scores files. ``tests/lmms_eval/test_task_configs.py`` holds the YAMLs and this table together.
"""

from __future__ import annotations

TASK_VERSIONS: dict[str, str] = {
    "grab": "2.2",
    "scifibench": "2.2",
    "plot_twist": "2.1",
    "mmsci": "2.2",
}
