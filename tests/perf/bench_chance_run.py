"""Where the time of a chance-model run goes: ``lmms-eval --model scifig_chance --tasks grab`` through the real CLI on
GRAB data drawn by the generator, first and later runs, ``scifig rescore``, and scifig's share of a profiled run.

What it measures, on one GRAB build (``--data DIR``, or a balanced subset of ``--limit`` questions drawn at ``--dpi``
into a temporary directory; the full composition is ``scifig curate grab --dpi 100 --out DIR`` then ``--data DIR``):

* ``first run``: a fresh ``datasets`` cache (``HF_DATASETS_CACHE`` empty): the parquet is read into Arrow, the split is
  checked (no validation record yet) and evaluated; each of GRAB's four subtasks reads the same split.
* ``later run``: the same command again on the same cache: the validation record of the unchanged file is found, so
  no image is read to check the data.
* ``rescore``: ``scifig rescore`` of the later run's saved outputs (it reloads the data, as a user's would).

Each figure is the median wall time of ``--runs`` rounds (a round: first run, later run, rescore, in that order).
Then one more first run under ``cProfile``: its wall time, the seconds spent inside scifig's code (every call from
outside ``scifig_tasks`` into it, callees included, less the calls scifig's patches make back into lmms-eval's own
code), that share of the wall time, the seconds in data validation,
the number of images fully decoded (PIL ``ImageFile.load`` calls) and the heaviest scifig entries.

How to read it: a run of the chance model needs no pixel, so after the structural check at load (header, size,
chunk checksums) no image should be decoded at all; ``scifig share`` is what scifig adds to lmms-eval's own time.

Run from the repository root: ``python -m tests.perf.bench_chance_run`` (options ``--data``, ``--limit`` (default
200), ``--dpi`` (default 100), ``--runs`` (default 3)). On 2 cores the full 2,170-question build at dpi 100 takes
about 3 minutes per round.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.harness.lmms import offline_env

_SCIFIG = os.sep + "scifig_tasks" + os.sep
_LMMS_EVAL = os.sep + "lmms_eval" + os.sep


def _cli(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _timed(command: list[str], env: dict[str, str], log: Path) -> float:
    start = time.monotonic()
    with log.open("ab") as out:
        completed = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.monotonic() - start
    if completed.returncode != 0:
        raise SystemExit(f"{command[0]} exited {completed.returncode}; see {log}")
    return wall


def _eval_args(output: Path) -> list[str]:
    return ["--model", "scifig_chance", "--tasks", "grab", "--log_samples", "--output_path", str(output)]


def _round(data: Path, work: Path) -> tuple[float, float, float]:
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    log = work / "log.txt"
    first = _timed([_cli("lmms-eval"), *_eval_args(work / "first")], env, log)
    later = _timed([_cli("lmms-eval"), *_eval_args(work / "later")], env, log)
    rescore = _timed([_cli("scifig"), "rescore", str(work / "later"), "--out", str(work / "rescored")], env, log)
    return first, later, rescore


def _profile(data: Path, work: Path) -> None:
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data)}
    profile = work / "run.prof"
    command = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "lmms_eval", *_eval_args(work / "o")]
    wall = _timed(command, env, work / "log.txt")
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    inside, entries, validation, decodes = 0.0, {}, 0.0, 0
    for (file, line, name), (_, calls, _, cumulative, callers) in stats.items():
        if file.endswith(("PIL/ImageFile.py", "PIL\\ImageFile.py")) and name == "load":
            decodes += calls
        if _SCIFIG not in file:
            continue
        if file.endswith("core/validation.py") and name == "validate":
            validation += cumulative
        entered = sum(edge[3] for caller, edge in callers.items() if _SCIFIG not in caller[0])
        if entered:
            inside += entered
            entries[f"{file.split(_SCIFIG)[-1]}:{line} {name}"] = entered
    for (file, _, _), (*_, callers) in stats.items():  # back into lmms-eval from scifig's patches: not scifig's time
        if _LMMS_EVAL in file and _SCIFIG not in file:
            inside -= sum(edge[3] for caller, edge in callers.items() if _SCIFIG in caller[0])
    print(f"profiled first run: wall {wall:.1f} s (under cProfile)")
    print(f"  inside scifig:    {inside:.1f} s = {inside / wall:.0%} of the wall time (lmms-eval's own code excluded)")
    print(f"  data validation:  {validation:.1f} s")
    print(f"  images decoded:   {decodes} (PIL ImageFile.load calls)")
    print("  heaviest entries into scifig (callees included, lmms-eval's too):")
    for entry, seconds in sorted(entries.items(), key=lambda item: -item[1])[:6]:
        print(f"    {seconds:7.2f} s  {entry}")


def _build(limit: int, dpi: int, folder: Path) -> Path:
    from curation.grab.build import build_grab

    build_grab(folder, limit=limit, dpi=dpi)
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="a GRAB build (folder or parquet); default: draw --limit questions")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="scifig-bench-chance-"))
    try:
        data = args.data or _build(args.limit, args.dpi, root / "data")
        rounds = []
        for index in range(args.runs):
            work = root / f"round{index}"
            work.mkdir()
            rounds.append(_round(data, work))
        print(f"GRAB data: {data} ({args.runs} rounds, median wall seconds)")
        for label, values in zip(("first run", "later run", "rescore"), zip(*rounds, strict=True), strict=True):
            print(f"  {label:10s} {statistics.median(values):7.1f} s   (min {min(values):.1f}, max {max(values):.1f})")
        (root / "profile").mkdir()
        _profile(data, root / "profile")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
