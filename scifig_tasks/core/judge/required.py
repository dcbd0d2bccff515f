"""Which requested tasks cannot be scored without the LLM judge, read from the task folders before anything runs.

Rule: a task requires the judge when the ``process_results`` hook its YAML names declares it (``asks_judge(...,
required=True)``, :mod:`scifig_tasks.core.judged_hooks`): the ``_paper`` multiple-choice tasks (every output the
rules do not read goes to the judge, App. B of SciFIBench, the MMSci authors' ``print_result.py``) and GRAB's LLM
extraction. A group requires it when one of its tasks does. The declaration is read from the YAMLs of every
registered benchmark's task folder (:mod:`scifig_tasks.core.task_files`), so a task of an installed benchmark package
is covered as scifig's own are. ``scifig eval``, ``scifig vlmeval`` (whose dataset names are the task names) and
``scifig rescore`` (with ``--protocol``: as the task's twin of that protocol scores) ask :func:`judge_refusal` before
the model or the scorer runs, and refuse in one line (:class:`~scifig_tasks.core.judged_hooks.JudgeRequired`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scifig_tasks.core import task_files
from scifig_tasks.core.judged_hooks import JudgeRequired, declared_judging, judge_configured, requires_judge
from scifig_tasks.core.scoring_protocol import PAPER_SUFFIX, Protocol, plain_twin


def _twin(name: str, protocol: Protocol | None, tasks: Mapping[str, Any]) -> str:
    """The task whose hook scores ``name`` under ``protocol`` (``scifig rescore --protocol``): its ``_paper`` or
    plain-name twin when there is one, else ``name`` itself."""
    if protocol == "paper" and not name.endswith(PAPER_SUFFIX) and f"{name}{PAPER_SUFFIX}" in tasks:
        return f"{name}{PAPER_SUFFIX}"
    if protocol == "default" and plain_twin(name) in tasks:
        return plain_twin(name)
    return name


class Requirement:
    """Whether a registered task or group cannot be scored without the judge under ``protocol``, each hook read
    once."""

    def __init__(self, protocol: Protocol | None) -> None:
        self.tasks = task_files.scifig_tasks()
        self.protocol = protocol
        self._leaf: dict[str, bool] = {}

    def _requires(self, leaf: str) -> bool:
        if leaf not in self._leaf:
            bound = task_files.scoring_hook(self.tasks.get(_twin(leaf, self.protocol, self.tasks)))
            self._leaf[leaf] = bound is not None and requires_judge(bound)
        return self._leaf[leaf]

    def __call__(self, name: str) -> bool:
        return name in self.tasks and any(self._requires(leaf) for leaf in task_files.leaves(name, self.tasks))

    def instead(self, name: str) -> str | None:
        """The task or group asking the same questions without requiring the judge: the longest registered name
        that ``name`` extends by ``_...`` (``mmsci`` for ``mmsci_paper``, ``grab_properties`` for
        ``grab_properties_llm_extract``); none under a chosen ``protocol`` (the name is then the plain one)."""
        if self.protocol is not None:
            return None
        parts = name.split("_")
        shorter = ("_".join(parts[:end]) for end in range(len(parts) - 1, 0, -1))
        return next((candidate for candidate in shorter if candidate in self.tasks and not self(candidate)), None)


def tasks_requiring_judge(names: Iterable[str], protocol: Protocol | None = None) -> list[str]:
    """Of the requested task and group ``names``, those that cannot be scored without the LLM judge: a task whose
    YAML's ``process_results`` hook declares it ``required`` (:func:`scifig_tasks.core.judged_hooks.asks_judge`), a
    group when one of its tasks is. ``protocol``: every task scores as its twin of that protocol would (``scifig
    rescore --protocol``). Names of no registered task folder (lmms-eval's own tasks) are left out."""
    requires = Requirement(protocol)
    return [name for name in dict.fromkeys(names) if requires(name)]


def judge_refusal(
    names: Iterable[str], protocol: Protocol | None = None, available: bool | None = None
) -> JudgeRequired | None:
    """The refusal of a run of ``names`` (:func:`tasks_requiring_judge`, with the tasks to run instead) when no
    judge is ``available`` (default: :func:`~scifig_tasks.core.judged_hooks.judge_configured`); None when the run can
    go ahead."""
    if available or (available is None and judge_configured()):
        return None
    requires = Requirement(protocol)
    needing = [name for name in dict.fromkeys(names) if requires(name)]
    instead = [twin for name in needing if (twin := requires.instead(name)) is not None]
    return JudgeRequired(needing, instead) if needing else None


USE_WORDS = {
    "required": "required: the run is refused before the model runs when none is configured",
    "per_output": "asked for an output the rules cannot read (without one: counted wrong and flagged)",
    "audited": "asked for an output the rules cannot read; SCIFIG_JUDGE_AUDIT also samples outputs the rules read",
    "at_aggregation": "asked when the scores are aggregated (the judged metrics; without one: n/a)",
}
"""Each declared judge use (:mod:`scifig_tasks.core.judged_hooks`) in words."""


def judge_use(name: str) -> str:
    """How the task or group ``name`` uses the LLM judge, in words (``scifig tasks NAME``): the declaration of each
    of its tasks' ``process_results`` hooks, ``never`` when none declares one."""
    tasks = task_files.scifig_tasks()
    uses = []
    for leaf in task_files.leaves(name, tasks):
        function = task_files.scoring_hook(tasks.get(leaf))
        if function is not None:
            use = "required" if requires_judge(function) else declared_judging(function)
            if use is not None:
                uses.append(USE_WORDS[use])
    return "; ".join(dict.fromkeys(uses)) or "never"
