"""Runs compared question by question: the table ``scifig compare`` prints and the report's "Comparison" section.

Each run's per-question verdicts are what its scorer logged, read as the sample viewer reads them
(:mod:`scifig_tasks.report.sample_records`); questions are paired by their own ids, else by their position, and the
statistics are :mod:`scifig_tasks.core.compare`. What is compared, pooled and refused: docs/reports.md, "Comparing
runs".
"""

from __future__ import annotations

import functools
import json
import string
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.core import compare as stats
from scifig_tasks.core import registry
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.run_files import RECORDS_SUFFIX, RESULTS_SUFFIX, SCORES_SUFFIX, read_results
from scifig_tasks.report.document import Note, Section, Table
from scifig_tasks.report.runs import Run, task_position
from scifig_tasks.report.sample_records import TaskFacts, cell_of, is_benchmark_task

WIDTH = 100
"""Columns of the terminal table and its verdict lines."""
NO_CORRECTNESS = "no per-question correctness (corpus-level metrics only)"


def not_pooled() -> set[str]:
    """Groups of one experiment asking the same questions under several conditions (caption markings, chart variants;
    the descriptions' ``report.not_pooled``): their tasks are compared one by one, never pooled (a question would
    count once per condition)."""
    return {group for described in registry.benchmarks().values() for group in described.report.not_pooled}


NO_RECORDS = "No run logged its samples (lmms-eval --log_samples), so the models are not compared question by question."


@dataclass
class Answers:
    """One run's verdicts on one task, keyed two ways: by the records' id fields and by ``doc_id``."""

    by_id: dict[Any, bool] | None = field(default_factory=dict)
    """``None`` when a question lacks its id fields or two share them."""
    by_doc: dict[Any, bool] | None = field(default_factory=dict)
    """``None`` when a ``doc_id`` is logged twice."""
    framework: str = "lmms-eval"
    by_position: bool = True
    """Every ``doc_id`` is the question's position among its task's documents
    (:func:`scifig_tasks.report.runs.task_position`), so ``by_doc`` pairs with another framework's."""
    version: str | None = None
    unscored: bool = False
    """Some question has no per-question correctness (captioning)."""


@dataclass
class Row:
    """One task (or a benchmark's pooled tasks) of one pair of runs: compared, refused, or not compared."""

    benchmark: str
    task: str
    a: int
    b: int
    result: stats.Paired | None = None
    reason: str = ""
    status: str = "compared"
    """``compared``, ``refused`` (the reason says why) or ``not compared`` (a task only one run has)."""
    tasks: int = 1
    """Tasks pooled in the row (more than one: the benchmark's row)."""

    def as_json(self, labels: Sequence[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "benchmark": self.benchmark,
            "task": self.task,
            "a": labels[self.a],
            "b": labels[self.b],
            "status": self.status,
        }
        if self.tasks > 1:
            entry["pooled_tasks"] = self.tasks
        if self.result is not None:
            entry |= self.result.as_json()
            entry["verdict"] = stats.verdict(self.result, self.task, labels[self.a], labels[self.b])
        if self.reason:
            entry["reason"] = self.reason
        return entry


@dataclass
class Comparison:
    """Every pair's rows, with the runs' labels and descriptions."""

    labels: list[str]
    names: list[str]
    rows: list[Row]
    resamples: int
    seed: int

    @property
    def compared(self) -> list[Row]:
        return [row for row in self.rows if row.result is not None]

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": [{"label": label, "run": name} for label, name in zip(self.labels, self.names, strict=True)],
            "bootstrap": {"resamples": self.resamples, "seed": self.seed, "level": stats.LEVEL},
            "test": f"exact McNemar, significant at p < {stats.ALPHA}",
            "comparisons": [row.as_json(self.labels) for row in self.rows],
        }


def run_label(index: int) -> str:
    """The label of the ``index``-th run (0-based): ``A`` .. ``Z``, then ``R27``, ``R28``, ..."""
    return string.ascii_uppercase[index] if index < 26 else f"R{index + 1}"


# ---- damaged runs ---------------------------------------------------------------------------------------------------


def _log_name(results: Path, task: str) -> Path:
    """The per-question log beside a run's results file: lmms-eval's ``<date>_samples_<task>.jsonl`` beside
    ``<date>_results.json``, VLMEvalKit's ``..._scifig_records.jsonl`` beside ``..._scifig_scores.json``."""
    if results.name.endswith(SCORES_SUFFIX):
        return results.with_name(results.name[: -len(SCORES_SUFFIX)] + RECORDS_SUFFIX)
    return results.with_name(f"{results.name[: -len(RESULTS_SUFFIX)]}_samples_{task}.jsonl")


def _counted(results: Path, task: str) -> str:
    """What the results file says the run scored for ``task``: ``its results file X counts N samples of T`` (lmms-eval
    ``n-samples``, VLMEvalKit metric ``n``), or that it scores the task when it gives no count."""
    counts: Any = None
    try:
        if results.name.endswith(SCORES_SUFFIX):
            counts = json.loads(results.read_text(encoding="utf-8")).get("metrics", {}).get("n")
        else:
            counts = ((read_results(results).get("n-samples") or {}).get(task) or {}).get("effective")
    except (OSError, ValueError, AttributeError):
        pass
    if isinstance(counts, int) and not isinstance(counts, bool):
        return f"its results file {results.name} counts {counts} samples of {task}"
    return f"its results file {results.name} scores {task}"


def empty_logs(run: Run) -> dict[str, str]:
    """Rule: a task the run's results file scores whose per-question log holds no record is a damaged log (an emptied
    file, a write that never happened), never a task the run does not have: task -> the words naming the log and
    what the results file counts."""
    found = {}
    for task, samples in sorted(run.samples.items()):
        results = run.task_files.get(task)
        if not samples and results is not None:
            log = _log_name(results, task)
            state = "is empty" if log.is_file() and log.stat().st_size == 0 else "holds no record"
            found[task] = f"the sample log {log} {state} while {_counted(results, task)}"
    return found


def no_records(run: Run, path: Path) -> tuple[str, str]:
    """Why a run given as ``path`` has no per-question record at all, naming the files that lack their log, and what
    to do, each in one line: an lmms-eval results file written without ``--log_samples`` (no
    ``<date>_samples_<task>.jsonl`` beside it), a VLMEvalKit scores file without its ``*_scifig_records.jsonl``, or
    only datasets the report does not read (the run's notes name them)."""
    missing, todo = [], []
    lmms = [source.name for source in run.sources if not source.name.endswith(SCORES_SUFFIX)]
    vlmeval = [source.name for source in run.sources if source.name.endswith(SCORES_SUFFIX)]
    if lmms:
        missing.append(f"no <date>_samples_<task>.jsonl beside {', '.join(lmms)}")
        todo.append("run lmms-eval again with --log_samples")
    if vlmeval:
        missing.append(f"no *{RECORDS_SUFFIX} beside {', '.join(vlmeval)}")
        todo.append("run scifig vlmeval again (each dataset's evaluation writes its *_scifig_records.jsonl)")
    if not run.sources:
        missing.append("; ".join(run.notes) or "no results file")
        todo.append("compare runs of the tasks and datasets scifig report shows")
    return f"{path} has no per-question records: {'; '.join(missing)}", "; ".join(todo)


def unreadable_log(error: DataError) -> str:
    """The words for a run file that could not be read (:class:`DataError` from the run's reader): a per-question log
    is ``unreadable (line N: ...)`` while its results file counts its samples; a results file is unreadable."""
    path = Path(error.origin)
    line = f"line {error.row + 1}: " if error.row is not None else ""
    if path.name.endswith(RESULTS_SUFFIX) or path.name.endswith(SCORES_SUFFIX):
        return f"the results file {path} is unreadable ({line}{error.problem})"
    what = f"the sample log {path} is unreadable ({line}{error.problem})"
    if "_samples_" in path.name and path.name.endswith(".jsonl"):
        prefix, task = path.name[: -len(".jsonl")].split("_samples_", 1)
        results = path.with_name(prefix + RESULTS_SUFFIX)
    elif path.name.endswith(RECORDS_SUFFIX):
        task, results = "its dataset", path.with_name(path.name[: -len(RECORDS_SUFFIX)] + SCORES_SUFFIX)
    else:
        return what
    return f"{what} while {_counted(results, task)}" if results.is_file() else what


def benchmark_of(task: str) -> str:
    """The name of the registered benchmark owning ``task`` (``task`` itself when none does)."""
    described = registry.benchmark_of(task)
    return described.name if described is not None else task


def answers(run: Run) -> dict[str, Answers]:
    """The run's per-question verdicts, per lmms-eval task."""
    found: dict[str, Answers] = {}
    facts = TaskFacts()
    for logged_as, samples in sorted(run.samples.items()):
        if not is_benchmark_task(logged_as):
            continue
        source = run.task_files.get(logged_as)
        version = run.task_versions.get(source, {}).get(logged_as) if source is not None else None
        for position, sample in enumerate(samples):
            record = sample.get("breakdown") if isinstance(sample.get("breakdown"), dict) else {}
            task = facts.viewer_task(logged_as, record)
            entry = found.get(task)
            if entry is None:
                framework = "VLMEvalKit" if sample.get("vlmeval_dataset") else "lmms-eval"
                entry = found[task] = Answers(framework=framework, version=version)
            entry.by_position = entry.by_position and task_position(sample)
            correct = cell_of(logged_as, sample).correct
            if correct is None:
                entry.unscored = True
                continue
            fields = facts.fields(logged_as, record)
            key = tuple(str(record.get(name, "")) for name in fields) if fields else None
            if entry.by_id is not None:
                if key is None or key in entry.by_id:
                    entry.by_id = None
                else:
                    entry.by_id[key] = correct
            doc = sample.get("doc_id", position)
            if entry.by_doc is not None:
                if doc in entry.by_doc:
                    entry.by_doc = None
                else:
                    entry.by_doc[doc] = correct
    return found


def _pair(a: Answers, b: Answers, names: tuple[str, str]) -> tuple[list[bool], list[bool]] | str:
    """The pairing rule on two runs' answers to a task: by id fields when both have them, else by ``doc_id``: the
    question's position among the task's documents in both, or within one framework."""
    if a.unscored or b.unscored:
        return NO_CORRECTNESS
    if a.by_id is not None and b.by_id is not None:
        return stats.pair(a.by_id, b.by_id, a.version, b.version, names)
    if a.framework != b.framework and not (a.by_position and b.by_position):
        return "the questions cannot be matched across frameworks (no unique question ids in the records)"
    if a.by_doc is None or b.by_doc is None:
        twice = " and ".join(name for name, side in zip(names, (a, b), strict=True) if side.by_doc is None)
        return f"a doc_id is logged twice in {twice} (a damaged sample log)"
    return stats.pair(a.by_doc, b.by_doc, a.version, b.version, names)


def compare_runs(
    runs: Sequence[Run], resamples: int = stats.RESAMPLES, seed: int = stats.SEED, labels: Sequence[str] = ()
) -> Comparison:
    """Every later run against the first, task by task (and pooled per benchmark)."""
    labels = list(labels) or [run_label(i) for i in range(len(runs))]
    per_run = [answers(run) for run in runs]
    damaged = [empty_logs(run) for run in runs]
    rows: list[Row] = []
    for b in range(1, len(runs)):
        tasks = sorted({*per_run[0], *per_run[b]}, key=lambda t: (_order(benchmark_of(t)), t))
        pooled: dict[str, tuple[list[bool], list[bool]]] = {}
        pair_rows: list[Row] = []
        for task in tasks:
            benchmark = benchmark_of(task)
            if task not in per_run[b] or task not in per_run[0]:
                side = next((i for i in (0, b) if task in damaged[i]), None)
                if side is not None:  # a damaged log, not a task the run lacks
                    reason = f"{labels[side]}'s {damaged[side][task].removeprefix('the ')}"
                    pair_rows.append(Row(benchmark, task, 0, b, reason=reason, status="refused"))
                    continue
                only = labels[0] if task in per_run[0] else labels[b]
                pair_rows.append(Row(benchmark, task, 0, b, reason=f"only {only} has it", status="not compared"))
                continue
            paired = _pair(per_run[0][task], per_run[b][task], (labels[0], labels[b]))
            if isinstance(paired, str):
                status = "not compared" if paired == NO_CORRECTNESS else "refused"
                pair_rows.append(Row(benchmark, task, 0, b, reason=paired, status=status))
                continue
            pair_rows.append(Row(benchmark, task, 0, b, stats.compare(*paired, resamples=resamples, seed=seed)))
            pooled[task] = paired
        for group, members in groups().items():
            inside = [i for i, row in enumerate(pair_rows) if row.result is not None and row.task in members]
            if len(inside) < 2:
                continue
            first = [answer for task in (pair_rows[i].task for i in inside) for answer in pooled[task][0]]
            second = [answer for task in (pair_rows[i].task for i in inside) for answer in pooled[task][1]]
            counted = (
                f"{len(inside)} tasks" if len(inside) == len(members) else f"{len(inside)} of {len(members)} tasks"
            )
            result = stats.compare(first, second, resamples=resamples, seed=seed)
            pair_rows.insert(
                inside[0], Row(benchmark_of(group), f"{group} ({counted})", 0, b, result, tasks=len(inside))
            )
        rows += pair_rows
    return Comparison(labels, [run.model for run in runs], rows, resamples, seed)


@functools.cache
def groups() -> dict[str, frozenset[str]]:
    """Each top-level group of this package's lmms-eval tasks (``grab``, ``scifibench``, ``mmsci_paper``, ...) and
    its leaf tasks, from the task folder's YAMLs: the questions a pooled row adds up, never a question twice."""
    from scifig_tasks.core.task_files import scifig_tasks, top_level

    tasks = scifig_tasks()

    def leaves(name: str) -> set[str]:
        members = tasks[name].members if name in tasks else []
        return {leaf for member in members for leaf in leaves(member)} if members else {name}

    never = not_pooled()
    pooled = [info for info in top_level(tasks) if info.members and info.name not in never]
    return {info.name: frozenset(leaves(info.name)) for info in pooled}


def _order(benchmark: str) -> int:
    """The benchmark's place in registry order (after every registered one when it is not registered)."""
    names = list(registry.benchmarks())
    return names.index(benchmark) if benchmark in names else len(names)


# ---- presentation --------------------------------------------------------------------------------------------------


def cells(row: Row, labels: Sequence[str]) -> list[str]:
    """A compared row's cells (percent, one decimal)."""
    result = row.result
    assert result is not None
    low, high = (stats.points(value) for value in result.ci)
    return [
        row.task,
        str(result.n),
        f"{100 * result.accuracy_a:.1f}",
        f"{100 * result.accuracy_b:.1f}",
        f"{stats.points(result.difference):+.1f} ({low:+.1f}, {high:+.1f})",
        str(result.only_a),
        str(result.only_b),
        stats.p_text(result.p_value).removeprefix("p = ").removeprefix("p "),
    ]


def _header(labels: Sequence[str], b: int) -> list[str]:
    a, other = labels[0], labels[b]
    return ["task", "n", f"acc {a}", f"acc {other}", f"{other} - {a} (95% CI)", f"only {a}", f"only {other}", "p"]


def text_table(comparison: Comparison, width: int = WIDTH) -> str:
    """The terminal table: per pair a legend, the compared rows aligned in columns, refusals and the verdicts, each
    line at most ``width`` columns."""
    labels = comparison.labels
    lines = [
        line
        for label, name in zip(labels, comparison.names, strict=True)
        for line in textwrap.wrap(f"{label}: {name}", width, break_long_words=False, break_on_hyphens=False)
    ]
    for b in range(1, len(labels)):
        a, other = labels[0], labels[b]
        rows = [row for row in comparison.rows if row.b == b]
        lines += ["", f"{other} vs {a} (accuracies in %; {other} - {a} in points, paired bootstrap 95% CI)"]
        compared = [cells(row, labels) for row in rows if row.result is not None]
        if compared:
            header = _header(labels, b)
            widths = [max(len(line[i]) for line in [header, *compared]) for i in range(len(header))]
            spare = width - (sum(widths) + 2 * (len(widths) - 1))
            if spare < 0:  # shorten the task names, the only long column
                widths[0] = max(8, widths[0] + spare)
            for line in [header, *compared]:
                first = line[0] if len(line[0]) <= widths[0] else line[0][: widths[0] - 1] + "~"
                rest = [cell.rjust(w) for cell, w in zip(line[1:], widths[1:], strict=True)]
                lines.append("  ".join([first.ljust(widths[0]), *rest]).rstrip())
        else:
            lines.append("no task compared")
        for row in rows:
            if row.result is None:
                lines += textwrap.wrap(f"{row.task}: {row.status}: {row.reason}", width, subsequent_indent="  ")
        for row in rows:
            if row.result is not None:
                text = stats.verdict(row.result, row.task, a, other)
                kept = text.replace("McNemar p = ", "McNemar\xa0p\xa0=\xa0").replace("95% CI ", "95%\xa0CI\xa0")
                wrapped = textwrap.wrap(f"- {kept}", width, subsequent_indent="  ")
                lines += [line.replace("\xa0", " ") for line in wrapped]  # no break inside "p = 0.006"
    return "\n".join(lines)


def comparison_section(runs: Sequence[Run]) -> Section:
    """The report's "Comparison" section: every later model against the first, on the questions both answered."""
    if not any(run.samples for run in runs):
        return Section("Comparison", [Note(NO_RECORDS)], "comparison")
    comparison = compare_runs(runs)
    labels = comparison.labels
    blocks: list[Any] = [
        Note(
            "Each model against the first on the questions both answered (matched by question id): accuracies in %, "
            "the paired difference in points with its 95% paired-bootstrap interval "
            f"({comparison.resamples:,} resamples over questions, seed {comparison.seed}), the questions only one "
            "of the two got right and the exact McNemar test, which decides significance (p < 0.05). Runs on other "
            "questions or task versions are not compared. Plot Twist counts its standard (exact) accuracy."
        ),
        Note("; ".join(f"{label} = {name}" for label, name in zip(labels, comparison.names, strict=True)) + "."),
    ]
    for b in range(1, len(labels)):
        rows = [row for row in comparison.rows if row.b == b]
        blocks.append(
            Table(
                f"{labels[b]} vs {labels[0]}",
                _header(labels, b),
                [cells(row, labels) for row in rows if row.result is not None],
                "no task could be compared",
            )
        )
        compared = [(row, row.result) for row in rows if row.result is not None]
        blocks += [Note(stats.verdict(r, row.task, labels[0], labels[b])) for row, r in compared if r.significant]
        others = ", ".join(row.task for row, result in compared if not result.significant)
        if others:
            blocks.append(Note(f"No significant difference between {labels[0]} and {labels[b]} on {others}."))
        blocks += [Note(line) for line in not_compared_lines(rows)]
    return Section("Comparison", blocks, "comparison")


def not_compared_lines(rows: Sequence[Row]) -> list[str]:
    """The rows of one pair that were not compared, one line per distinct reason naming every task it holds for
    (``Not compared, only A has them (22 tasks): grab_paper, ...``), not one line per task."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        if row.result is None:
            grouped.setdefault((row.status, row.reason), []).append(row.task)
    lines = []
    for (status, reason), tasks in grouped.items():
        said = reason.replace(" has it", " has them") if len(tasks) > 1 else reason
        counted = f" ({len(tasks)} tasks)" if len(tasks) > 1 else ""
        lines.append(f"{status.capitalize()}, {said}{counted}: {', '.join(tasks)}.")
    return lines
