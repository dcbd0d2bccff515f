"""Where the suite's time goes: pytest's ``--durations=0`` lines, summed by folder (the kind of test) and by file.

``python -m tests.harness.durations LOG [--top N]`` reads a pytest log that holds the ``slowest durations`` section
(``.venv/bin/python -m pytest tests --durations=0 ... | tee LOG``) and prints two Markdown tables: the time per test
folder and the N files that take longest. A test's time is its setup, call and teardown added up; a module- or
session-scoped fixture is charged to the first test that needed it. Under pytest-xdist the figures are each worker's
own, so their sum is about workers × the wall time.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

LINE = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s (?P<phase>setup|call|teardown)\s+(?P<nodeid>\S+)")
KINDS = {
    "tests/core": "rules of the core, in process (judge and servers on 127.0.0.1)",
    "tests/lmms_eval": "the real lmms-eval / scifig eval command lines",
    "tests/vlmeval": "VLMEvalKit's runner and TSV files",
    "tests/report": "scifig report over real runs, Chromium",
    "tests/curation": "dataset builders: rendering, CLIP, Faiss",
    "tests/cli": "scifig commands in subprocesses",
    "tests/finetune": "LoRA training on a tiny model",
    "tests/project": "the environment, the wheel, the docs, the perf scripts",
}
"""What the tests of each folder mostly spend their time on."""


@dataclass
class Total:
    seconds: float = 0.0
    tests: set[str] = field(default_factory=set)

    def add(self, seconds: float, test: str) -> None:
        self.seconds += seconds
        self.tests.add(test)


def read(lines: Iterable[str]) -> dict[str, float]:
    """Seconds per test id (setup + call + teardown) from pytest's durations section."""
    per_test: dict[str, float] = defaultdict(float)
    for line in lines:
        if match := LINE.match(line.strip()):
            per_test[match["nodeid"]] += float(match["seconds"])
    return dict(per_test)


def folder(nodeid: str) -> str:
    path = Path(nodeid.split("::", 1)[0])
    parts = path.parts[:2] if len(path.parts) > 2 else path.parts[:1]
    return "/".join(parts)


def tables(per_test: dict[str, float], top: int) -> str:
    by_folder: dict[str, Total] = defaultdict(Total)
    by_file: dict[str, Total] = defaultdict(Total)
    for nodeid, seconds in per_test.items():
        by_folder[folder(nodeid)].add(seconds, nodeid)
        by_file[nodeid.split("::", 1)[0]].add(seconds, nodeid)
    whole = sum(per_test.values()) or 1.0
    rows = ["| folder | what its tests spend time on | tests | seconds | share |", "|---|---|---:|---:|---:|"]
    for name, total in sorted(by_folder.items(), key=lambda item: -item[1].seconds):
        share = 100 * total.seconds / whole
        kind = KINDS.get(name, "")
        rows.append(f"| `{name}` | {kind} | {len(total.tests)} | {total.seconds:.0f} | {share:.0f} % |")
    rows += ["", "| file | tests | seconds |", "|---|---:|---:|"]
    for name, total in sorted(by_file.items(), key=lambda item: -item[1].seconds)[:top]:
        rows.append(f"| `{name}` | {len(total.tests)} | {total.seconds:.0f} |")
    rows += ["", f"{len(per_test)} tests, {whole:.0f} s of test time in all."]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="a pytest log with the --durations=0 section")
    parser.add_argument("--top", type=int, default=20, help="how many files the second table lists (default 20)")
    args = parser.parse_args(argv)
    per_test = read(args.log.read_text(encoding="utf-8", errors="replace").splitlines())
    if not per_test:
        parser.error(f"{args.log}: no durations lines; run pytest with --durations=0")
    print(tables(per_test, args.top))


if __name__ == "__main__":
    main()
