"""``scifig report`` timed: the report code of a baseline commit (before) against the working tree's (after), in one
run, on these cases.

``--case grab`` (the default): the full GRAB composition (2,170 questions) drawn by the generator at ``--dpi``
(default 100: 600 x 500 PNGs of about 80 kB; ``--data DIR`` reuses a build of ``scifig curate grab --dpi 100 --out
DIR``), one ``lmms-eval --model scifig_chance --tasks grab --log_samples`` run over it and copies for 1, 4 and 16 runs
(``--runs``), each ``samples.html`` also loaded in headless Chromium: ``ready`` (ms from navigation start until the
page's script has run), ``painted`` (until the first frame after that), ``chromium`` (the whole process), the output
folder's bytes and their ratio to the distinct figures it shows.

``--case scifibench``, ``plot_twist``, ``mmsci``, ``charxiv_full``: that benchmark at full size, its published sizes
(:mod:`tests.perf.full_size`: SciFIBench's four splits of 500, five images to a Caption→Figure question; Plot Twist's
paper charts with every robustness variant and the ChartQA subset; CharXiv's 1,000 validation charts, 5,000
questions; MMSci, which publishes no size, 1,000 questions per setting and 1,000 figures to caption), a drawn figure
per image; one ``lmms-eval`` run of every top-level task and group of the benchmark, asked of a local model (its reply
a function of the model's name and the request) and scored with a local judge answering in the shapes its prompts ask
for (MMSci: a tiny local BERTScore model), and copies of it for ``--runs`` runs (default 1).

``--case mixed``: runs of every registered benchmark. Each benchmark's small data
(``tests/harness/<benchmark>_data.py``: ``sample(root)``, with what some of its tasks read besides, as the parity test
builds it; a benchmark without such a module is left out, said with its reason), one ``lmms-eval`` run of every
top-level task and group over it for each of two reply policies, and copies of those runs under other model names for
``--models`` runs in all (default 16): the GRAB, CharXiv, MMSci multiple-choice and captioning (both settings), Plot
Twist (question types, robustness variants, ChartQA) and SciFIBench (five-image Caption→Figure questions, the alignment
experiment) sections, the comparison and the sample viewer.

``--case every``: one run of each benchmark at full size (GRAB's from the chance model) and the mixed case, in one
table (a registered benchmark without a full-size builder, a plugin's, is left out, said with its reason).

Printed for every case but ``grab``: wall and CPU seconds (the report's own and its forked processes'), peak RSS;
then where the after side's time went, read from the progress lines ``scifig report`` prints (``[N s]`` stamps), and,
with ``--profile``, the report functions that took longest under cProfile (one more after build of the first case).
Every report is built with an API key in the environment (:data:`KEY`), as a user who ran a judge has one: the report
masks it in everything it reads.

Before: the baseline's ``scifig_tasks`` (``git archive REV scifig_tasks``; ``--baseline``, default ``HEAD``) first on
``PYTHONPATH``; after: the working tree. Each of ``--repeat`` rounds (default 3) builds both into fresh folders, case
by case, alternating which goes first; medians and ranges are printed.

Run from the repository root: ``python -m tests.perf.bench_report`` (options ``--case``, ``--baseline``, ``--repeat``,
``--work DIR`` to keep the data and runs for a later call, ``--runs``, ``--profile``; for GRAB ``--data``, ``--dpi``;
for the mixed case ``--models``). Chromium: ``bash .ci/chromium``. Building the data and the runs takes longest the
first time (``--work`` keeps them), on the 2-core machine: GRAB's generator a few minutes, SciFIBench's 8,500
requests about 7 minutes, CharXiv's 10,000 and MMSci's 14,000 about 20 minutes each, the mixed case's two lmms-eval
runs about two minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.harness.lmms import offline_env
from tests.perf import full_size

ROOT = Path(__file__).resolve().parents[2]
PROBE = """<pre id="probe"></pre><script>
(() => {
  const found = {ready: performance.now()};
  const write = () => { document.getElementById("probe").textContent = JSON.stringify(found); };
  requestAnimationFrame(() => setTimeout(() => { found.painted = performance.now(); write(); }, 0));
  window.addEventListener("load", () => { found.load = performance.now(); write(); });
  write();
})();
</script>
"""
POLICIES = ("org/Model-A-7B-Instruct", "vendor/model_b-v2.1")
"""The two reply policies of the mixed case, named as the models (the model's name picks its replies)."""
STEP = re.compile(r"^scifig report: (.*) \[(\d+) s\]$")
KEY = "sk-bench-0123456789abcdefghijklmnopqrstuv"
"""The API key in every report's environment."""


def _cli(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


# ---- the runs ----------------------------------------------------------------------------------------------------


def grab_data(dpi: int, folder: Path) -> Path:
    """The full GRAB composition drawn by the generator into ``folder``."""
    command = [_cli("scifig"), "curate", "grab", "--out", str(folder), "--dpi", str(dpi)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return folder


def copies(first: Path, work: Path, count: int, names: list[str] | None = None) -> list[Path]:
    """The run folders of ``count`` models: the runs under ``first`` (one results file and its sample logs each),
    then copies of them in turn under the names ``model-NN`` (or ``names``)."""
    runs = [path.parent for path in sorted(first.rglob("*_results.json"))]
    folders = []
    for number in range(1, count + 1):
        source = runs[(number - 1) % len(runs)]
        target = work / "runs" / f"model-{number:02d}"
        if not target.is_dir():  # kept from an earlier call with the same --work
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(source, partial)
            (copied,) = partial.glob("*_results.json")
            name = names[number - 1] if names and number <= len(names) else f"model-{number:02d}"
            copied.write_text(json.dumps(json.loads(copied.read_text()) | {"model_name": name}))
            partial.rename(target)
        folders.append(target)
    return folders


def grab_runs(data: Path, work: Path, counts: list[int]) -> dict[int, list[Path]]:
    """One chance run over ``data`` (kept from an earlier call with the same ``--work``), then copies of it as models
    ``model-01``..; the folders of each run count."""
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    if not any((work / "chance").rglob("*_results.json")):
        command = [_cli("lmms-eval"), "--model", "scifig_chance", "--tasks", "grab", "--log_samples"]
        with (work / "lmms-eval.log").open("wb") as log:
            command += ["--output_path", str(work / "chance")]
            subprocess.run(command, env=env, check=True, stdout=log, stderr=log)
    folders = copies(work / "chance", work, max(counts))
    return {count: folders[:count] for count in counts}


def served_runs(tasks: list[str], env: dict[str, str], out: Path, policies: tuple[str, ...] = POLICIES) -> None:
    """One ``lmms-eval`` run of ``tasks`` per reply policy into ``out/<policy>``: a local model whose reply is a
    function of the model's name and the request, a local judge answering in the shapes its prompts ask for."""
    from tests.harness.openai_server import ChatRequest, FakeOpenAIServer
    from tests.vlmeval.test_parity_every_task import REPLIES, judge_reply

    def model_reply(request: ChatRequest) -> str:
        seed = f"{request.body.get('model')}\n{request.text}".encode()
        return REPLIES[hashlib.sha256(seed).digest()[0] % len(REPLIES)]

    with FakeOpenAIServer(model_reply) as model, FakeOpenAIServer(judge_reply) as judge:
        served = env | {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-bench"}
        served |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "bench-judge"}
        for name in policies:
            arguments = f"model_version={name},max_retries=1,retry_backoff_s=0"
            command = [_cli("lmms-eval"), "--model", "openai", "--model_args", arguments, "--tasks", ",".join(tasks)]
            command += ["--log_samples", "--output_path", str(out / name.replace("/", "_"))]
            with (out.parent / "lmms-eval.log").open("ab") as log:
                subprocess.run(command, env=served, check=True, stdout=log, stderr=log, stdin=subprocess.DEVNULL)


def model_names(count: int) -> list[str]:
    """The runs' model names: the reply policies', then ``org/model-NN-Instruct``."""
    return [*POLICIES, *(f"org/model-{number:02d}-Instruct" for number in range(len(POLICIES) + 1, count + 1))]


def mixed_runs(work: Path, models: int) -> tuple[list[Path], dict[str, str]]:
    """Every registered benchmark's small data, a run of every top-level task and group over it per reply policy
    (:data:`POLICIES`), and copies of the runs for ``models`` runs in all; the run folders and the environment that
    reads their data. A ``--work`` folder that holds them from an earlier call (``env.json`` and the runs) is used
    again."""
    saved = work / "env.json"
    if saved.is_file() and any((work / "lmms").rglob("*_results.json")):
        return copies(work / "lmms", work, models, model_names(models)), json.loads(saved.read_text())
    from scifig_tasks.core import task_files
    from tests.harness.mmsci_data import tiny_bert
    from tests.vlmeval.test_parity_every_task import sample_data

    data, left_out = sample_data(work / "data")
    for name, reason in left_out.items():
        print(f"benchmark {name} left out: {reason}", file=sys.stderr)
    tasks = [info.name for info in task_files.top_level(task_files.scifig_tasks()) if info.benchmark not in left_out]
    env = {**offline_env(work), **data, "SCIFIG_MMSCI_BERTSCORE_MODEL": str(tiny_bert(work / "tiny-bert"))}
    served_runs(tasks, env, work / "lmms")
    saved.write_text(json.dumps(env))
    return copies(work / "lmms", work, models, model_names(models)), env


def full_runs(name: str, work: Path, count: int, dpi: int = 100) -> tuple[list[Path], dict[str, str]]:
    """``count`` runs of benchmark ``name`` at full size (:mod:`tests.perf.full_size`): for GRAB the chance model over
    the generator's full composition, for the others every top-level task of the benchmark asked of the local model
    (the first reply policy) and scored with the local judge; copies under other model names. Kept in ``work`` for
    a later call with the same ``--work``."""
    work.mkdir(parents=True, exist_ok=True)
    if name == "grab":
        data = work / "grab"
        if not (data / "GRAB.parquet").is_file():
            shutil.rmtree(data, ignore_errors=True)
            grab_data(dpi, data)
        return grab_runs(data, work, [count])[count], {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    from scifig_tasks.core import task_files
    from tests.harness.mmsci_data import tiny_bert

    env = {**offline_env(work), **full_size.built(name, work / "data")}
    if name == "mmsci":
        bert = work / "tiny-bert"
        env["SCIFIG_MMSCI_BERTSCORE_MODEL"] = str(bert if (bert / "config.json").is_file() else tiny_bert(bert))
    if not any((work / "lmms").rglob("*_results.json")):
        tops = task_files.top_level(task_files.scifig_tasks())
        served_runs([info.name for info in tops if info.benchmark == name], env, work / "lmms", POLICIES[:1])
    return copies(work / "lmms", work, count, model_names(count)), env


def baseline_tree(work: Path, revision: str) -> Path:
    """``revision``'s ``scifig_tasks`` unpacked into ``work/base``."""
    base = work / "base"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir()
    archive = subprocess.run(["git", "archive", revision, "scifig_tasks"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
    return base


# ---- measuring -----------------------------------------------------------------------------------------------------


def build(runs: list[Path], out: Path, env: dict[str, str], tree: Path) -> dict[str, Any]:
    """One ``scifig report`` with ``scifig_tasks`` imported from ``tree``: wall and CPU seconds (the process and the
    drawing processes it waited for), peak RSS (bytes) and its progress lines."""
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "report", *map(str, runs), "--out", str(out)]
    start = time.monotonic()
    process = subprocess.Popen(
        command,
        cwd=tree,
        env=env | {"PYTHONPATH": str(tree), "OPENAI_API_KEY": KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    error = process.stderr.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"scifig report failed in {tree}: {error[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak": usage.ru_maxrss * 1024, "stderr": error}


def steps(stderr: str) -> list[tuple[str, int]]:
    """The progress lines of a report: (step, seconds since it started)."""
    return [(found.group(1), int(found.group(2))) for line in stderr.splitlines() if (found := STEP.match(line))]


def step_table(found: list[list[tuple[str, int]]]) -> list[str]:
    """Where the time went, per step of the after side (the median over rounds of the seconds until the next step);
    the samples page's per-task counts are folded into its step."""
    spans: dict[str, list[int]] = {}
    for lines in found:
        kept = [(text, at) for text, at in lines if not text.startswith("samples.html: figures of")]
        for (text, at), (_, after) in zip(kept, kept[1:], strict=False):
            name = re.sub(r"\d[\d,]*", "N", text) if text.startswith(("reading", "read ", "samples.html")) else text
            spans.setdefault(name, []).append(after - at)
    return [f"| {name} | {statistics.median(seconds):.0f} |" for name, seconds in spans.items()]


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def figure_bytes(folder: Path) -> int:
    """Bytes of the distinct full-size figures the page shows (the stored images in its figure folder)."""
    figures = folder / "sample-figures"
    return sum(path.stat().st_size for path in figures.iterdir() if ".thumb." not in path.name)


def load_in_chromium(page: Path, profile: Path) -> dict[str, float]:
    """The probe's figures for a copy of ``page``, and the Chromium process's wall time in ms."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (bash .ci/chromium installs it)")
    probed = page.with_name("probed-" + page.name)
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--dump-dom"]
    start = time.monotonic()
    completed = subprocess.run(
        [*command, probed.as_uri()], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    wall = (time.monotonic() - start) * 1000
    probed.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', completed.stdout, re.S)
    if found is None:
        raise SystemExit(f"no probe output from Chromium: {completed.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&quot;", '"')) | {"chromium": wall}


def spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    if not values:
        return "-"
    scaled = [value * scale for value in values]
    low, high = min(scaled), max(scaled)
    return f"{statistics.median(scaled):.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]"


def profiled(runs: list[Path], out: Path, env: dict[str, str], work: Path) -> list[str]:
    """One after build under cProfile: the report's functions that took longest (cumulative seconds)."""
    stats = work / "report.prof"
    command = [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "scifig_tasks.commands.main", "report"]
    command += [*map(str, runs), "--out", str(out)]
    keyed = env | {"OPENAI_API_KEY": KEY}
    subprocess.run(command, cwd=ROOT, env=keyed, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    table = pstats.Stats(str(stats))
    rows = [
        (cumulative, f"{Path(name).parent.name}/{Path(name).name}:{function}")
        for (name, _, function), (_, _, _, cumulative, _) in table.stats.items()  # type: ignore[attr-defined]
        if "scifig_tasks" in name and "commands" not in name and function not in ("<module>", "build_report", "_build")
    ]
    return [f"| {where} | {seconds:.1f} |" for seconds, where in sorted(rows, reverse=True)[:15]]


# ---- the cases -----------------------------------------------------------------------------------------------------


Case = tuple[str, list[Path], dict[str, str]]
"""A report to time: its name in the table, the run folders, the environment that reads their data."""


def interleaved(cases: list[Case], trees: dict[str, Path], repeat: int, work: Path) -> dict[str, Any]:
    """Each case's report built by both trees, ``repeat`` rounds, the side that goes first alternating round by
    round: per case and side the wall and CPU seconds and peak RSS of every round, and the after side's progress
    lines."""
    found: dict[str, Any] = {name: {"before": {}, "after": {}, "steps": []} for name, _, _ in cases}
    for round_number in range(repeat):
        for name, runs, env in cases:
            for side in ("before", "after") if round_number % 2 == 0 else ("after", "before"):
                out = work / f"report-{side}-{round_number}"
                measured = build(runs, out, env, trees[side])
                for figure in ("wall", "cpu", "peak"):
                    found[name][side].setdefault(figure, []).append(measured[figure])
                if side == "after":
                    found[name]["steps"].append(steps(measured["stderr"]))
                shutil.rmtree(out)
                print(f"round {round_number + 1}, {name}, {side}: {measured['wall']:.1f} s", file=sys.stderr)
    return found


def timing_table(found: dict[str, Any]) -> list[str]:
    """One row per case and side: wall and CPU seconds and peak MB, median [range]; the before/after wall ratio."""
    lines = ["| report | code | wall s | CPU s | peak MB |", "|---|---|---|---|---|"]
    for name, sides in found.items():
        for side in ("before", "after"):
            numbers = sides[side]
            lines.append(
                f"| {name} | {side} | {spread(numbers['wall'])} | {spread(numbers['cpu'])} | "
                f"{spread(numbers['peak'], 1 / 2**20, 0)} |"
            )
        speed = statistics.median(sides["before"]["wall"]) / statistics.median(sides["after"]["wall"])
        lines.append(f"| {name} | before / after | {speed:.1f}x |  |  |")
    return lines


def report_cases(args: argparse.Namespace, work: Path, cases: list[Case], title: str) -> None:
    """``cases`` timed before and after (:func:`interleaved`) and printed: the table, the after side's seconds per
    step of each case and, with ``--profile``, the first case's after build under cProfile."""
    trees = {"before": baseline_tree(work, args.baseline), "after": ROOT}
    found = interleaved(cases, trees, args.repeat, work)
    print(f"{title}; median [range] of {args.repeat} rounds, before and after interleaved")
    print(f"before: scifig_tasks of {args.baseline}; after: the working tree")
    print("\n".join(timing_table(found)))
    for name, sides in found.items():
        print(f"\n{name}, after: seconds per step (its progress lines)\n| step | s |\n|---|---|")
        print("\n".join(step_table(sides["steps"])))
    if args.profile:
        name, runs, env = cases[0]
        print(f"\n{name}, after, under cProfile: the report's functions that took longest")
        print("| function | cumulative s |\n|---|---|")
        print("\n".join(profiled(runs, work / "report-profiled", env, work)))


def left_out() -> dict[str, str]:
    """Registered benchmarks with no full-size builder (a plugin's), with why."""
    from scifig_tasks.core import registry

    built = {"grab", *full_size.BUILDERS}
    reason = "no full-size builder in tests/perf/full_size.py"
    return {name: reason for name in registry.benchmarks() if name not in built}


def mixed(args: argparse.Namespace, work: Path) -> None:
    runs, env = mixed_runs(work, args.models)
    name = f"mixed, {args.models} runs"
    report_cases(args, work, [(name, runs, env)], f"every registered benchmark's small data, {args.models} runs")


def full(args: argparse.Namespace, work: Path) -> None:
    """One benchmark at full size, ``--runs`` runs (default 1)."""
    counts = args.runs or [1]
    cases: list[Case] = []
    for count in counts:
        runs, env = full_runs(args.case, work, max(counts), args.dpi)
        cases.append((f"{args.case}, {count} run{'s' if count != 1 else ''}", runs[:count], env))
    report_cases(args, work, cases, f"{args.case} at full size (tests/perf/full_size.py)")


def every(args: argparse.Namespace, work: Path) -> None:
    """Every registered benchmark with a full-size builder, one run each, and the mixed case."""
    for name, reason in left_out().items():
        print(f"benchmark {name} left out: {reason}", file=sys.stderr)
    cases: list[Case] = []
    for name in ("grab", *full_size.BUILDERS):
        runs, env = full_runs(name, work / name, 1, args.dpi)
        cases.append((f"{name}, full size, 1 run", runs, env))
    runs, env = mixed_runs(work / "mixed", args.models)
    cases.append((f"mixed, {args.models} runs", runs, env))
    report_cases(args, work, cases, "each benchmark at full size (one run) and the mixed case")


def grab(args: argparse.Namespace, work: Path) -> None:
    data = args.data or grab_data(args.dpi, work / "grab")
    runs = grab_runs(data, work, args.runs)
    trees = {"before": baseline_tree(work, args.baseline), "after": ROOT}
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    figures: dict[tuple[str, int], dict[str, list[float]]] = {}
    for round_number in range(args.repeat):
        for count in args.runs:
            sides = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
            for side in sides:
                out = work / f"report-{side}-{count}-{round_number}"
                measured = build(runs[count], out, env, trees[side])
                loaded = load_in_chromium(out / "samples.html", work / f"profile-{side}-{count}-{round_number}")
                shown = figure_bytes(out)
                entry = figures.setdefault((side, count), {})
                for name, value in {
                    "build": measured["wall"],
                    "peak": measured["peak"],
                    "output": folder_bytes(out),
                    "ratio": folder_bytes(out) / shown,
                    "page": (out / "samples.html").stat().st_size,
                    **loaded,
                }.items():
                    entry.setdefault(name, []).append(value)
                shutil.rmtree(out)
                print(f"round {round_number + 1}, {count} runs, {side}: {measured['wall']:.1f} s", file=sys.stderr)
    print(f"GRAB, 2,170 questions at dpi {args.dpi}, one chance run and copies; median [range] of {args.repeat} rounds")
    header = "| runs | code | build s | peak MB | output MB (x figures) | samples.html MB | ready ms | painted ms |"
    header += " chromium ms |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for count in args.runs:
        for side in ("before", "after"):
            found = figures[(side, count)]
            print(
                f"| {count} | {side} | {spread(found['build'])} | {spread(found['peak'], 1 / 2**20, 0)} | "
                f"{spread(found['output'], 1 / 2**20, 0)} (x{statistics.median(found['ratio']):.2f}) | "
                f"{spread(found['page'], 1 / 2**20, 1)} | {spread(found['ready'], digits=0)} | "
                f"{spread(found.get('painted', []), digits=0)} | {spread(found['chromium'], digits=0)} |"
            )
        before, after = figures[("before", count)], figures[("after", count)]
        speed = statistics.median(before["build"]) / statistics.median(after["build"])
        load = statistics.median(before["ready"]) / statistics.median(after["ready"])
        print(f"|  | before / after | {speed:.1f}x |  |  |  | {load:.1f}x |  |  |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cases = ("grab", "mixed", "every", *full_size.BUILDERS)
    parser.add_argument("--case", choices=cases, default="grab")
    parser.add_argument("--models", type=int, default=16, help="mixed, every: the mixed runs reported (copies of two)")
    parser.add_argument("--baseline", default="HEAD", help="the commit whose scifig_tasks is 'before'")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="also one after build under cProfile (not grab)")
    parser.add_argument("--data", type=Path, help="grab: a full GRAB build (default: drawn at --dpi)")
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--runs", type=int, nargs="+", help="grab: the run counts (1 4 16); a benchmark's case: (1)")
    parser.add_argument("--work", type=Path, help="keep the files here, for a later call (default: a temporary folder)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.case == "grab":
        args.runs = args.runs or [1, 4, 16]
    {"grab": grab, "mixed": mixed, "every": every}.get(args.case, full)(args, work)
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
