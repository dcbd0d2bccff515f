"""The chance baseline (``--model scifig_chance``) on every registered benchmark, through the real ``scifig eval``.

One run scores each registered benchmark's main group (the task or group named as the benchmark) on small built data
(``tests/harness/<benchmark>_data.py``: ``sample(root)``, found by the benchmark's name) with no judge configured: the
run exits 0 and every task and group has a numeric score. An outside benchmark without such a module is left out of
the run and its test skipped, saying why; one of scifig's own without it fails naming the module
(:mod:`tests.harness.benchmarks`). The logged answers follow each benchmark's chance rule,
written out here by hand from the descriptions' docstrings: an option letter of the row (SciFIBench, MMSci), a value
in the precision sentence's format (GRAB), the answer sentence with an integer in the question kind's range (Plot
Twist). MMSci captioning, which has no chance answer, stops the run with one line naming the task, as does a task
that is not this package's.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from scifig_tasks.core import registry
from tests.harness.benchmarks import data_module, without_data
from tests.harness.lmms import CliRun, offline_env, run

SKIPPED = {name: reason for name in registry.benchmarks() if (reason := without_data(name))}
BENCHMARKS = [name for name in registry.benchmarks() if name not in SKIPPED]
"""The registered benchmarks the run covers: every one with a data module (:data:`SKIPPED`: the others, and why)."""
PLOT_TWIST_METRICS = ("standard_acc", "relaxed_acc", "range_acc", "collective_standard", "collective_relaxed")
ANSWER_SENTENCE = re.compile(r"The answer is (-?\d+)\. I hope the answer is correct\.")


def plot_twist_range(question_type: str) -> tuple[int, int]:
    """The documented draw: 1-5 bars, 1-10 pie categories, 1-100 for a pie value (percent), else -200..200."""
    return {
        "count_bars": (1, 5),
        "count_categories": (1, 10),
        "max_category": (1, 100),
        "min_category": (1, 100),
    }.get(question_type, (-200, 200))


@pytest.fixture(scope="module")
def data_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Small local data for every registered benchmark (the ``SCIFIG_<BENCH>_DATA`` variables pointing at it)."""
    root = tmp_path_factory.mktemp("chance_data")
    found: dict[str, str] = {}
    for name in BENCHMARKS:
        found |= importlib.import_module(data_module(name)).sample(root / name)
    return found


@pytest.fixture(scope="module")
def chance_run(tmp_path_factory: pytest.TempPathFactory, data_env: dict[str, str]) -> CliRun:
    """``scifig eval --model scifig_chance`` over every benchmark's main group at once, no judge configured."""
    workdir = tmp_path_factory.mktemp("chance_run")
    args = ["eval", "--model", "scifig_chance", "--tasks", ",".join(BENCHMARKS), "--log_samples"]
    return run("scifig", args, {**offline_env(workdir), **data_env}, workdir / "out")


def leaf_tasks(results: dict, name: str) -> list[str]:
    """The tasks under a group, subgroups expanded (a task is its own leaf)."""
    members = results["group_subtasks"].get(name)
    return [leaf for member in members for leaf in leaf_tasks(results, member)] if members else [name]


def _output(sample: dict) -> str:
    """The logged answer (Plot Twist keeps every repeat's answer in a list; here one repeat)."""
    output = sample["filtered_resps"]
    if isinstance(output, list):
        (output,) = output
    return output


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.parametrize("name", list(registry.benchmarks()))
def test_every_task_of_every_group_gets_a_score(chance_run: CliRun, name: str) -> None:
    if name in SKIPPED:
        pytest.skip(SKIPPED[name])
    assert chance_run.returncode == 0, chance_run.output[-4000:]
    results = chance_run.results()
    tasks = leaf_tasks(results, name)
    assert tasks, name
    for task in tasks:
        scores = [value for key, value in results["results"][task].items() if _score(key, value)]
        assert scores and all(0 <= score <= 1 for score in scores), (task, results["results"][task])
        assert results["n-samples"][task]["effective"] > 0
    if name in results["groups"]:
        assert any(_score(key, value) for key, value in results["groups"][name].items()), name


@pytest.mark.slow
@pytest.mark.cli
def test_plot_twist_metrics_are_numbers(chance_run: CliRun) -> None:
    results = chance_run.results()
    for task in leaf_tasks(results, "plot_twist"):
        assert all(isinstance(results["results"][task][f"{name},none"], float) for name in PLOT_TWIST_METRICS)


def _score(key: str, value: object) -> bool:
    """A headline score of a results entry: a float metric (not its standard error)."""
    return key.endswith(",none") and "_stderr" not in key and isinstance(value, float)


@pytest.mark.slow
@pytest.mark.cli
def test_plot_twist_chance_states_an_integer_in_the_question_kinds_range(chance_run: CliRun) -> None:
    """Read by the extraction rule (no judge needed, none asked); counts and pie percentages in their ranges."""
    drawn = set()
    for task in leaf_tasks(chance_run.results(), "plot_twist"):
        samples = chance_run.samples(task)
        assert samples, task
        for sample in samples:
            record = sample["breakdown"]
            found = ANSWER_SENTENCE.fullmatch(_output(sample))
            assert found, _output(sample)
            low, high = plot_twist_range(record["question_type"])
            assert low <= int(found.group(1)) <= high, (record["question_type"], found.group(1))
            assert record["extracted"] == [found.group(1)] and record["answer_source"] == ["rule"]
            assert record["judge"] == ["not_used"]
            drawn.add(found.group(1))
    assert len(drawn) > 5  # independent draws per question


@pytest.mark.slow
@pytest.mark.cli
def test_multiple_choice_and_grab_chance_answers_keep_their_rules(chance_run: CliRun) -> None:
    """SciFIBench: a letter of the row's 5 options; MMSci: one of its 4 (no judge needed: a bare letter is read by
    rule); GRAB: an integer, as the precision sentence asks, in the default range -10..10."""
    letters = set()
    results = chance_run.results()
    for task in leaf_tasks(results, "scifibench") + leaf_tasks(results, "mmsci"):
        options = "ABCDE" if task.startswith("scifibench") else "ABCD"
        for sample in chance_run.samples(task):
            assert _output(sample) in options, (task, _output(sample))
            letters.add(_output(sample))
    assert len(letters) > 2
    for task in leaf_tasks(results, "mmsci"):
        flags = results["results"][task]["breakdown,none"]["flags"]
        count = results["n-samples"][task]["effective"]
        assert flags["resolution"] == {"rule": count} and flags["judge"] == {"not_used": count}, flags
    for task in leaf_tasks(results, "grab"):
        for sample in chance_run.samples(task):
            assert re.fullmatch(r"-?\d+", _output(sample)) and -10 <= int(_output(sample)) <= 10, _output(sample)


@pytest.mark.slow
def test_captioning_has_no_chance_answer_and_says_so(
    tmp_path: Path, data_env: dict[str, str], lmms_env: dict[str, str], run_cli
) -> None:
    result = run_cli(
        "scifig",
        ["eval", "--model", "scifig_chance", "--tasks", "mmsci_captioning"],
        {**lmms_env, **data_env},
        tmp_path,
    )

    assert result.returncode == 1
    last = [line for line in result.output.splitlines() if line.strip()][-1]
    assert last == (
        "scifig eval: FAILED: ValueError: scifig_chance cannot answer task 'mmsci_caption_image_only': MMSci "
        "captioning asks for free text (a caption), so there is no answer space to draw a chance answer from; "
        "evaluate captioning with a model"
    ), result.output[-3000:]
    assert not list(tmp_path.rglob("*_results.json"))


def test_a_task_that_is_not_scifigs_is_refused_by_name() -> None:
    from scifig_tasks.lmms_eval.chance_model import guesser_for

    with pytest.raises(ValueError) as raised:
        guesser_for("mme")
    assert str(raised.value) == (
        "scifig_chance answers scifig's tasks only: task 'mme' is not defined in a registered benchmark's task folder, "
        "so its answer format is unknown"
    )


def test_every_benchmark_source_has_a_chance_rule_or_a_reason() -> None:
    from scifig_tasks.core import chance

    for key in registry.sources():
        try:
            assert callable(chance.answer_space(key))
        except ValueError as refused:
            assert "free text" in str(refused), (key, refused)
    with pytest.raises(ValueError, match="no chance rule for benchmark source 'nope'"):
        chance.answer_space("nope")
