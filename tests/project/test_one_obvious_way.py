"""What a user has to learn, counted from the code: task names, environment variables, protocol switches.

* Task names: every ``task:`` / ``group:`` of the lmms-eval task folders; VLMEvalKit dataset names are the same
  words (a name spelled differently in the two frameworks is a second thing to learn).
* Environment variables: every ``SCIFIG_*`` name the package's code mentions.
* Protocol switches: the ways a run chooses between scifig's default and a paper's setting. One is current, the
  task name (``_paper``); the environment variables and GRAB's ``prompt: paper`` task argument are deprecated.

``python -m tests.project.test_one_obvious_way [ROOT]`` prints the counts for the checkout at ``ROOT`` (default: this
one), so two revisions can be compared.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from scifig_tasks.benchmarks.charxiv import description as charxiv
from scifig_tasks.benchmarks.grab import description as grab
from scifig_tasks.benchmarks.scifibench import description as scifibench
from scifig_tasks.core import registry, settings, task_files
from scifig_tasks.core import scoring_protocol as protocol
from tests.harness.paths import REPO

VARIABLE = re.compile(r"\bSCIFIG_[A-Z0-9_]*[A-Z0-9]\b")
PROTOCOL_ARGUMENTS = ("prompt",)
"""Task-argument keys (``lmms_eval_specific_kwargs``) that would choose a protocol apart from the name: none may be
used (a task's ``protocol`` option is declared, and must say what its name says)."""


class _Loader(yaml.SafeLoader):
    """Reads task YAMLs without lmms-eval: ``!function x`` becomes the text ``x``."""


_Loader.add_constructor("!function", lambda loader, node: str(loader.construct_scalar(node)))


def task_configs(root: Path = REPO) -> dict[str, dict[str, Any]]:
    """Every task and group of the lmms-eval folders under ``root``, by name, with its YAML (includes not merged)."""
    configs: dict[str, dict[str, Any]] = {}
    for path in sorted((root / "scifig_tasks" / "benchmarks").glob("*/tasks/*.yaml")):
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
        name = config.get("task") if isinstance(config.get("task"), str) else config.get("group")
        if name:
            configs[name] = {**config, "_path": path}
    return configs


def leaf_config(name: str, configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A task's YAML with its ``include`` chain merged (the including file wins), as lmms-eval reads it."""
    config = configs[name]
    merged: dict[str, Any] = {}
    chain = [config]
    path: Path = config["_path"]
    while "include" in chain[-1]:
        path = path.parent / chain[-1]["include"]
        chain.append(yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {})
    for part in reversed(chain):
        merged.update(part)
    return merged


def variables(root: Path = REPO) -> set[str]:
    """Every ``SCIFIG_*`` name the Python code under ``root``'s two packages mentions."""
    found: set[str] = set()
    for package in ("scifig_tasks", "curation"):
        for path in (root / package).rglob("*.py"):
            found |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    return found


def protocol_switches(root: Path = REPO) -> dict[str, bool]:
    """The protocol switches the code under ``root`` offers, each with whether it is current (not deprecated)."""
    configs = task_configs(root)
    core = root / "scifig_tasks" / "core"
    module = next(path for path in (core / "scoring_protocol.py", core / "protocol.py") if path.is_file())  # 0.2.1
    code = module.read_text(encoding="utf-8")
    deprecated_variables = "deprecated" in code.lower() and "SCIFIG_PROTOCOL" in code
    grab_utils = (root / "scifig_tasks" / "benchmarks" / "grab" / "tasks" / "utils.py").read_text(encoding="utf-8")
    switches = {
        "task name": any(name.endswith(("_paper", "_open", "_open_pali")) for name in configs),
        "environment variable": "SCIFIG_PROTOCOL" in code,
        "task argument": '"prompt"' in grab_utils,
    }
    current = {
        "task name": True,
        "environment variable": not deprecated_variables,
        "task argument": "warn_once" not in grab_utils,
    }
    return {switch: current[switch] for switch, offered in switches.items() if offered}


# ---- the rules ------------------------------------------------------------------------------------------------------


def test_the_task_name_is_the_only_current_protocol_switch() -> None:
    assert protocol_switches() == {"task name": True, "environment variable": False, "task argument": False}
    protocol_variables = {name for name in settings.DECLARED if name.endswith("_PROTOCOL")}
    assert protocol_variables and all(settings.DECLARED[name].deprecated for name in protocol_variables)


def test_a_paper_protocol_is_scored_only_by_a_task_named_paper() -> None:
    """A leaf's declared ``protocol`` option and its name agree, and its scoring hook names no protocol: a ``*_paper``
    twin scores with its plain task's hook, which reads the option (the name is the whole switch: the YAML's option
    says the same, once, and nothing else in a YAML chooses)."""
    configs = task_configs()
    leaves = {name: leaf_config(name, configs) for name, config in configs.items() if isinstance(config["task"], str)}
    paper_named = {name for name in leaves if protocol.protocol_of(name) == "paper"}
    assert {"scifibench_paper", "mmsci_paper", "mmsci_captioning_paper"} <= {
        name for name in configs if protocol.protocol_of(name) == "paper"
    }
    for name, config in leaves.items():
        hook = str(config.get("process_results", ""))
        assert "paper" not in hook, (name, hook)
        twin = name.removesuffix("_paper")
        if name in paper_named and twin in leaves:
            assert hook == str(leaves[twin].get("process_results", "")), (name, hook)
        for arguments in (config.get("lmms_eval_specific_kwargs") or {}).values():
            assert not set(arguments or {}) & set(PROTOCOL_ARGUMENTS), (name, arguments)
        declared = task_files.options(name).get("protocol")
        assert declared not in protocol.PROTOCOLS or declared == protocol.protocol_of(name), (name, declared)


def test_every_variable_the_code_names_is_declared() -> None:
    """Declared once: in settings, by a benchmark's description (its own settings and its sources' revisions), or a
    benchmark source's local-data variable (the ``SCIFIG_<SOURCE>_DATA`` family)."""
    sources = {source.env_var for source in registry.sources().values()}
    assert sources and all(settings.DATA_VARIABLE.match(name) for name in sources)
    undeclared = variables() - set(settings.DECLARED) - set(settings.benchmark_settings()) - sources
    assert not undeclared, sorted(undeclared)


def test_the_question_counts_scifig_tasks_shows_are_the_published_sizes() -> None:
    """The YAMLs' ``scifig_questions`` (what ``scifig tasks`` prints) say what the benchmarks' descriptions
    record: GRAB's total and properties task, SciFIBench's splits (four, or the alignment experiment's one), CharXiv's
    validation set."""
    expected = {
        "grab": grab.QUESTIONS,
        "grab_paper": grab.QUESTIONS,
        "grab_llm_extract": grab.QUESTIONS,
        "grab_properties_mc": grab.TASK_QUESTIONS["properties"],
        "scifibench": 4 * scifibench.SPLIT_QUESTIONS,
        "scifibench_paper": 4 * scifibench.SPLIT_QUESTIONS,
        "scifibench_reasoning": 4 * scifibench.SPLIT_QUESTIONS,
        "scifibench_alignment": scifibench.SPLIT_QUESTIONS,
        "charxiv_full": charxiv.DESCRIPTIVE_QUESTIONS + charxiv.REASONING_QUESTIONS,
        "charxiv_full_paper": charxiv.DESCRIPTIVE_QUESTIONS + charxiv.REASONING_QUESTIONS,
    }
    stated = {
        name: int(str(config["metadata"]["scifig_questions"]).replace(",", ""))
        for name, config in task_configs().items()
        if "scifig_questions" in (config.get("metadata") or {})
    }
    assert stated == expected


def counts(root: Path) -> dict[str, Any]:
    """What a user of the checkout at ``root`` meets: the counts the closing comparison prints."""
    configs = task_configs(root)
    switches = protocol_switches(root)
    return {
        "lmms-eval tasks and groups": len(configs),
        "protocol twins (*_paper, *_open, *_open_pali)": sum(
            name.endswith(("_paper", "_open", "_open_pali")) for name in configs
        ),
        "SCIFIG_* variables named in the code": len(variables(root)),
        "protocol switches (current)": sum(switches.values()),
        "protocol switches (deprecated)": sum(not current for current in switches.values()),
    }


if __name__ == "__main__":
    for label, value in counts(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO).items():
        print(f"{label:48} {value}")
