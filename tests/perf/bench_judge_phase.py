"""The judge's share of a judged run, per benchmark: each benchmark's judged protocol through the real ``lmms-eval``
scoring path against a local judge that answers every request after a fixed latency, the working tree's code beside
a previous commit's, interleaved.

What it runs. For each benchmark, small synthetic data (no download) and the task group of its judged protocol:

* ``grab``: ``grab_llm_extract`` (the paper's LLM extraction, §4.5: every output to the judge);
* ``scifibench``: ``scifibench_paper`` (App. B: the judge parses every output);
* ``plot_twist``: ``plot_twist_open`` (App. B.3: the judge reformats every output);
* ``mmsci``: ``mmsci_paper`` (the authors' ``print_result.py``: every output that is not a bare label to the judge);
* ``mmsci_captioning``: ``mmsci_caption_image_only_paper`` (the authors' ``factscore.py`` and
  ``llm_judge_scores.py`` at aggregation: a split per caption, a rating per fact, G-Eval samples per caption index);
* ``charxiv``: ``charxiv_full_paper`` (the authors' ``src/evaluate.py``: every response graded at aggregation,
  descriptive ones in batches of five per template).

Each run is ``lmms-eval --model openai --tasks GROUP --process_docs_parallel N`` (what ``scifig eval`` passes for a
judge allowing ``N`` requests in flight), the model a local server that answers at once, the judge a second local
server on 127.0.0.1 answering after ``--latency`` seconds, ``SCIFIG_JUDGE_MAX_CONCURRENCY=N``, a fresh judge cache per
run. The model's replies hold each question's answer (every 10th a wrong one) in words the rules cannot read alone,
so the judge is asked as the protocol asks; the judge reads the answer from the output.

How to read the figures.

* ``requests``: what the judge server received; ``req/q``: per question scored (1 where every output is read by the
  judge; CharXiv's descriptive batches make it less; MMSci captioning's "questions" are figures: a split of one of
  its 3 captions, a rating per fact, a G-Eval per caption);
* ``judged s``: the judged phase, from the first request's arrival at the judge to the last reply written (start-up,
  inference and data loading are outside it);
* ``ideal s`` = requests x latency / concurrency, the judged phase if ``N`` requests were always in flight;
  ``efficiency`` = ideal / judged, goal >= 80%;
* ``in flight``: the judge server's peak of requests handled at once (should be ``N``);
* ``scores``: the run's scores (the groups' and tasks' numbers in the results file) are the same for both codes and
  every round, or which differ.

``before`` is the code of ``--baseline`` (default ``HEAD``; a git worktree of it in a temporary folder, put first on
``PYTHONPATH``), ``after`` the working tree; the rounds alternate which runs first. Medians and ranges over
``--rounds``.

Run from the repository root: ``python -m tests.perf.bench_judge_phase`` (options ``--benchmarks``, ``--questions``
(200 per benchmark), ``--latency`` (0.2 s), ``--judge-concurrency`` (8), ``--rounds`` (3), ``--baseline REV`` or
``--base DIR`` (a checkout to compare with), ``--no-before``). About 40 s per run on a 2-core machine (the
lmms-eval start-up most of it).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness.lmms import offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Policy, Reply, fixed_latency
from tests.perf._common import WRONG_EVERY, answer_policy, build_dataset, make_questions, run_lmms_eval

GOAL_EFFICIENCY = 0.8
REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = ("grab", "scifibench", "plot_twist", "mmsci", "mmsci_captioning", "charxiv")


def _wrong(index: int) -> bool:
    return index % WRONG_EVERY == WRONG_EVERY - 1


def _request_image(request: ChatRequest) -> bytes:
    """The bytes of the first image of a chat request."""
    for message in request.body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                return base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
    raise ValueError("request without an image")


@dataclass
class Case:
    """One benchmark's judged protocol: the group to run, its data settings, the model and the judge."""

    name: str
    group: str
    questions: int
    env: dict[str, str]
    model: Policy
    judge: Policy


# --- GRAB: grab_llm_extract ------------------------------------------------------------------------------------------

_GRAB_OUTPUT = re.compile(r'The output from the model answering the question is: "(.*)"\n', re.DOTALL)


def grab_case(root: Path, count: int) -> Case:
    questions = make_questions(count)
    data = root / "GRAB.parquet"
    build_dataset(questions.rows, (64, 48), "GRAB").to_parquet(str(data))

    def judge(request: ChatRequest) -> Reply:
        match = _GRAB_OUTPUT.search(request.text)
        if match is None:
            return Reply(text="not GRAB's extraction prompt", status=400)
        return Reply(text="None" if match.group(1) == "wrong" else match.group(1))  # the prompt's "no answer"

    env = {"SCIFIG_GRAB_DATA": str(data)}
    return Case("grab", "grab_llm_extract", count, env, answer_policy(questions.replies), judge)


# --- SciFIBench: scifibench_paper ------------------------------------------------------------------------------------

_SCIFIBENCH_SPLITS = {
    "CS_Figure2Caption": "f2c",
    "CS_Caption2Figure": "c2f",
    "General_Figure2Caption": "f2c",
    "General_Caption2Figure": "c2f",
}
_SCIFIBENCH_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)
_SCIFIBENCH_PICK = re.compile(r"the best match is option ([A-E])")


def scifibench_case(root: Path, count: int) -> Case:
    from PIL import Image

    from tests.harness.scifibench_data import Question, build, write_splits

    per_split = math.ceil(count / len(_SCIFIBENCH_SPLITS))
    if per_split > 64:
        raise SystemExit("scifibench: at most 256 questions (the images' colours name the question)")
    letters = "ABCDE"
    splits, answers = {}, {}
    for number, (split, kind) in enumerate(_SCIFIBENCH_SPLITS.items()):
        first = 64 * number
        chosen = [letters[(first + offset) % 5] for offset in range(per_split)]
        splits[split] = build([Question(kind, letter) for letter in chosen], first_id=first)
        answers |= {first + offset: letter for offset, letter in enumerate(chosen)}
    data = write_splits(splits, root / "scifibench")

    def model(request: ChatRequest) -> str:
        qid = Image.open(io.BytesIO(_request_image(request))).convert("RGB").getpixel((0, 0))[0]
        letter = answers[qid] if not _wrong(qid) else letters[(letters.index(answers[qid]) + 1) % 5]
        return f"Comparing the options for question {qid}, the best match is option {letter}, I think."

    def judge(request: ChatRequest) -> Reply:
        output = _SCIFIBENCH_OUTPUT.search(request.text)
        pick = _SCIFIBENCH_PICK.search(output.group(1)) if output else None
        return Reply(text=pick.group(1)) if pick else Reply(text="not SciFIBench's parsing prompt", status=400)

    env = {"SCIFIG_SCIFIBENCH_DATA": str(data)}
    return Case("scifibench", "scifibench_paper", per_split * len(_SCIFIBENCH_SPLITS), env, model, judge)


# --- Plot Twist: plot_twist_open -------------------------------------------------------------------------------------

_PLOT_TWIST_OUTPUT = re.compile(r'Model Answer: "(.*?)"\n', re.DOTALL)
_PLOT_TWIST_SAID = re.compile(r"I read (.*) on the chart for \[(.*)\]")


def plot_twist_case(root: Path, count: int) -> Case:
    import datasets

    from curation.plot_twist.build import QUESTION_TYPES, build_plot_twist

    per_chart = sum(len(kinds) for kinds in QUESTION_TYPES.values())
    built = build_plot_twist(
        root / "plot_twist", plots_per_type=math.ceil(count / per_chart), variants=["none"], workers=1, progress=False
    )
    table = datasets.Dataset.from_parquet(str(built.out / "test.parquet")).cast_column(
        "image", datasets.Image(decode=False)
    )
    rows = table.select_columns(["q_id", "question", "answer", "image"]).to_list()
    said = {}
    for index, row in enumerate(rows):
        said[(hashlib.sha256(row["image"]["bytes"]).hexdigest(), row["question"])] = (
            row["q_id"],
            f"{row['answer']}0" if _wrong(index) else row["answer"],
        )

    def model(request: ChatRequest) -> str:
        image = hashlib.sha256(_request_image(request)).hexdigest()
        for (digest, question), (q_id, answer) in said.items():
            if digest == image and request.text.endswith(question):
                return f"I read {answer} on the chart for [{q_id}]"
        raise ValueError(f"not a Plot Twist question: {request.text[-120:]!r}")

    def judge(request: ChatRequest) -> Reply:
        output = _PLOT_TWIST_OUTPUT.search(request.text)
        stated = _PLOT_TWIST_SAID.search(output.group(1)) if output else None
        if stated is None:
            return Reply(text="not Plot Twist's reformatting prompt", status=400)
        return Reply(text=f"The answer is {stated.group(1)}. I hope the answer is correct.")

    env = {"SCIFIG_PLOT_TWIST_DATA": str(built.out)}
    return Case("plot_twist", "plot_twist_open", len(rows), env, model, judge)


# --- MMSci: mmsci_paper ----------------------------------------------------------------------------------------------

_MMSCI_PICK = re.compile(r"option \(([A-D])\) fits")


def mmsci_case(root: Path, count: int) -> Case:
    from tests.harness.mmsci_data import Mcq, row_of_request, write

    if count > 256:
        raise SystemExit("mmsci: at most 256 questions (the images' colours name the row)")
    settings = ("fig2cap", "subfig2cap", "subcap2fig")
    questions = [Mcq(settings[row % 3], "ABCD"[row % 4]) for row in range(count)]
    data = write(root / "mmsci", questions)

    def model(request: ChatRequest) -> str:
        row = row_of_request(request.body)
        answer = questions[row].answer
        letter = "ABCD"[("ABCD".index(answer) + 1) % 4] if _wrong(row) else answer
        return f"For figure row {row}, option ({letter}) fits the panel best, as its caption describes it."

    def judge(request: ChatRequest) -> Reply:
        pick = _MMSCI_PICK.search(request.text)
        return Reply(text=pick.group(1)) if pick else Reply(text="not MMSci's parsing messages", status=400)

    return Case("mmsci", "mmsci_paper", count, {"SCIFIG_MMSCI_DATA": str(data)}, model, judge)


# --- MMSci captioning: mmsci_caption_image_only_paper ---------------------------------------------------------------


def mmsci_captioning_case(root: Path, count: int) -> Case:
    """One task of ``mmsci_captioning_paper`` (the group's two tasks aggregate one after the other, METEOR's start
    between them): ``count // 4`` figures, 3 sampled captions each (alike); the judge splits a caption into 3 facts (4
    pieces on ``-``), rates each 4 and answers G-Eval with a bare 4."""
    from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA
    from tests.harness.mmsci_data import Caption, row_of_request, write

    figures = max(1, count // 4)
    if figures > 256:
        raise SystemExit("mmsci_captioning: at most 1,024 questions (the images' colours name the row)")
    references = [f"Spectra of sample {row} under pressure, with a scale bar of one micron." for row in range(figures)]
    data = write(root / "mmsci", captions=[Caption(reference) for reference in references])

    def model(request: ChatRequest) -> str:  # the 3 sampled captions alike: which caption index gets which is moot
        return f"Spectra of sample {row_of_request(request.body)} under pressure, with a scale bar."

    def judge(request: ChatRequest) -> Reply:
        system = request.body["messages"][0]["content"] if request.body["messages"][0]["role"] == "system" else ""
        if system == FACTS_INSTRUCTION:
            caption = request.body["messages"][-1]["content"]
            return Reply(text=f"- {caption}\n- spectra under pressure\n- a scale bar")
        if system == GEVAL_RELEVANCE_CRITERIA:
            return Reply(text="4")
        return Reply(text="4")  # a rating

    env = {"SCIFIG_MMSCI_DATA": str(data), "SCIFIG_MMSCI_BERTSCORE_MODEL": str(root / "no-bertscore-model")}
    return Case("mmsci_captioning", "mmsci_caption_image_only_paper", figures, env, model, judge)


# --- CharXiv: charxiv_full_paper -------------------------------------------------------------------------------------

_CHARXIV_BATCH = re.compile(r"^T(\d+):\nResponse \1: (.*?)\nGround Truth \1: (.*?)\n\n", re.MULTILINE | re.DOTALL)
_CHARXIV_REASONING = re.compile(
    r"### Your Turn ###\n +\* Question: .*?\n +\* Ground Truth: (.*?)\n +\* Response: (.*?)\n", re.DOTALL
)


def charxiv_case(root: Path, count: int) -> Case:
    from PIL import Image

    from scifig_tasks.benchmarks.charxiv.prompts import descriptive_question, reasoning_question
    from tests.harness.charxiv_full_data import FILES, authors_file

    described, reasoned = authors_file("descriptive"), authors_file("reasoning")
    charts = list(described)[: max(1, math.ceil(count / 5))]
    folder = root / "charxiv"
    (folder / "images").mkdir(parents=True)
    for name in FILES:
        kept = {key: authors_file(name)[key] for key in charts}
        (folder / f"{name}_val.json").write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    replies: dict[tuple[int, str], str] = {}  # (chart, question text) -> the model's reply
    for number, key in enumerate(charts):
        buffer = io.BytesIO()
        Image.new("RGB", (8 + number, 8), "white").save(buffer, format="JPEG")  # the width names the chart
        (folder / "images" / f"{key}.jpg").write_bytes(buffer.getvalue())
        chart = described[key]
        asked = [
            (descriptive_question(template, chart["subplot_loc"]), answer)
            for template, answer in zip(chart["qids"], chart["answers"], strict=True)
        ]
        question = reasoned[key]
        asked.append(
            (reasoning_question(question["query"], question["inst_category"], question["answer"]), question["answer"])
        )
        for index, (text, answer) in enumerate(asked):
            said = "nothing I can read" if _wrong(5 * number + index) else answer
            replies[(number, text.strip())] = f"Looking at chart {key}, the answer is {said}."

    def model(request: ChatRequest) -> str:
        chart = Image.open(io.BytesIO(_request_image(request))).size[0] - 8
        return replies[(chart, request.text.strip())]

    def judge(request: ChatRequest) -> Reply:
        batch = _CHARXIV_BATCH.findall(request.text)
        if batch:
            grades: dict[str, Any] = {}
            for index, response, truth in batch:
                grades[f"extract_answer_T{index}"] = response
                grades[f"score_T{index}"] = int(truth.lower() in response.lower())
            return Reply(text=json.dumps(grades))
        reasoning = _CHARXIV_REASONING.search(request.text)
        if reasoning is None:
            return Reply(text="not CharXiv's grading query", status=400)
        truth, response = reasoning.groups()
        return Reply(text=json.dumps({"extracted_answer": response, "score": int(truth.lower() in response.lower())}))

    return Case("charxiv", "charxiv_full_paper", len(replies), {"SCIFIG_CHARXIV_FULL_DATA": str(folder)}, model, judge)


BUILDERS: dict[str, Callable[[Path, int], Case]] = {
    "grab": grab_case,
    "scifibench": scifibench_case,
    "plot_twist": plot_twist_case,
    "mmsci": mmsci_case,
    "mmsci_captioning": mmsci_captioning_case,
    "charxiv": charxiv_case,
}


# --- running ---------------------------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One run: what the judge server saw and the scores the results file holds."""

    requests: int
    seconds: float
    max_in_flight: int
    scores: dict[str, Any]
    problems: list[str] = field(default_factory=list)


def _numbers(value: Any) -> Any:
    """The numbers of a results value, where they lie (texts left out: a metric's reason for being unavailable names
    the run's own folders)."""
    if isinstance(value, dict):
        kept = {key: _numbers(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not _TEXT}
    if isinstance(value, list):
        return [_numbers(item) for item in value]
    return _TEXT if isinstance(value, str) else value


_TEXT = object()


def _scores(results: dict[str, Any] | None) -> dict[str, Any]:
    """Every number of the results' groups and tasks, breakdowns included (the judge's usage and timings are in the
    environment block, outside them)."""
    found: dict[str, Any] = {}
    for section in ("groups", "results"):
        for name, metrics in ((results or {}).get(section) or {}).items():
            found[name] = _numbers(metrics)
    return found


def _phase(requests: list[ChatRequest]) -> float:
    spans = [(r.received_at, r.finished_at) for r in requests if r.received_at is not None and r.finished_at]
    return max(end for _, end in spans) - min(start for start, _ in spans) if spans else math.nan


def run_case(case: Case, work: Path, base: Path | None, options: argparse.Namespace) -> Measured:
    """``lmms-eval --tasks case.group`` with ``base`` first on ``PYTHONPATH`` (None: the working tree)."""
    model = FakeOpenAIServer(case.model, model="fake-vlm").start()
    judge = FakeOpenAIServer(fixed_latency(case.judge, options.latency), model="fake-judge").start()
    try:
        work.mkdir(parents=True)
        env = offline_env(work) | case.env
        env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-model"}
        env |= {
            "SCIFIG_JUDGE_BASE_URL": judge.base_url,
            "SCIFIG_JUDGE_MODEL": "fake-judge",
            "SCIFIG_JUDGE_API_KEY": "sk-judge",
            "SCIFIG_JUDGE_MAX_CONCURRENCY": str(options.judge_concurrency),
            "SCIFIG_JUDGE_CACHE": str(work / "judge-cache"),
        }
        env.pop("PYTHONPATH", None)
        if base is not None:
            env["PYTHONPATH"] = str(base)
        model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=16"
        args = ["--model", "openai", "--model_args", model_args, "--tasks", case.group]
        args += ["--process_docs_parallel", str(options.docs_parallel or options.judge_concurrency)]
        measured = run_lmms_eval(args, env, work / "out", work / "lmms-eval.log", timeout_s=1800)
        requests, peak = judge.requests, judge.max_in_flight
        errors = model.errors + judge.errors
    finally:
        model.stop()
        judge.stop()
    problems = [f"exit code {measured.returncode}: {measured.log_tail(1500)}"] if measured.returncode else []
    problems += [f"server policy raised {error}" for error in errors[:3]]
    return Measured(len(requests), _phase(requests), peak, _scores(measured.results), problems)


@contextlib.contextmanager
def baseline(options: argparse.Namespace, tmp: Path) -> Iterator[Path | None]:
    """The code to compare with: ``--base DIR``, or a git worktree of ``--baseline`` removed afterwards."""
    if options.no_before:
        yield None
        return
    if options.base is not None:
        yield options.base.resolve()
        return
    tree = tmp / "before"
    subprocess.run(["git", "worktree", "add", "--detach", "--quiet", str(tree), options.baseline], cwd=REPO, check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)


def _imported_from(base: Path | None, where: Path) -> str:
    """The file ``scifig_tasks`` is imported from with ``base`` on ``PYTHONPATH``, in a folder of no package (as the
    runs: ``lmms-eval``'s own folder, not the checkout, is first on its path)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if base is not None:
        env["PYTHONPATH"] = str(base)
    done = subprocess.run(
        [sys.executable, "-c", "import scifig_tasks; print(scifig_tasks.__file__)"],
        env=env,
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _span(values: list[float], form: str) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):{form}} [{min(values):{form}}-{max(values):{form}}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated (default: all)")
    parser.add_argument("--questions", type=int, default=200, help="questions per benchmark (default 200)")
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency per request, s (default 0.2)")
    parser.add_argument("--judge-concurrency", type=int, default=8, help="SCIFIG_JUDGE_MAX_CONCURRENCY (default 8)")
    parser.add_argument(
        "--docs-parallel",
        type=int,
        help="lmms-eval's --process_docs_parallel (default: the judge's concurrency, as scifig eval passes it)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running both codes (default 3)")
    parser.add_argument("--baseline", default="HEAD", help="the commit whose code is 'before' (default HEAD)")
    parser.add_argument("--base", type=Path, help="a checkout to compare with instead of --baseline's worktree")
    parser.add_argument("--no-before", action="store_true", help="run the working tree's code only")
    options = parser.parse_args(argv)
    names = [name.strip() for name in options.benchmarks.split(",") if name.strip()]
    if set(names) - set(BENCHMARKS) or not names:
        parser.error(f"--benchmarks: choose from {', '.join(BENCHMARKS)}")
    if options.questions < 1 or options.judge_concurrency < 1 or options.latency <= 0 or options.rounds < 1:
        parser.error("need --questions >= 1, --judge-concurrency >= 1, --latency > 0 and --rounds >= 1")
    if options.docs_parallel is not None and options.docs_parallel < 1:
        parser.error("need --docs-parallel >= 1")

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scifig-bench-judge-phase-") as temporary:
        tmp = Path(temporary)
        cases = {name: BUILDERS[name](tmp / "data" / name, options.questions) for name in names}
        with baseline(options, tmp) as base:
            codes: dict[str, Path | None] = {"after": None} if base is None else {"after": None, "before": base}
            for label, where in codes.items():
                print(f"{label}: scifig_tasks from {_imported_from(where, tmp)}", flush=True)
            runs: dict[tuple[str, str], list[Measured]] = {}
            for round_ in range(options.rounds):
                order = list(codes) if round_ % 2 == 0 else list(reversed(codes))
                for name, case in cases.items():
                    for label in order:
                        work = tmp / "runs" / f"{name}-{label}-{round_}"
                        measured = run_case(case, work, codes[label], options)
                        runs.setdefault((name, label), []).append(measured)
                        efficiency = measured.requests * options.latency / options.judge_concurrency / measured.seconds
                        print(
                            f"round {round_ + 1}: {name} {label}: {measured.requests} requests, judged "
                            f"{measured.seconds:.2f} s, efficiency {efficiency:.1%}, load {os.getloadavg()[0]:.1f}",
                            flush=True,
                        )
                        for problem in measured.problems:
                            print(f"!! {name} {label}: {problem}", flush=True)

    print()
    print(
        f"bench_judge_phase: judge latency {options.latency:g} s, SCIFIG_JUDGE_MAX_CONCURRENCY="
        f"{options.judge_concurrency} (--process_docs_parallel {options.docs_parallel or options.judge_concurrency}), "
        f"{options.rounds} rounds, "
        f"{os.cpu_count()} CPUs; before = {options.base or options.baseline}"
    )
    header = (
        f"{'benchmark':<16} {'group':<30} {'code':<6} {'questions':>9} {'requests':>8} {'req/q':>5} "
        f"{'judged s':>20} {'ideal s':>7} {'efficiency':>23} {'in flight':>9}  scores"
    )
    print(header)
    print("-" * len(header))
    verdicts = []
    for name, case in cases.items():
        reference = runs.get((name, "before"), runs[(name, "after")])[0].scores
        for label in codes:
            measured = runs[(name, label)]
            requests = [m.requests for m in measured]
            ideal = [m.requests * options.latency / options.judge_concurrency for m in measured]
            efficiency = [i / m.seconds for i, m in zip(ideal, measured, strict=True) if m.seconds > 0]
            same = all(m.scores == reference for m in measured) and bool(reference)
            request_text = str(requests[0]) if len(set(requests)) == 1 else f"{min(requests)}-{max(requests)}"
            print(
                f"{name:<16} {case.group:<30} {label:<6} {case.questions:>9} {request_text:>8} "
                f"{statistics.median(requests) / case.questions:>5.2f} "
                f"{_span([m.seconds for m in measured], '.2f'):>20} {statistics.median(ideal):>7.2f} "
                f"{_span([100 * e for e in efficiency], '.1f') + ' %':>23} "
                f"{max(m.max_in_flight for m in measured):>9}  {'same' if same else 'DIFFER'}"
            )
            if label == "after":
                verdicts.append((name, statistics.median(efficiency) if efficiency else math.nan))
    for name, efficiency in verdicts:
        verdict = "meets the goal" if efficiency >= GOAL_EFFICIENCY else "MISSES the goal"
        print(f"goal: {name} efficiency {efficiency:.1%} >= {GOAL_EFFICIENCY:.0%} -> {verdict}")
    print(f"whole benchmark: {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
