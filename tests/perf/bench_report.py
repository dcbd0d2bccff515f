"""``scifig report`` at full size: build time, peak memory, output bytes and the time headless Chromium takes to make
``samples.html`` interactive, for 1, 4 and 16 runs, the report code of ``HEAD`` (before) against the working tree's
(after), in one run.

Data: the full GRAB composition (2,170 questions) drawn by the generator at ``--dpi`` (default 100: 600 x 500 PNGs of
about 80 kB, as ``bench_chance_run`` uses; ``--data DIR`` reuses a build of ``scifig curate grab --dpi 100 --out DIR``),
one ``lmms-eval --model scifig_chance --tasks grab --log_samples`` run over it, and copies of that run's results and
sample logs under other model names for 4 and 16 runs (the same documents, so the page has one row per document and
one column per run, as for checkpoints of one model).

Before: the ``HEAD`` tree (``git archive HEAD scifig_tasks | tar -x``) first on ``PYTHONPATH``, so ``scifig_tasks`` is
imported from it; after: the working tree. For each of ``--repeat`` rounds and each run count, both reports are built
(alternating which goes first) into fresh folders, then both ``samples.html`` are loaded in headless Chromium. Printed
per case: the median and range of

* ``build``: wall time of ``python -m scifig_tasks.commands.main report RUNS --out DIR``;
* ``peak``: the report process's peak RSS (the kernel's ``ru_maxrss``);
* ``output``: the bytes under the report folder, and their ratio to the bytes of the distinct figures the page shows
  at full size (the stored images);
* ``ready``: milliseconds from navigation start until the page's script has run (rows, filters and counts in the
  document), read by a probe script appended to a copy of the page; ``painted``: until the first frame after that
  (``-`` when Chromium wrote the page out before that frame, as it does once the old page's load event has come);
  ``chromium``: the wall time of the whole ``chromium --headless --dump-dom`` process (start-up and image loading
  included).

Run from the repository root: ``python -m tests.perf.bench_report`` (options ``--data``, ``--dpi``, ``--runs 1 4 16``,
``--repeat`` (default 3), ``--work DIR`` to keep the files). Chromium: ``bash .ci/chromium``. The before side of 16
runs takes about a minute per round (build and page load).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.harness.lmms import offline_env

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


def _cli(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def grab_data(dpi: int, folder: Path) -> Path:
    """The full GRAB composition drawn by the generator into ``folder``."""
    command = [_cli("scifig"), "curate", "grab", "--out", str(folder), "--dpi", str(dpi)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return folder


def chance_runs(data: Path, work: Path, counts: list[int]) -> dict[int, list[Path]]:
    """One chance run over ``data``, then copies of it as models ``model-01``..; the folders of each run count."""
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    first = work / "runs" / "model-01"
    command = [_cli("lmms-eval"), "--model", "scifig_chance", "--tasks", "grab", "--log_samples"]
    with (work / "lmms-eval.log").open("wb") as log:
        subprocess.run([*command, "--output_path", str(first)], env=env, check=True, stdout=log, stderr=log)
    (results,) = first.rglob("*_results.json")
    folders = [results.parent]
    for number in range(2, max(counts) + 1):
        target = work / "runs" / f"model-{number:02d}"
        shutil.copytree(results.parent, target)
        (copied,) = target.glob("*_results.json")
        content = json.loads(copied.read_text())
        copied.write_text(json.dumps(content | {"model_name": f"model-{number:02d}"}))
        folders.append(target)
    first_results = json.loads(results.read_text())
    results.write_text(json.dumps(first_results | {"model_name": "model-01"}))
    return {count: folders[:count] for count in counts}


def baseline_tree(work: Path) -> Path:
    """``HEAD``'s ``scifig_tasks`` unpacked into ``work/base``."""
    base = work / "base"
    base.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD", "scifig_tasks"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
    return base


def build(runs: list[Path], out: Path, env: dict[str, str], tree: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one ``scifig report`` with ``scifig_tasks`` imported from ``tree``."""
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "report", *map(str, runs), "--out", str(out)]
    start = time.monotonic()
    process = subprocess.Popen(
        command, cwd=tree, env=env | {"PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        error = process.stderr.read().decode()[-2000:] if process.stderr else ""
        raise SystemExit(f"scifig report failed in {tree}: {error}")
    return wall, usage.ru_maxrss * 1024


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="a full GRAB build (default: drawn at --dpi into the work folder)")
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, help="keep the files here (default: a temporary folder)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-report-"))
    work.mkdir(parents=True, exist_ok=True)
    data = args.data or grab_data(args.dpi, work / "grab")
    runs = chance_runs(data, work, args.runs)
    trees = {"before": baseline_tree(work), "after": ROOT}
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    figures: dict[tuple[str, int], dict[str, list[float]]] = {}
    for round_number in range(args.repeat):
        for count in args.runs:
            sides = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
            for side in sides:
                out = work / f"report-{side}-{count}-{round_number}"
                wall, peak = build(runs[count], out, env, trees[side])
                loaded = load_in_chromium(out / "samples.html", work / f"profile-{side}-{count}-{round_number}")
                shown = figure_bytes(out)
                entry = figures.setdefault((side, count), {})
                for name, value in {
                    "build": wall,
                    "peak": peak,
                    "output": folder_bytes(out),
                    "ratio": folder_bytes(out) / shown,
                    "page": (out / "samples.html").stat().st_size,
                    **loaded,
                }.items():
                    entry.setdefault(name, []).append(value)
                shutil.rmtree(out)
                print(f"round {round_number + 1}, {count} runs, {side}: {wall:.1f} s", file=sys.stderr)
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
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
