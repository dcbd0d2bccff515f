"""How long a light ``scifig`` command takes from start to exit, and its peak memory, against another copy of the code.

Each command runs as a fresh process of the installed ``scifig`` console script, its output discarded: ``--version``,
``--help``, ``tasks``, ``config`` and the refusal of a mistyped task name before ``scifig eval`` starts lmms-eval
(``eval --model scifig_chance --tasks grabb``: one line with the closest name, exit status 2). With ``--base DIR`` (a
copy of the code to compare with, e.g. ``git archive HEAD | tar -x -C DIR``) each command also runs with
``PYTHONPATH=DIR``, labelled ``before``; the file each imports ``scifig_tasks`` from is printed first. The runs are
interleaved (command by command, before and after alternating in order, round by round) so that a noisy machine
weighs on both alike; each figure is the median of ``--runs`` rounds with its range, and ``after/before`` the median
of the per-round ratios. ``python -c pass`` is timed the same way, as the floor of any Python process here.

Run from the repository root: ``python -m tests.perf.bench_startup [--runs 7] [--base DIR]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "tasks": ["tasks"],
    "config": ["config"],
    "eval typo": ["eval", "--model", "scifig_chance", "--tasks", "grabb"],
}


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB) of one process."""
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    process.returncode = 0  # reaped above
    return wall, usage.ru_maxrss / 1024


def _env(base: Path | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["HF_HUB_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
    return {**env, "PYTHONPATH": str(base)} if base is not None else env


def _origin(env: dict[str, str], cwd: Path) -> str:
    probe = "import scifig_tasks; print(scifig_tasks.__file__)"
    return subprocess.run([sys.executable, "-c", probe], env=env, cwd=cwd, capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--base", type=Path, help="the code to compare with (put on PYTHONPATH)")
    args = parser.parse_args(argv)
    scifig = str(Path(sys.executable).with_name("scifig"))
    labels = ["after", "before"] if args.base else ["after"]
    envs = {"after": _env(None), "before": _env(args.base.resolve() if args.base else None)}
    with tempfile.TemporaryDirectory(prefix="scifig-bench-startup-") as folder:
        cwd = Path(folder)  # not the checkout: python -c would import its scifig_tasks first
        for label in labels:
            print(f"{label:6s} scifig_tasks from {_origin(envs[label], cwd).strip()}")
        walls: dict[tuple[str, str], list[float]] = {}
        memory: dict[tuple[str, str], list[float]] = {}
        floor: list[float] = []
        for index in range(args.runs):
            floor.append(_run([sys.executable, "-c", "pass"], envs["after"], cwd)[0])
            for name, arguments in COMMANDS.items():
                for label in labels if index % 2 == 0 else reversed(labels):
                    wall, rss = _run([scifig, *arguments], envs[label], cwd)
                    walls.setdefault((name, label), []).append(wall)
                    memory.setdefault((name, label), []).append(rss)
    print(f"{args.runs} rounds, interleaved; wall seconds median (min-max), peak RSS median MB")
    print(f"  python -c pass        {statistics.median(floor):5.2f} s ({min(floor):.2f}-{max(floor):.2f})")
    for name in COMMANDS:
        for label in labels:
            values = walls[(name, label)]
            print(
                f"  {name:10s} {label:6s}  {statistics.median(values):5.2f} s ({min(values):.2f}-{max(values):.2f})"
                f"  {statistics.median(memory[(name, label)]):5.0f} MB"
            )
        if args.base:
            ratios = [a / b for a, b in zip(walls[(name, "after")], walls[(name, "before")], strict=True)]
            print(f"  {name:10s} after/before x{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
