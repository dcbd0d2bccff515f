"""Data parallel through lmms-eval's own engine: ``accelerate launch --num_processes 2 -m lmms_eval`` on CPUs.

Rule (docs/scale-out.md): lmms-eval shards the documents by rank and gathers the samples and per-sample metrics on
rank 0; scifig's models answer what they are given and answer it the same way on every rank. So a 2-process run
equals the single-process run: the same documents per task (none twice, none missing), the same score, the same
per-sample log, the same judge audit sample and the same number of judge requests. Two things legitimately differ
and are compared as such: the sample files list rank 0's documents before rank 1's (compared by document id), and
lmms-eval's standard errors sum the same values in that other order (equal to 1e-12, not bit for bit).

On CPUs the processes are started by ``accelerate launch --multi_gpu`` (torch's launcher) with
``ACCELERATE_USE_CPU=true`` (every process on the CPU, gloo): ``accelerate launch --cpu --num_processes 2`` starts
ONE process unless an MPI hostfile is given.
"""

from __future__ import annotations

import json
import math
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from curation.plot_twist.build import build_plot_twist
from scifig_tasks.core.clip_baseline import tiny_config
from tests.harness import charxiv_full_data
from tests.harness.grab_data import Row
from tests.harness.grab_data import write_parquet as write_grab
from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.mmsci_data import Caption, Mcq
from tests.harness.mmsci_data import write as write_mmsci
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply
from tests.harness.scifibench_data import Question, write_splits
from tests.harness.scifibench_data import build as build_scifibench
from tests.lmms_eval.test_chance_all_tasks import BENCHMARKS, leaf_tasks
from tests.lmms_eval.test_scifibench_clip_baseline import expected_letters

PROCESSES = 2
AUDITED_QUESTIONS = 25  # more than the audit's minimum sample (20): the audit draws a seeded sample of them
JUDGE_LETTER = "A"  # the test judge reads every output as A: it disagrees with every other chance letter
MCQ_JUDGE_PROMPT = re.compile(r"Here is the output from a generative model:\n.*\nThe output contains", re.DOTALL)


def launch(processes: int) -> list[str]:
    """``accelerate launch`` with every setting given (no config file read): ``processes`` CPU processes."""
    with socket.socket() as probe:  # a free loopback port for the process group's rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return [
        "launch",
        "--multi_gpu",
        "--num_processes",
        str(processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(port),
        "-m",
        "lmms_eval",
    ]


def cpu_env(workdir: Path, extra: dict[str, str]) -> dict[str, str]:
    """An :func:`offline_env` for a CPU run: every process on the CPU (gloo), one thread each, and accelerate's
    config folder inside ``workdir`` (a user's ``default_config.yaml`` cannot change the run)."""
    return {
        **offline_env(workdir),
        "ACCELERATE_USE_CPU": "true",
        "OMP_NUM_THREADS": "1",
        "HF_HOME": str(workdir / "hf-home"),
        **extra,
    }


def judge_policy(request: ChatRequest) -> Reply:
    """Multiple-choice parsing prompts (the audit's) get ``A``; CharXiv's gradings a 0 for every response, in the JSON
    they ask for; anything else an answer sentence."""
    if MCQ_JUDGE_PROMPT.search(request.text):
        return Reply(text=JUDGE_LETTER)
    if request.text.lstrip().startswith("You will be given"):
        batch = re.findall(r"^T(\d+):\nResponse", request.text, re.MULTILINE)
        grades = {f"score_T{i}": 0 for i in batch} | {f"extract_answer_T{i}": "" for i in batch}
        return Reply(text=json.dumps(grades or {"extracted_answer": "", "score": 0}))
    return Reply(text="The answer is 0. I hope the answer is correct.")


@pytest.fixture(scope="module")
def data_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Small data for the five benchmarks, with uneven shards (odd counts: lmms-eval pads rank 1's shard)."""
    root = tmp_path_factory.mktemp("scale_out_data")
    grab = write_grab(
        [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")] * 3,
        root / "grab" / "GRAB.parquet",
    )
    f2c = [Question("f2c", "ABCDE"[index % 5]) for index in range(AUDITED_QUESTIONS)]
    splits = {
        "CS_Figure2Caption": build_scifibench(f2c),
        "CS_Caption2Figure": build_scifibench([Question("c2f", "A"), Question("c2f", "C"), Question("c2f", "E")]),
        "General_Figure2Caption": build_scifibench([Question("f2c", "B"), Question("f2c", "D"), Question("f2c", "A")]),
        "General_Caption2Figure": build_scifibench([Question("c2f", "B"), Question("c2f", "C"), Question("c2f", "D")]),
    }
    scifibench = write_splits(splits, root / "scifibench")
    questions = [Mcq(setting, answer) for setting in ("fig2cap", "subfig2cap", "subcap2fig") for answer in "ADB"]
    mmsci = write_mmsci(root / "mmsci", questions, [Caption("The figure shows spectra of the sample.")])
    plot_twist = build_plot_twist(root / "plot_twist", plots_per_type=1, variants=["none"], workers=1, progress=False)
    return {
        "SCIFIG_GRAB_DATA": str(grab),
        "SCIFIG_SCIFIBENCH_DATA": str(scifibench),
        "SCIFIG_MMSCI_DATA": str(mmsci),
        "SCIFIG_PLOT_TWIST_DATA": str(plot_twist.out),
        **charxiv_full_data.sample(root / "charxiv"),
    }


@pytest.fixture(scope="module")
def chance_runs(tmp_path_factory: pytest.TempPathFactory, data_env: dict[str, str]) -> dict[int, tuple[CliRun, int]]:
    """``scifig_chance`` on the four groups, with a judge (audit of every task's rule-resolved answers at share
    0.05): once in one process, once in two. Each run gets its own judge cache, so neither sees the other's
    replies. Process count -> (run, judge requests)."""
    args = ["--model", "scifig_chance", "--tasks", ",".join(BENCHMARKS), "--log_samples"]
    runs: dict[int, tuple[CliRun, int]] = {}
    for processes in (1, PROCESSES):
        workdir = tmp_path_factory.mktemp(f"chance_{processes}")
        with FakeOpenAIServer(judge_policy) as judge:
            judged = {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "fake-judge"}
            judged |= {"SCIFIG_JUDGE_AUDIT": "0.05", "SCIFIG_JUDGE_MAX_RETRIES": "0"}
            env = cpu_env(workdir, {**data_env, **judged})
            if processes == 1:
                completed = run("lmms-eval", args, env, workdir / "out")
            else:
                completed = run("accelerate", [*launch(processes), *args], env, workdir / "out")
            assert not judge.errors, judge.errors
            runs[processes] = (completed, judge.count)
    return runs


def ranks_seen(output: str) -> set[str]:
    """The ranks whose evaluator logged ``Running on rank N``."""
    return set(re.findall(r"Running on rank (\d+)", output))


def equal_scores(single: dict[str, Any], parallel: dict[str, Any], where: str) -> None:
    """Every metric of every task and group equal; lmms-eval's standard errors to 1e-12 (summation order)."""
    assert single.keys() == parallel.keys(), where
    for name, metrics in single.items():
        assert metrics.keys() == parallel[name].keys(), (where, name)
        for metric, value in metrics.items():
            other = parallel[name][metric]
            if "_stderr," in metric and isinstance(value, float) and isinstance(other, float):
                assert math.isclose(value, other, rel_tol=1e-12, abs_tol=1e-15), (where, name, metric, value, other)
            else:
                assert value == other, (where, name, metric, value, other)


@pytest.mark.slow
@pytest.mark.cli
def test_two_processes_really_run_and_each_takes_half(chance_runs: dict[int, tuple[CliRun, int]]) -> None:
    single, _ = chance_runs[1]
    parallel, _ = chance_runs[PROCESSES]
    assert single.returncode == 0 and parallel.returncode == 0, parallel.output[-4000:]
    assert "Error during evaluation" not in single.output + parallel.output, parallel.output[-4000:]
    assert ranks_seen(single.output) == {"0"}
    assert ranks_seen(parallel.output) == {"0", "1"}, parallel.output[-4000:]


@pytest.mark.slow
@pytest.mark.cli
def test_two_processes_score_every_task_as_one_process(chance_runs: dict[int, tuple[CliRun, int]]) -> None:
    single, parallel = chance_runs[1][0].results(), chance_runs[PROCESSES][0].results()
    assert parallel["n-samples"] == single["n-samples"]
    assert parallel["group_subtasks"] == single["group_subtasks"]
    equal_scores(single["results"], parallel["results"], "results")
    equal_scores(single["groups"], parallel["groups"], "groups")
    for group in BENCHMARKS:
        for task in leaf_tasks(single, group):
            assert single["n-samples"][task]["effective"] > 0, task


@pytest.mark.slow
@pytest.mark.cli
def test_two_processes_log_every_document_once_with_the_same_answer(
    chance_runs: dict[int, tuple[CliRun, int]],
) -> None:
    single, parallel = chance_runs[1][0], chance_runs[PROCESSES][0]
    results = single.results()
    for group in BENCHMARKS:
        for task in leaf_tasks(results, group):
            alone, shared = single.samples(task), parallel.samples(task)
            ids = [sample["doc_id"] for sample in shared]
            assert sorted(ids) == list(range(results["n-samples"][task]["effective"])), (task, ids)
            assert {sample["doc_id"]: sample for sample in shared} == {sample["doc_id"]: sample for sample in alone}
            assert ids != sorted(ids) or len(ids) <= PROCESSES, task  # rank 0's documents first: really sharded


@pytest.mark.slow
@pytest.mark.cli
def test_two_processes_audit_the_same_sample_with_the_same_judge_requests(
    chance_runs: dict[int, tuple[CliRun, int]],
) -> None:
    """The audit runs once, on rank 0, over the gathered records: same sample, same disagreements, same count."""
    (single, single_requests), (parallel, parallel_requests) = chance_runs[1], chance_runs[PROCESSES]
    audit = single.results()["results"]["scifibench_cs_figure2caption"]["breakdown,none"]["judge_audit"]
    assert audit["agreement"]["n"] == 20, audit  # a sample of the 25 rule-resolved answers
    assert audit["disagreements"], audit
    for task, metrics in single.results()["results"].items():
        breakdown = metrics.get("breakdown,none")
        if isinstance(breakdown, dict) and "judge_audit" in breakdown:
            assert parallel.results()["results"][task]["breakdown,none"]["judge_audit"] == breakdown["judge_audit"]
    assert parallel_requests == single_requests > 0


@pytest.mark.slow
@pytest.mark.cli
def test_clip_baseline_in_two_processes_predicts_as_one(tmp_path: Path) -> None:
    """Every process builds the same seeded weights on its own device; the gathered predictions are those open_clip
    gives in this process."""
    f2c = build_scifibench([Question("f2c", "ABCDE"[index % 5]) for index in range(5)])
    c2f = build_scifibench([Question("c2f", "ABCDE"[index % 5]) for index in range(3)], first_id=50)
    data = write_splits({"CS_Figure2Caption": f2c, "CS_Caption2Figure": c2f}, tmp_path / "data")
    model_args = "pretrained=tiny,device=cpu,seed=3"
    args = ["--model", "scifig_clip", "--model_args", model_args, "--batch_size", "4", "--tasks", "scifibench_cs"]
    env = cpu_env(tmp_path, {"SCIFIG_SCIFIBENCH_DATA": str(data)})

    completed = run("accelerate", [*launch(PROCESSES), *args, "--log_samples"], env, tmp_path / "out")

    assert completed.returncode == 0 and ranks_seen(completed.output) == {"0", "1"}, completed.output[-4000:]
    predicted: dict[tuple[str, int], str] = {}
    for kind, task in (("f2c", "scifibench_cs_figure2caption"), ("c2f", "scifibench_cs_caption2figure")):
        samples = completed.samples(task)
        assert sorted(sample["doc_id"] for sample in samples) == list(range(len(samples))), task
        predicted |= {(kind, sample["breakdown"]["ID"]): sample["breakdown"]["predicted"] for sample in samples}
    assert predicted == expected_letters(tiny_config(), f2c, c2f)
