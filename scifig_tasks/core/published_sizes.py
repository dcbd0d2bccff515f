"""Sizes of the published question sets, the one record of them: reports say when a run scored fewer, the generator
builds as many, ``scifig tasks`` shows them (the task YAMLs' ``scifig_questions``, held equal by a test).

* GRAB (``grab.json`` of the authors' release): 2,170 questions — properties 660, functions 710, series 490,
  transforms 310.
* SciFIBench (the Hub dataset): 500 questions in each of its four splits.
* Plot Twist's charts and MMSci's test set are not published with a size this package can check.
"""

from __future__ import annotations

GRAB_TASKS: dict[str, int] = {"properties": 660, "function": 710, "series": 490, "transform": 310}
"""GRAB questions per task, by the task names of the published data."""
GRAB_QUESTIONS = sum(GRAB_TASKS.values())
SCIFIBENCH_SPLIT_QUESTIONS = 500
"""Questions in each SciFIBench split (CS / General × Figure→Caption / Caption→Figure)."""
