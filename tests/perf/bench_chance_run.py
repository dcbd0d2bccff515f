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

``--share [--base DIR]``: scifig's share of an lmms-eval run instead, every figure measured in the same run with the
configurations interleaved round by round (medians, min-max, and ratios to the bare run of the same round), all
through the real ``lmms-eval`` CLI with lmms-eval's own offline ``dummy`` model (it answers without looking):

* ``bare``: a plain lmms-eval task group written for the run (``plain_grab``: four tasks, one per GRAB task type,
  reading the same parquet with lmms-eval's own loader, exact-match accuracy; no scifig code) with scifig's
  ``lmms_eval.models`` entry point taken away: a ``sitecustomize`` on ``PYTHONPATH`` filters it out of
  ``importlib.metadata.entry_points`` (what lmms-eval reads), so nothing of scifig is imported (checked);
* ``grab``: scifig's ``grab`` group on the same data (``SCIFIG_GRAB_DATA``), scifig installed;
* ``plain``: the plain group again with scifig installed (its entry point loaded): what scifig costs a run of tasks
  that are not its own (an lmms-eval built-in task reads its data from the Hub, which a benchmark must not reach; a
  task from ``--include_path`` goes through the same task manager and loader);
* with ``--base DIR`` (a checkout of the code to compare with, e.g. ``git archive HEAD | tar -x -C DIR``), ``grab``
  and ``plain`` once more with ``PYTHONPATH=DIR``, labelled ``before`` (``--base LABEL=DIR``: ``grab`` only, labelled
  ``LABEL``; repeatable); the module each imports scifig from is printed.

Wall and CPU seconds (user and system, of the ``lmms-eval`` process and its children) are both printed: on a shared
machine the CPU figure moves less with the other load.
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
import textwrap
import time
from pathlib import Path

from tests.harness.lmms import offline_env

_SCIFIG = os.sep + "scifig_tasks" + os.sep
_LMMS_EVAL = os.sep + "lmms_eval" + os.sep


def _cli(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _timed(command: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> float:
    start = time.monotonic()
    with log.open("ab") as out:
        completed = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False, cwd=cwd)
    wall = time.monotonic() - start
    if completed.returncode != 0:
        raise SystemExit(f"{command[0]} exited {completed.returncode}; see {log}")
    return wall


def _timed_cpu(command: list[str], env: dict[str, str], log: Path, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of one command."""
    start = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{command[0]} exited {process.returncode}; see {log}")
    return wall, usage.ru_utime + usage.ru_stime


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


PLAIN_TASKS = {"properties": "plain_grab_properties", "function": "plain_grab_functions"}
PLAIN_TASKS |= {"series": "plain_grab_series", "transform": "plain_grab_transforms"}
PLAIN_UTILS = """
import datasets


def docs(dataset, task):
    dataset = dataset.cast_column("decoded_image", datasets.Image(decode=False))
    return dataset.filter(lambda value: value == task, input_columns="task")


def doc_to_visual(doc):
    import io

    from PIL import Image

    return [Image.open(io.BytesIO(doc["decoded_image"]["bytes"])).convert("RGB")]


def doc_to_text(doc):
    return doc["question"]


def process_results(doc, results):
    return {"accuracy": float((results[0] or "").strip() == doc["answer"])}
"""
DROP_ENTRY_POINT = """
import importlib.metadata as metadata

_entry_points = metadata.entry_points


def entry_points(**params):
    found = _entry_points(**params)
    if not params:
        found = [point for group in found.values() for point in group] if hasattr(found, "values") else found
    return metadata.EntryPoints(point for point in found if not point.value.startswith("scifig_tasks."))


metadata.entry_points = entry_points
"""


def _plain_tasks(folder: Path, parquet: Path) -> Path:
    """The ``plain_grab`` group: GRAB's data as a plain lmms-eval user would write it, without scifig."""
    folder.mkdir(parents=True)
    selectors = "".join(
        f"\n\ndef {name}_docs(dataset):\n    return docs(dataset, {kind!r})\n" for kind, name in PLAIN_TASKS.items()
    )
    (folder / "plain_utils.py").write_text(PLAIN_UTILS + selectors)
    for name in PLAIN_TASKS.values():
        (folder / f"{name}.yaml").write_text(
            textwrap.dedent(
                f"""\
                task: {name}
                dataset_path: parquet
                dataset_kwargs:
                  data_files:
                    test: {parquet}
                test_split: test
                output_type: generate_until
                process_docs: !function plain_utils.{name}_docs
                doc_to_visual: !function plain_utils.doc_to_visual
                doc_to_text: !function plain_utils.doc_to_text
                doc_to_target: answer
                generation_kwargs:
                  max_new_tokens: 1024
                  temperature: 0
                  do_sample: false
                process_results: !function plain_utils.process_results
                metric_list:
                  - metric: accuracy
                    aggregation: mean
                    higher_is_better: true
                """
            )
        )
    group = "group: plain_grab\ntask:\n" + "".join(f"  - {name}\n" for name in PLAIN_TASKS.values())
    (folder / "plain_grab.yaml").write_text(
        group + "aggregate_metric_list:\n  - metric: accuracy\n    weight_by_size: true\n"
    )
    return folder


def _share_commands(data: Path, work: Path, bases: dict[str, Path]) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Label -> (lmms-eval arguments, extra environment) of each configuration of ``--share``."""
    parquet = data / "GRAB.parquet" if data.is_dir() else data
    plain = _plain_tasks(work / "plain_tasks", parquet)
    shim = work / "no_scifig"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(DROP_ENTRY_POINT)
    grab = ["--model", "dummy", "--tasks", "grab"]
    plain_args = ["--model", "dummy", "--tasks", "plain_grab", "--include_path", str(plain)]
    scifig = {"SCIFIG_GRAB_DATA": str(data)}
    commands = {
        "bare": (plain_args, {"PYTHONPATH": str(shim)}),
        "grab": (grab, scifig),
        "plain": (plain_args, {}),
    }
    for label, base in bases.items():
        commands[f"grab {label}"] = (grab, {**scifig, "PYTHONPATH": str(base)})
        if label == "before":
            commands[f"plain {label}"] = (plain_args, {"PYTHONPATH": str(base)})
    return commands


def _imported_from(extra: dict[str, str], work: Path) -> str:
    """Where ``scifig_tasks`` is imported from under ``extra`` (``not imported`` when the entry point is filtered)."""
    probe = (
        "import sys, importlib.metadata as m\n"
        "[point.load() for point in m.entry_points(group='lmms_eval.models')]\n"
        "print(sys.modules['scifig_tasks'].__file__ if 'scifig_tasks' in sys.modules else 'not imported')"
    )
    env = {**offline_env(work), **extra}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True, cwd=work)
    return done.stdout.strip()


def share(data: Path, runs: int, bases: dict[str, Path], root: Path) -> None:
    """``--share``: the configurations of the module docstring, interleaved, ``runs`` rounds."""
    commands = _share_commands(data, root, bases)
    for label, (_, extra) in commands.items():
        print(f"{label:13s} scifig from: {_imported_from(extra, root)}")
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for index in range(runs):
        order = list(commands) if index % 2 == 0 else list(reversed(commands))
        for label in order:
            arguments, extra = commands[label]
            work = root / f"round{index}" / label.replace(" ", "_")
            work.mkdir(parents=True)
            env = {**offline_env(work), **extra}
            output = ["--output_path", str(work / "out"), "--log_samples"]
            times[label].append(_timed_cpu([_cli("lmms-eval"), *arguments, *output], env, work / "log.txt", work))
    print(f"GRAB data: {data}; {runs} rounds, interleaved; median (min-max); ratio: to bare in the same round")
    for kind, column in (("wall", 0), ("CPU", 1)):
        print(f"  {kind} seconds")
        for label in commands:
            values = [pair[column] for pair in times[label]]
            shares = [pair[column] / bare[column] for pair, bare in zip(times[label], times["bare"], strict=True)]
            print(
                f"    {label:13s} {statistics.median(values):6.1f} s ({min(values):.1f}-{max(values):.1f})   "
                f"x{statistics.median(shares):.3f} ({min(shares):.3f}-{max(shares):.3f})"
            )


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
    parser.add_argument("--share", action="store_true", help="scifig's share of an lmms-eval run (module docstring)")
    parser.add_argument(
        "--base",
        action="append",
        default=[],
        metavar="[LABEL=]DIR",
        help="with --share: code to compare with (PYTHONPATH), labelled LABEL (default: before); repeatable",
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="scifig-bench-chance-"))
    try:
        data = args.data or _build(args.limit, args.dpi, root / "data")
        if args.share:
            bases = dict(base.split("=", 1) if "=" in base else ("before", base) for base in args.base)
            share(data.resolve(), args.runs, {label: Path(path).resolve() for label, path in bases.items()}, root)
            return
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
