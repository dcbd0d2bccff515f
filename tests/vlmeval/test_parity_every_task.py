"""lmms-eval and VLMEvalKit give the same verdict on every question of every registered task.

Every task and group of every registered benchmark (found from the registry and the task folders: no list here) runs
through both frameworks on the benchmark's small data (``tests/harness/<benchmark>_data.py``: ``sample(root)``; a
benchmark without such a module is left out, said with its reason), in one ``lmms-eval --tasks`` process (the
top-level tasks and groups) and one ``scifig vlmeval`` process (the VLMEvalKit datasets of the same top-level names --
a group VLMEvalKit has no dataset for, by its members -- so each question is asked once: the described datasets through
their classes, every other task and group through its YAML's hooks; every other dataset is one of these on a subset of
the questions, through the same class, and is only checked to be registered). The model is a local server whose reply
is a function of the request's text alone, so equal prompts get equal replies; the judge is a local server too, so
the tasks that require one run.

Compared: each question's verdict -- the per-document metrics of the task's ``process_results`` (lmms-eval's samples)
against VLMEvalKit's record of the same document (a described dataset's record against the task's detail metric,
paired on the benchmark's ``document_id`` fields) -- and each dataset's metrics. A task sampling several outputs
(``repeats`` > 1) gets one reply in VLMEvalKit (it asks once): its verdicts are compared on its first sample's fields
only where they do not depend on the count; its corpus numbers are not compared (printed).

Also compared: every lmms-eval task's and group's numbers against ``every_task_scores.json`` beside this file, written
by the same test on the code before the built-ins became packages (refreshed on purpose with
``SCIFIG_WRITE_SCORES=1`` when a number is meant to change, which bumps a task version).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA, RATING_DEFINITION
from scifig_tasks.core import registry, task_files, task_yaml
from scifig_tasks.core.run_files import read_jsonl
from scifig_tasks.vlmeval import names
from tests.harness.openai_server import ChatRequest
from tests.harness.vlmeval import MODEL, run_vlmeval, vlmeval_scores

REPLIES = (
    "A",
    "The answer is 3. I hope the answer is correct.",
    "B) is the best match.",
    "I cannot tell from the figure.",
    "3",
    "[2, 4]",
)
"""Replies the model gives, one chosen per request by its text."""

SCORES = Path(__file__).with_name("every_task_scores.json")
"""Every task's and group's numbers on the sample data, as recorded (see the module docstring)."""


def model_reply(request: ChatRequest) -> str:
    """One of :data:`REPLIES`, chosen by the request's text."""
    return REPLIES[hashlib.sha256(request.text.encode()).digest()[0] % len(REPLIES)]


CHARXIV_BATCH = re.compile(r"^T(\d+):\nResponse \1: (.*?)\nGround Truth \1: (.*?)\n\n", re.MULTILINE | re.DOTALL)


def judge_reply(request: ChatRequest) -> str:
    """The judge answers in the shape its prompt asks for (a reply in another shape is asked again, then counted as
    the judge failing): atomic facts as ``- `` items, a rating as an integer, the answer sentence where the prompt's
    worked examples show it (a reformatting), a letter or "None" for a multiple-choice parse (chosen by the text),
    CharXiv's grades as JSON, and "None" (nothing extracted) for any other extraction."""
    messages = request.body.get("messages") or [{}]
    system = messages[0].get("content") if messages[0].get("role") == "system" else None
    text = system if isinstance(system, str) else request.text
    if text.startswith(FACTS_INSTRUCTION):
        return "- the figure shows a sample\n- the sample is measured"
    if text.startswith((RATING_DEFINITION, GEVAL_RELEVANCE_CRITERIA)):
        return "4"
    if "Here is the output from a generative model" in text:
        return "None" if hashlib.sha256(text.encode()).digest()[0] % 2 else "B"
    if "Extract just the answer from the generative model output" in text:  # a model output may hold the sentence
        return "None"
    if text.lstrip().startswith("You will be given"):  # CharXiv's grading: the JSON its prefix asks for
        pairs = CHARXIV_BATCH.findall(text)
        if pairs:  # descriptive: every pair of the batch, graded by whether the response holds the answer
            grades = {f"score_T{i}": int(truth.lower() in response.lower()) for i, response, truth in pairs}
            return json.dumps({**grades, **{f"extract_answer_T{i}": response for i, response, _ in pairs}})
        return json.dumps({"extracted_answer": "3", "score": int("Ground Truth: 3\n" in text)})
    if "I hope the answer is correct" in text:
        return "The answer is 3. I hope the answer is correct."
    return "None"


def counts(table: Any) -> Any:
    """A result without the judge's cache hits (run history, not a count a number is computed from), without the
    words saying why a metric is unavailable (they name this machine's folders) and with NaN made comparable."""
    if isinstance(table, dict):
        return {key: counts(value) for key, value in table.items() if key not in ("cache_hits", "reason")}
    if isinstance(table, list):
        return [counts(value) for value in table]
    return "nan" if isinstance(table, float) and math.isnan(table) else table


def numbers(results: Mapping[str, Any]) -> dict[str, Any]:
    """Each task's and group's metrics (``metric,filter`` keys) as compared with the record."""
    return {
        task: {key: counts(value) for key, value in sorted(entry.items()) if "," in key}
        for task, entry in sorted(results.items())
    }


def check_recorded_scores(results: Mapping[str, Any], run: Mapping[str, Any]) -> None:
    """Every task's numbers equal the recorded ones (those of the tasks run: a plugin not installed is not asked
    for); with ``SCIFIG_WRITE_SCORES=1`` the record is written instead."""
    found = numbers(results)
    if os.environ.get("SCIFIG_WRITE_SCORES") == "1":
        SCORES.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    recorded = {task: value for task, value in json.loads(SCORES.read_text()).items() if task in run}
    changed = sorted(task for task in recorded.keys() | found.keys() if recorded.get(task) != found.get(task))
    assert changed == [], f"numbers differ from {SCORES.name} for: {changed}"


def sample_data(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The settings of every registered benchmark's small data, and the benchmarks left out with why."""
    settings: dict[str, str] = {}
    left_out: dict[str, str] = {}
    for name in registry.benchmarks():
        try:
            module = importlib.import_module(f"tests.harness.{name}_data")
        except ModuleNotFoundError:
            left_out[name] = f"no tests/harness/{name}_data.py with sample(root)"
            continue
        settings |= module.sample(root / name)
        settings |= more_data(name, root / name, settings)
    return settings, left_out


def more_data(benchmark: str, root: Path, settings: Mapping[str, str]) -> dict[str, str]:
    """What the sample leaves out that some of the benchmark's tasks read: Plot Twist's ChartQA file (from the
    sample's own bar questions) and MMSci's dev split (the test questions again)."""
    if benchmark == "plot_twist":
        import pyarrow.parquet as pq

        from tests.lmms_eval.test_plot_twist_lmms_cli import write_chartqa

        rows = pq.read_table(Path(settings["SCIFIG_PLOT_TWIST_DATA"]) / "test.parquet").to_pylist()
        path, _ = write_chartqa(rows, root / "chartqa.parquet")
        return {"SCIFIG_PLOT_TWIST_CHARTQA_DATA": str(path)}
    if benchmark == "mmsci":
        from scifig_tasks.benchmarks.mmsci import rules as mmsci
        from tests.harness import mmsci_data

        questions = [mmsci_data.Mcq(setting, "B") for setting in mmsci.SETTINGS]
        captions = [mmsci_data.Caption("The figure shows cells under pressure.")]
        mmsci_data.write(Path(settings["SCIFIG_MMSCI_DATA"]), questions, captions, split="dev")
    return {}


def leaves(name: str, tasks: Mapping[str, task_files.TaskInfo]) -> list[str]:
    info = tasks[name]
    return [leaf for member in info.members for leaf in leaves(member, tasks)] if info.is_group else [name]


def vlmeval_datasets(name: str, tasks: Mapping[str, task_files.TaskInfo], datasets: list[str]) -> list[str]:
    """The VLMEvalKit datasets that ask the questions of the task or group ``name`` once: itself, or for a group
    VLMEvalKit has no dataset for, its members' (none for a name VLMEvalKit does not serve)."""
    if name in datasets:
        return [name]
    if name in names.GROUPS:
        return [dataset for member in tasks[name].members for dataset in vlmeval_datasets(member, tasks, datasets)]
    return []


def repeats(task: str, tasks: Mapping[str, task_files.TaskInfo]) -> int:
    return int(task_yaml.resolved(tasks[task].path).get("repeats") or 1)


def metric_names(task: str, tasks: Mapping[str, task_files.TaskInfo]) -> list[str]:
    return [entry["metric"] for entry in task_yaml.resolved(tasks[task].path).get("metric_list") or []]


def verdict(record: Mapping[str, Any], sampled: bool) -> Any:
    """A record as compared: without the reply; a sampled task's without what depends on the number of samples."""
    kept = {key: value for key, value in record.items() if key not in ("prediction", "task", "doc_id")}
    if sampled:
        return {key: value for key, value in kept.items() if not isinstance(value, list | dict)}
    return counts(kept)


@pytest.mark.slow
@pytest.mark.cli
def test_both_frameworks_give_the_same_verdicts_on_every_task(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    from scifig_tasks.vlmeval import dataset_classes

    started = time.monotonic()
    data, left_out = sample_data(tmp_path / "data")
    for name, reason in left_out.items():
        print(f"parity: benchmark {name} left out: {reason}")
    tasks = task_files.scifig_tasks()
    run = {name: info for name, info in tasks.items() if info.benchmark not in left_out}
    if not run:
        pytest.skip(f"no registered benchmark has sample data ({'; '.join(left_out.values())})")
    datasets = [name for name in names.DATASETS if name in run]
    # every task and group is a dataset, or a group VLMEvalKit runs as its datasets
    assert sorted(name for name in run if name not in datasets and name not in names.GROUPS) == []
    classes = {name: cls.__name__ for cls in dataset_classes() for name in cls.NAMES if name in datasets}
    assert sorted(classes) == sorted(datasets)
    top = [info.name for info in task_files.top_level(run)]
    served = [name for top_name in top for name in vlmeval_datasets(top_name, run, datasets)]

    def servers(cache: str) -> dict[str, str]:
        judge = openai_server(judge_reply).base_url
        return {"SCIFIG_JUDGE_MODEL": "fake-judge", "SCIFIG_JUDGE_BASE_URL": judge, "SCIFIG_JUDGE_CACHE": cache}

    vlm_env = {**lmms_env, **data, **servers(str(tmp_path / "judge-cache-vlmeval"))}
    # VLMEvalKit's API model sleeps up to 0.5 s before each request: more threads, the same requests
    completed, out = run_vlmeval(
        tmp_path,
        openai_server(model_reply).base_url,
        vlm_env,
        {name: classes[name] for name in served},
        extra=["--api-nproc", "32"],
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-6000:]
    vlmeval_s = time.monotonic() - started

    model = openai_server(model_reply)
    env = {**lmms_env, **data, **servers(str(tmp_path / "judge-cache-lmms"))}
    env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    lmms = run_cli("lmms-eval", [*args, "--tasks", ",".join(top), "--log_samples"], env, tmp_path / "lmms-out")
    assert lmms.returncode == 0, lmms.output[-4000:]
    results = lmms.results()
    lmms_results = {**results["results"], **results.get("groups", {})}
    samples = {task: {s["doc_id"]: s for s in lmms.samples(task)} for task in run if not run[task].is_group}
    check_recorded_scores(lmms_results, run)

    compared: dict[str, int] = {}
    not_compared: list[str] = []
    for name in served:
        scores = vlmeval_scores(out, name)
        records = read_jsonl(out / f"{MODEL}_{name}_scifig_records.jsonl")
        owned = leaves(name, run)
        asked = sum(len(samples[task]) for task in owned)
        assert len(records) == asked, (name, len(records), asked)
        sampled = {task for task in owned if repeats(task, run) > 1}
        if name in names.GENERIC:  # records name their documents
            for record in records:
                task = record["task"]
                expected = {key: samples[task][record["doc_id"]][key] for key in metric_names(task, run)}
                assert verdict(record, task in sampled) == verdict(expected, task in sampled), (name, record)
            for task in [name, *owned] if not sampled else []:
                mine = {key: value for key, value in scores["results"][task].items() if key != "samples"}
                theirs = {key: lmms_results[task][f"{key},none"] for key in mine}
                assert counts(mine) == counts(theirs), (name, task)
        else:  # a described dataset: records paired on the benchmark's document_id
            owner = registry.benchmark_of(name)
            dataset = names.described()[name]
            fields = owner.document_id
            expected_by_id: dict[tuple[Any, ...], tuple[str, Any]] = {}
            for task in owned:
                for sample in samples[task].values():
                    detail = sample.get(dataset.detail_metric) or next(  # else its per-question record
                        sample[metric] for metric in metric_names(task, run) if isinstance(sample.get(metric), dict)
                    )
                    key = tuple(detail.get(field) for field in fields)
                    assert key not in expected_by_id, (name, key)  # the id names one document
                    expected_by_id[key] = (task, detail)
            for record in records:
                task, detail = expected_by_id.pop(tuple(record.get(field) for field in fields))
                assert verdict(record, task in sampled) == verdict(detail, task in sampled), (name, record)
            assert expected_by_id == {}, name
            entry = lmms_results[name]
            detail_key = next(f"{m},none" for m in (dataset.detail_metric, "caption_report") if f"{m},none" in entry)
            if not sampled:  # the details every number of the dataset is computed from
                assert counts(scores["breakdown"]) == counts(entry[detail_key]), name
        if sampled:
            not_compared.append(f"{name} (samples {max(repeats(task, run) for task in sampled)} outputs)")
        compared[name] = len(records)

    scored = sum(1 for name in served if any(vlmeval_scores(out, name)["metrics"].get(k) for k in ("correct",)))
    assert scored > 0  # the replies score somewhere: equal verdicts are not all "wrong"
    covered = {leaf for name in compared for leaf in leaves(name, run)}
    assert sorted(task for task, info in run.items() if not info.is_group and task not in covered) == []
    print(
        f"parity: {len(compared)} VLMEvalKit datasets, {sum(compared.values())} questions, {len(top)} lmms-eval "
        f"tasks and groups; VLMEvalKit {vlmeval_s:.0f} s, total {time.monotonic() - started:.0f} s; corpus numbers "
        f"not compared: {', '.join(not_compared) or 'none'}"
    )
