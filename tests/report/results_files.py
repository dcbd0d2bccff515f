"""lmms-eval-shaped results files written by hand for the report's tests: each breakdown is built by the benchmark's
own core scorer from records whose correctness is stated here, so a test knows every count without running a model.

``write_results`` writes ``<folder>/<date>_results.json`` (``model_name``, ``date``, ``results``, ``n-samples``,
optionally ``groups``, ``group_subtasks`` and a ``scifig_rescore`` record, the shapes lmms-eval and ``scifig rescore``
write).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scifig_tasks.benchmarks.mmsci import rules as mmsci
from scifig_tasks.benchmarks.plot_twist import rules as plot_twist
from scifig_tasks.benchmarks.scifibench import rules as scifibench
from scifig_tasks.core.multiple_choice import Resolution
from scifig_tasks.core.provenance import KEY

LETTERS = "ABCD"


def mmsci_records(n: int, protocol: str = "default", right: int = 2) -> dict[str, list[dict[str, Any]]]:
    """``n`` MMSci questions per setting; every ``right``-th one answered right (letters by rule)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for setting in mmsci.SETTINGS:
        for index in range(n):
            answer = LETTERS[index % 4]
            letter = answer if index % right == 0 else LETTERS[(index + 1) % 4]
            doc = {
                "uid": f"u{index}",
                "figure_index": index,
                "setting": setting,
                "subfigure": "",
                "category": "Physical sciences",
                "subject": "Physics",
                "answer": answer,
            }
            record = mmsci.sample_record(doc, Resolution(letter, "rule", "bare label", protocol=protocol))
            found.setdefault(setting, []).append(record)
    return found


def mmsci_results(n: int, protocol: str = "default", right: int = 2) -> dict[str, dict[str, Any]]:
    """``results`` entries of the MMSci group (``mmsci`` or ``mmsci_paper``) and its three setting tasks."""
    suffix = "_paper" if protocol == "paper" else ""
    entries: dict[str, dict[str, Any]] = {}
    parts = []
    for setting, records in mmsci_records(n, protocol, right).items():
        table = mmsci.breakdown(records)
        parts.append(table)
        entries[f"mmsci_{setting}{suffix}"] = {
            "accuracy,none": table["overall"]["all"]["accuracy"],
            "breakdown,none": table,
        }
    group = mmsci.merge_breakdowns(parts)
    entries[f"mmsci{suffix}"] = {"accuracy,none": group["overall"]["all"]["accuracy"], "breakdown,none": group}
    return entries


SCIFIBENCH_SPLITS = ("cs_figure2caption", "cs_caption2figure", "general_figure2caption", "general_caption2figure")


def scifibench_records(n: int, protocol: str = "default") -> list[dict[str, Any]]:
    """``n`` SciFIBench records (IDs 0..n-1, answer A), every other one right."""
    return [
        scifibench.sample_record(
            {"ID": index, "Category": "cs.CV", "Answer": "A"},
            Resolution("A" if index % 2 == 0 else "B", "rule", "bare label", protocol=protocol),
        )
        for index in range(n)
    ]


def scifibench_results(n: int, protocol: str = "default") -> dict[str, dict[str, Any]]:
    """``results`` entries of the four SciFIBench splits (``_paper`` names under the paper protocol), ``n`` questions
    each, every other one right (:func:`scifibench_records`)."""
    suffix = "_paper" if protocol == "paper" else ""
    entries = {}
    for split in SCIFIBENCH_SPLITS:
        table = scifibench.breakdown(scifibench_records(n, protocol))
        entries[f"scifibench_{split}{suffix}"] = {
            "accuracy,none": table["overall"]["all"]["accuracy"],
            "breakdown,none": table,
        }
    return entries


def plot_twist_results(questions_per_chart: int, said: str = "The answer is 10.") -> dict[str, dict[str, Any]]:
    """``results`` entries of Plot Twist's three chart tasks and its group, every output ``said`` and scored without a
    judge (the gold answer is 10)."""
    entries: dict[str, dict[str, Any]] = {}
    parts = []
    for chart in ("scatter", "bar", "pie"):
        records = []
        for index in range(questions_per_chart):
            doc = {
                "q_id": f"{chart}{index}",
                "figure_id": f"{chart}-fig{index // 2}",
                "chart_type": chart,
                "question_type": "count",
                "answer": "10",
                "x_range": 20.0,
                "y_range": 20.0,
                "question": "How many points are there?",
            }
            score = plot_twist.score_output(doc, said, None)
            records.append(plot_twist.sample_record(doc, [score]))
        table = plot_twist.breakdown(records)
        parts.append(table)
        entries[f"plot_twist_{chart}"] = {
            "standard_acc,none": table["overall"]["standard_acc"]["mean"],
            "breakdown,none": table,
        }
    group = plot_twist.merge_breakdowns(parts)
    entries["plot_twist"] = {"standard_acc,none": group["overall"]["standard_acc"]["mean"], "breakdown,none": group}
    return entries


GRAB_QUESTION = "What is the value at x = 0? Give your answer as an integer."
GRAB_TASKS = {"properties": "grab_properties", "function": "grab_functions", "series": "grab_series"}
GRAB_TASKS |= {"transform": "grab_transforms"}


def grab_results(outputs: Sequence[str], protocol: str = "paper") -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """``results`` entries of GRAB's group and four tasks (``grab_paper`` and its ``_paper`` tasks under the paper
    protocol) scored by GRAB's own rules, each task answering ``outputs`` (question ``i`` of each task has the answer
    ``"3"``), and the sample log lines of each task (the logged output and its record)."""
    from scifig_tasks.benchmarks.grab import rules as grab
    from scifig_tasks.benchmarks.grab.scoring import score_rules

    suffix = "_paper" if protocol == "paper" else ""
    entries: dict[str, Any] = {}
    logs: dict[str, list[Any]] = {}
    every = []
    for task, name in GRAB_TASKS.items():
        lines = []
        for index, output in enumerate(outputs):
            doc = {"pid": f"{task}-{index}", "task": task, "category": "Extrema", "complexity": 0}
            record = grab.sample_record(
                doc | {"question": GRAB_QUESTION}, score_rules(output, "3", GRAB_QUESTION, protocol)
            )
            lines.append({"doc_id": index, "target": "3", "filtered_resps": [output], "breakdown": record})
        table = grab.breakdown(line["breakdown"] for line in lines)
        every += [line["breakdown"] for line in lines]
        entries[f"{name}{suffix}"] = {"accuracy,none": table["overall"]["all"]["accuracy"], "breakdown,none": table}
        logs[f"{name}{suffix}"] = lines
    group = grab.breakdown(every)
    entries[f"grab{suffix}"] = {"accuracy,none": group["overall"]["all"]["accuracy"], "breakdown,none": group}
    return entries, logs


def write_results(
    folder: Path,
    model: str,
    results: Mapping[str, Mapping[str, Any]],
    *,
    date: str = "20260101_000000",
    groups: Mapping[str, Sequence[str]] | None = None,
    n_samples: Mapping[str, tuple[int, int]] | None = None,
    rescore: Mapping[str, Any] | None = None,
    samples: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    environment: Mapping[str, Any] | None = None,
) -> Path:
    """``folder/<date>_results.json`` holding ``results`` (groups listed in ``groups`` go under ``groups`` too) and
    lmms-eval's ``n-samples`` (task -> (original, effective)), and a ``<date>_samples_<task>.jsonl`` log of each task
    in ``samples`` (task -> its scored records, one per document in order); ``environment``: the file's environment
    block (:mod:`scifig_tasks.core.provenance`, e.g. its ``judge_usage``)."""
    folder.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {"model_name": model, "date": date, "results": dict(results)}
    if groups:
        document["groups"] = {name: results[name] for name in groups}
        document["group_subtasks"] = {name: list(tasks) for name, tasks in groups.items()}
    if n_samples:
        document["n-samples"] = {
            task: {"original": original, "effective": effective} for task, (original, effective) in n_samples.items()
        }
    if rescore is not None:
        document["scifig_rescore"] = dict(rescore)
    if environment is not None:
        document[KEY] = dict(environment)
    for task, records in (samples or {}).items():
        lines = [  # a record given as a whole log line (with its breakdown) is written as it is
            record
            if "breakdown" in record
            else {"doc_id": index, "target": record.get("answer"), "filtered_resps": [record.get("predicted")]}
            | {"breakdown": dict(record)}
            for index, record in enumerate(records)
        ]
        log = folder / f"{date}_samples_{task}.jsonl"
        log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    path = folder / f"{date}_results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path
