"""Throughput of the LLM-judge phase of a judged GRAB run, through lmms-eval and through VLMEvalKit.

What it measures. GRAB's LLM-extraction protocol (``grab_llm_extract`` / ``SciFig_GRAB_LLMExtract``) sends every
model output to the judge, one call per question, from the frameworks' per-document scoring threads. On a local
GRAB-schema parquet of ``--questions`` rows (``SCIFIG_GRAB_DATA``, small images: image handling is not what is
measured here), with a judge server on 127.0.0.1 that answers every request after exactly ``--latency`` seconds:

* lmms-eval: ``lmms-eval --model openai --tasks grab_llm_extract --process_docs_parallel N`` as the docs tell a user
  of a judge allowing ``N`` requests in flight (what ``scifig eval`` passes itself), the model being a second local
  server that replies at once;
* VLMEvalKit: ``SciFigGRAB.evaluate`` of ``grab_llm_extract`` (what VLMEvalKit's runner calls after inference) on a
  prediction file holding the same replies, in this process after ``register()``.

The judge runs with ``SCIFIG_JUDGE_MAX_CONCURRENCY=--judge-concurrency`` (default 8, the client's default) and a
fresh judge cache per framework. The judge server stamps each request when it arrives and when its reply has been
written; the *judge phase* is timed from the first arrival to the last reply, so framework start-up, inference and
data loading are outside it.

How to read the figures.

* ``ideal s`` = questions x latency / concurrency: the judge phase if ``concurrency`` requests were always in
  flight; ``efficiency`` = ideal / judge phase, goal >= 80%. lmms-eval scores the four GRAB subtasks one after the
  other, each ending on a partly empty wave, so even a perfect client needs ``best waves s`` = sum over subtasks of
  ceil(questions in it / concurrency) x latency (VLMEvalKit: one pool over all questions).
* ``max in flight`` is the judge server's peak of concurrently handled requests: it should equal the judge's
  concurrency (lmms-eval's default of 4 ``process_results`` threads, without the option, caps it at 4).
* ``load avg`` is the 1-minute load average when the phase ended: a value well above the machine's cores means the
  figures were taken on a busy machine.
* ``requests`` / ``accuracy``: one judge request per question (every 10th reply is deliberately wrong, the judge
  returns the model's output as the extracted answer, and "None" for the wrong one), accuracy equal to ``expected``.
  ``python -m tests.perf.bench_judge_phase`` times every benchmark's judged protocol in lmms-eval.

Run from the repository root: ``python -m tests.perf.bench_judge_throughput`` (options ``--questions`` (200),
``--latency`` (0.5 s), ``--judge-concurrency`` (8), ``--frameworks`` (``lmms-eval,vlmeval``)). It takes about a
minute at the defaults, both frameworks (50 s on a 2-core machine: lmms-eval start-up ~20 s, ``import vlmeval``
~10 s, two judge phases of ~13 s).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.harness.lmms import offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, fixed_latency
from tests.perf._common import answer_policy, build_dataset, make_questions, run_lmms_eval

GOAL_EFFICIENCY = 0.8
FRAMEWORKS = ("lmms-eval", "vlmeval")
_OUTPUT = re.compile(r'The output from the model answering the question is: "(.*)"\n', re.DOTALL)


def extracting_judge(request: ChatRequest) -> Reply:
    """The judge: returns the quoted model output as the extracted answer (GRAB's extraction prompt), and the prompt's
    "None" for the deliberately wrong reply, which holds no answer (a reply in no answer format is asked again)."""
    match = _OUTPUT.search(request.text)
    if match is None:
        return Reply(text="not GRAB's extraction prompt", status=400)
    return Reply(text="None" if match.group(1) == "wrong" else match.group(1))


@dataclass
class Phase:
    """What the judge server saw during one framework's run, and what the framework reported."""

    framework: str
    seconds: float
    requests: int
    max_in_flight: int
    load: float
    best_waves: float
    accuracy: float | None
    problems: list[str]


def _judge_phase(requests: list[ChatRequest]) -> float:
    spans = [(r.received_at, r.finished_at) for r in requests if r.received_at is not None and r.finished_at]
    return max(end for _, end in spans) - min(start for start, _ in spans) if spans else math.nan


def _judge_env(judge: FakeOpenAIServer, concurrency: int, cache: Path) -> dict[str, str]:
    return {
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge",
        "SCIFIG_JUDGE_MAX_CONCURRENCY": str(concurrency),
        "SCIFIG_JUDGE_CACHE": str(cache),
    }


def run_lmms(data: Path, workdir: Path, replies: list[str], options: argparse.Namespace, tasks: list[str]) -> Phase:
    """``lmms-eval --tasks grab_llm_extract --process_docs_parallel N`` with an instant model server and the
    fixed-latency judge."""
    model = FakeOpenAIServer(answer_policy(replies), model="fake-vlm").start()
    judge = FakeOpenAIServer(fixed_latency(extracting_judge, options.latency), model="fake-judge").start()
    try:
        env = offline_env(workdir)
        env |= {"SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-model"}
        env |= _judge_env(judge, options.judge_concurrency, workdir / "judge-cache")
        model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=16"
        args = ["--model", "openai", "--model_args", model_args, "--tasks", "grab_llm_extract"]
        args += ["--process_docs_parallel", str(options.judge_concurrency)]
        print(f"lmms-eval: running grab_llm_extract on {len(replies):,} questions ...", flush=True)
        measured = run_lmms_eval(args, env, workdir / "out", workdir / "lmms-eval.log", timeout_s=1800)
        load = os.getloadavg()[0]
        requests, peak = judge.requests, judge.max_in_flight
    finally:
        model.stop()
        judge.stop()
    group = (measured.results or {}).get("groups", {}).get("grab_llm_extract", {})
    problems = [f"exit code {measured.returncode}"] if measured.returncode else []
    if not group:
        problems.append(f"no grab_llm_extract results; log tail:\n{measured.log_tail(3000)}")
    per_task = Counter(tasks)
    waves = sum(math.ceil(n / options.judge_concurrency) for n in per_task.values()) * options.latency
    accuracy = float(group["accuracy,none"]) if group else None
    return Phase("lmms-eval", _judge_phase(requests), len(requests), peak, load, waves, accuracy, problems)


def run_vlmeval(data: Path, workdir: Path, replies: list[str], options: argparse.Namespace) -> Phase:
    """``SciFigGRAB.evaluate`` (``grab_llm_extract``) on a prediction file of the same replies, with the fixed-latency
    judge."""
    import pandas as pd

    judge = FakeOpenAIServer(fixed_latency(extracting_judge, options.latency), model="fake-judge").start()
    saved = dict(os.environ)
    try:
        lmu = workdir / "LMUData"
        lmu.mkdir()
        os.environ.update({"SCIFIG_GRAB_DATA": str(data), "LMUData": str(lmu), "SCIFIG_JUDGE_AUDIT": "0"})
        os.environ.update(_judge_env(judge, options.judge_concurrency, workdir / "judge-cache"))
        print("vlmeval: importing VLMEvalKit ...", flush=True)
        import vlmeval.dataset

        from scifig_tasks.vlmeval import register

        register()
        dataset = vlmeval.dataset.build_dataset("SciFig_GRAB_LLMExtract")
        tags = [int(re.search(r"\[q(\d+)\]", question).group(1)) for question in dataset.data["question"]]
        table = pd.DataFrame({"index": list(dataset.data["index"]), "prediction": [replies[q] for q in tags]})
        predictions = workdir / "fake-vlm_SciFig_GRAB_LLMExtract.tsv"
        table.to_csv(predictions, sep="\t", index=False)
        print(f"vlmeval: scoring {len(table):,} predictions ...", flush=True)
        metrics = dataset.evaluate(str(predictions))
        load = os.getloadavg()[0]
        requests, peak = judge.requests, judge.max_in_flight
    finally:
        judge.stop()
        os.environ.clear()
        os.environ.update(saved)
    waves = math.ceil(len(replies) / options.judge_concurrency) * options.latency
    accuracy = float(metrics["accuracy"])
    return Phase("vlmeval", _judge_phase(requests), len(requests), peak, load, waves, accuracy, [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--questions", type=int, default=200, help="number of questions (default 200)")
    parser.add_argument("--latency", type=float, default=0.5, help="judge latency per request, seconds (default 0.5)")
    parser.add_argument("--judge-concurrency", type=int, default=8, help="SCIFIG_JUDGE_MAX_CONCURRENCY (default 8)")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated: lmms-eval,vlmeval")
    options = parser.parse_args(argv)
    frameworks = [name.strip() for name in options.frameworks.split(",") if name.strip()]
    if options.questions < 1 or options.judge_concurrency < 1 or options.latency <= 0 or not frameworks:
        parser.error("need --questions >= 1, --judge-concurrency >= 1, --latency > 0 and a framework")
    if set(frameworks) - set(FRAMEWORKS):
        parser.error(f"unknown framework in {options.frameworks!r}; choose from {', '.join(FRAMEWORKS)}")
    questions = make_questions(options.questions)
    expected = questions.expected_correct / options.questions
    ideal = options.questions * options.latency / options.judge_concurrency

    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="scifig-bench-judge-") as tmp:
        root = Path(tmp)
        data = root / "grab" / "GRAB.parquet"
        data.parent.mkdir(parents=True)
        build_dataset(questions.rows, (64, 48), "question set").to_parquet(str(data))
        tasks = [row.task for row in questions.rows]
        started = time.monotonic()
        for name in frameworks:
            workdir = root / name
            workdir.mkdir()
            if name == "lmms-eval":
                phases.append(run_lmms(data, workdir, questions.replies, options, tasks))
            else:
                phases.append(run_vlmeval(data, workdir, questions.replies, options))
        whole = time.monotonic() - started

    print()
    print(
        f"bench_judge_throughput: GRAB LLM extraction, {options.questions:,} judged outputs, judge latency "
        f"{options.latency:g} s, SCIFIG_JUDGE_MAX_CONCURRENCY={options.judge_concurrency}, "
        f"{os.cpu_count()} CPUs; ideal {ideal:.2f} s (questions x latency / concurrency)"
    )
    header = (
        f"{'framework':<10} {'judge phase s':>13} {'ideal s':>8} {'best waves s':>12} {'efficiency':>10} "
        f"{'max in flight':>13} {'load avg':>8} {'requests':>8} {'accuracy':>8} {'expected':>8}"
    )
    print(header)
    print("-" * len(header))
    for phase in phases:
        efficiency = ideal / phase.seconds if phase.seconds > 0 else math.nan
        accuracy = f"{phase.accuracy:.4f}" if phase.accuracy is not None else "n/a"
        print(
            f"{phase.framework:<10} {phase.seconds:>13.2f} {ideal:>8.2f} {phase.best_waves:>12.2f} "
            f"{efficiency:>10.1%} {phase.max_in_flight:>13} {phase.load:>8.2f} {phase.requests:>8,} "
            f"{accuracy:>8} {expected:>8.4f}"
        )
    for phase in phases:
        efficiency = ideal / phase.seconds if phase.seconds > 0 else math.nan
        verdict = "meets the goal" if efficiency >= GOAL_EFFICIENCY else "MISSES the goal"
        print(f"goal: {phase.framework} efficiency {efficiency:.1%} >= {GOAL_EFFICIENCY:.0%} -> {verdict}")
        problems = list(phase.problems)
        if phase.requests != options.questions:
            problems.append(f"judge received {phase.requests} requests for {options.questions} questions")
        if phase.accuracy is not None and abs(phase.accuracy - expected) > 1e-9:
            problems.append(f"accuracy {phase.accuracy:.4f}, expected {expected:.4f}")
        if problems:
            print(f"!! {phase.framework}: " + "; ".join(problems))
    print(f"whole benchmark: {whole:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
