"""Every mistake a plugin author can make in a description or a task folder is one line, before the model runs, with a
non-zero exit; a broken plugin is named and left out while every other benchmark runs; a task name lmms-eval or
another benchmark already has is refused; a benchmark's own settings are settings.

Each case installs a copy of the toy benchmark of docs/adding-a-benchmark.md (``tests/fixtures/toy_bench``) with one
mistake, the way ``pip install`` would (a ``.dist-info`` with its entry point beside the package), and runs the real
command lines: ``scifig eval`` (which refuses before lmms-eval starts), plain ``lmms-eval`` (which, left alone, exits
0 after a traceback or a Hub ``RetryError``), ``scifig tasks``, ``scifig config``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, _executable, offline_env
from tests.harness.paths import FIXTURES

pytestmark = [pytest.mark.slow, pytest.mark.cli]

TOY = FIXTURES / "toy_bench" / "toy_bench"
LEFT_OUT = "benchmark toybars (toy-bench 0.1, toybars = toy_bench.description:BENCHMARK) is left out: "


def install(folder: Path, edit: Callable[[Path], None] = lambda package: None, target: str = "BENCHMARK") -> Path:
    """The toy package in ``folder`` with its entry point (``toybars = toy_bench.description:<target>``), after
    ``edit`` changed its files."""
    shutil.copytree(TOY, folder / "toy_bench", ignore=shutil.ignore_patterns("__pycache__"))
    edit(folder / "toy_bench")
    info = folder / "toy_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[scifig.benchmarks]\ntoybars = toy_bench.description:{target}\n")
    return folder


def replace(relative: str, old: str, new: str) -> Callable[[Path], None]:
    """An edit of the toy package: ``old`` (which must be there) becomes ``new`` in its file ``relative``."""

    def edit(package: Path) -> None:
        path = package / relative
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{relative} has no {old!r}"
        path.write_text(text.replace(old, new), encoding="utf-8")

    return edit


def environment(tmp_path: Path, *packages: Path, **extra: str) -> dict[str, str]:
    env = offline_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, packages), *filter(None, [env.get("PYTHONPATH")])])
    return env | extra


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return warm_start.run(args, env, cwd=cwd, timeout=CLI_TIMEOUT_S)


PROGRESS = re.compile(r"\|\s*\d+/\d+ \[")
"""A tqdm progress line (lmms-eval's bar of the step a refusal ended is drawn once more as the process exits)."""


def last_line(completed: subprocess.CompletedProcess) -> str:
    """The last line the command said (progress bars aside)."""
    said = (completed.stdout + "\n" + completed.stderr).splitlines()
    return [line for line in said if line.strip() and not PROGRESS.search(line)][-1]


MISTAKES = {
    "chance={}": (
        replace("description.py", 'chance={"toybars": option_answer}', "chance={}"),
        "chance has no entry for source toybars (a rule drawing a chance answer from the prompt, such as "
        "scifig_tasks.core.chance.option_answer, or a sentence saying why there is none)",
    ),
    "chance left out": (
        replace("description.py", '    chance={"toybars": option_answer},\n', ""),
        "chance has no entry for source toybars",
    ),
    "a part misspelt": (
        replace("description.py", "chance=", "chanse="),
        "Benchmark.__init__() got an unexpected keyword argument 'chanse' — the parts of a description: "
        "docs/adding-a-benchmark.md",
    ),
    "version differs from the YAMLs'": (
        replace("tasks/toybars.yaml", "version: 1.0", "version: 1.1"),
        "toybars.yaml: metadata.version is 1.1, the description's version is '1.0' — write `version: 1.0` under "
        "metadata",
    ),
    "no scifig_source": (
        replace("tasks/toybars.yaml", "  scifig_source: toybars\n", ""),
        "toybars.yaml: metadata.scifig_source is missing — write `scifig_source: <source>` under metadata (one of: "
        "toybars)",
    ),
    "a misspelt hook": (
        replace("tasks/toybars.yaml", "utils.process_results\n", "utils.proces_results\n"),
        "toybars.yaml: process_results: !function utils.proces_results: utils.py defines no proces_results (did you "
        "mean process_results?)",
    ),
    "answers cut at a blank line": (
        replace("tasks/toybars.yaml", "  until:", "  stop_at:"),
        "toybars.yaml: generation_kwargs.until is None: lmms-eval then stops each answer at a blank line — write "
        "`until: ['</s>', '<|im_end|>', '<|eot_id|>', '<|endoftext|>', '<end_of_turn>']` under generation_kwargs",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_mistake_in_a_plugin_is_one_line_before_the_model_runs(tmp_path: Path, mistake: str) -> None:
    edit, expected = MISTAKES[mistake]
    env = environment(tmp_path, install(tmp_path / "packages", edit))
    scifig = _executable("scifig")

    evaluated = run([scifig, "eval", "--model", "scifig_chance", "--tasks", "toybars"], env, tmp_path)

    assert evaluated.returncode == 1, evaluated.stderr[-3000:]
    assert last_line(evaluated).startswith(f"scifig eval: toybars: {LEFT_OUT}"), evaluated.stderr[-3000:]
    assert expected in last_line(evaluated)
    assert "Traceback" not in evaluated.stderr
    listed = run([scifig, "tasks"], env, tmp_path)  # every other benchmark is listed; the plugin is named
    assert listed.returncode == 0 and "grab_llm_extract" in listed.stdout, listed.stderr[-3000:]
    assert expected in listed.stdout.splitlines()[-1] and expected in listed.stderr


def test_a_misspelt_entry_point_target_is_one_line(tmp_path: Path) -> None:
    env = environment(tmp_path, install(tmp_path / "packages", target="BENCHMARKS"))

    shown = run([_executable("scifig"), "tasks", "toybars"], env, tmp_path)

    assert shown.returncode == 1
    assert last_line(shown) == (
        "scifig tasks: toybars: benchmark toybars (toy-bench 0.1, toybars = toy_bench.description:BENCHMARKS) is left "
        "out: AttributeError: module 'toy_bench.description' has no attribute 'BENCHMARKS' — fix the entry point's "
        "target (module:ATTRIBUTE naming the Benchmark) in the package's pyproject.toml"
    )


def test_plain_lmms_eval_stops_at_a_broken_plugins_task_and_runs_every_other(tmp_path: Path) -> None:
    """A misspelt hook: lmms-eval ends in the refusal (exit 1, no traceback) for the plugin's task; a second,
    working copy of the benchmark under another name runs with the broken one installed."""
    broken = install(tmp_path / "broken", replace("tasks/toybars.yaml", "utils.doc_to_text\n", "utils.doc_to_txt\n"))
    working = _renamed_toy(tmp_path / "working")
    data = _toy_data(tmp_path, working, "toy_lines")
    env = environment(tmp_path, broken, working, SCIFIG_TOYBARS_DATA=str(data), SCIFIG_TOYLINES_DATA=str(data))
    lmms_eval = _executable("lmms-eval")
    expected = "toybars.yaml: doc_to_text: !function utils.doc_to_txt: utils.py defines no doc_to_txt"

    refused = run([lmms_eval, "--model", "scifig_chance", "--tasks", "toybars"], env, tmp_path)
    ran = run(
        [lmms_eval, "--model", "scifig_chance", "--tasks", "toylines", "--output_path", str(tmp_path / "out")],
        env,
        tmp_path,
    )

    assert refused.returncode == 1, refused.stderr[-3000:]
    assert last_line(refused).startswith(f"scifig: toybars: {LEFT_OUT}") and expected in last_line(refused)
    assert "Traceback" not in refused.stderr and "RetryError" not in refused.stderr
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"scifig: {LEFT_OUT}" in ran.stderr and "Traceback" not in ran.stderr  # named, once, and left out
    (results,) = (tmp_path / "out").rglob("*_results.json")
    assert json.loads(results.read_text())["results"]["toylines"]["breakdown,none"]["overall"]["all"]["n"] >= 10


@pytest.mark.parametrize("judge", [False, True], ids=["no judge", "a judge configured"])
def test_a_hook_asking_the_judge_undeclared_stops_the_run(tmp_path: Path, judge: bool, openai_server) -> None:
    """A scoring hook that asks for the judge without ``@asks_judge``: the judge refuses the call, naming the task and
    the hook; before, the run scored every output 0 (``judge_off``) and exited 0, or sent requests no bound had
    announced."""

    def undeclared(package: Path) -> None:
        hooks = package / "tasks" / "utils.py"
        hooks.write_text(
            hooks.read_text(encoding="utf-8")
            + "\n\ndef undeclared(doc: dict[str, Any], results: list[str | None]) -> dict[str, Any]:\n"
            + "    get_judge()\n    return {'accuracy': 0.0, 'breakdown': {}}\n"
        )
        task = package / "tasks" / "toybars.yaml"
        text = task.read_text(encoding="utf-8")
        task.write_text(
            re.sub(r"process_results: !function utils\.\w+", "process_results: !function utils.undeclared", text)
        )

    packages = install(tmp_path / "packages", undeclared)
    env = environment(tmp_path, packages, SCIFIG_TOYBARS_DATA=str(_toy_data(tmp_path, packages)))
    if judge:
        server = openai_server(lambda request: "B")
        env |= {"SCIFIG_JUDGE_BASE_URL": server.base_url, "SCIFIG_JUDGE_MODEL": "judge", "SCIFIG_JUDGE_API_KEY": "k"}

    completed = run([_executable("lmms-eval"), "--model", "scifig_chance", "--tasks", "toybars"], env, tmp_path)

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert last_line(completed).endswith(
        "scifig: task toybars: its scoring hook utils.undeclared asks the LLM judge but declares no judge use — "
        'decorate it with @asks_judge("per_output" | "audited" | "at_aggregation") (scifig_tasks.core.judged_hooks), '
        "so that the run says its judge bound and is refused without a judge when it needs one"
    )
    if judge:
        assert server.count == 0


def test_a_task_name_lmms_eval_or_another_benchmark_has_is_refused(tmp_path: Path) -> None:
    """lmms-eval ships ``charxiv_val_reasoning``; GRAB has ``grab_properties``: a plugin using either name would be
    silently replaced (lmms-eval's task runs instead) or take the other's tasks. Both are refused, naming both."""
    packages = tmp_path / "packages"
    for name, task in (("charxiv", "charxiv_val_reasoning"), ("grab_properties", "grab_properties")):
        _minimal_plugin(packages, name, task)
    env = environment(tmp_path, packages)
    scifig = _executable("scifig")

    listed = run([scifig, "tasks"], env, tmp_path)
    evaluated = run([scifig, "eval", "--model", "scifig_chance", "--tasks", "charxiv_val_reasoning"], env, tmp_path)

    assert listed.returncode == 0, listed.stderr[-3000:]
    refusals = [line for line in listed.stdout.splitlines() if line.startswith("left out: ")]
    assert len(refusals) == 2, listed.stdout[-2000:]
    assert (
        "task 'charxiv_val_reasoning' (charxiv_val_reasoning.yaml) is already lmms-eval's own "
        "(lmms_eval/tasks/charxiv/charxiv_val_reasoning.yaml), which lmms-eval would run instead — rename it"
    ) in refusals[0]
    assert "task 'grab_properties' (grab_properties.yaml) is already grab's (" in refusals[1]
    assert evaluated.returncode == 1 and "is already lmms-eval's own" in last_line(evaluated)


def test_a_benchmark_declares_its_own_settings(tmp_path: Path) -> None:
    """``SCIFIG_<NAME>_REVISION`` of a plugin source and a setting its description declares are settings:
    ``scifig config`` lists them with their values (before: ``KeyError: '... is not a scifig setting'``)."""
    declare = replace(
        "description.py",
        "    document_id=",
        '    settings=(Setting("SCIFIG_TOYBARS_SHUFFLE_SEED", integer(), 0, "seed of the option order", "an integer",'
        ' "toybars"),),\n    document_id=',
    )
    imports = replace(
        "description.py",
        "from scifig_tasks.core.schema import",
        "from scifig_tasks.core.settings import Setting, integer\nfrom scifig_tasks.core.schema import",
    )
    revision = replace(
        "description.py", '    key=("qid",),\n', '    key=("qid",),\n    revision_var="SCIFIG_TOYBARS_REVISION",\n'
    )
    packages = install(tmp_path / "packages", lambda package: [edit(package) for edit in (declare, imports, revision)])
    env = environment(tmp_path, packages, SCIFIG_TOYBARS_REVISION="abc123", SCIFIG_TOYBARS_SHUFFLE_SEED="7")

    shown = run([_executable("scifig"), "config", "--json"], env, tmp_path)

    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "not a scifig setting" not in shown.stderr
    settings = {entry["name"]: entry for entry in json.loads(shown.stdout)["settings"]}
    assert settings["SCIFIG_TOYBARS_REVISION"]["value"] == "abc123"
    assert settings["SCIFIG_TOYBARS_SHUFFLE_SEED"]["value"] == 7


def _toy_data(tmp_path: Path, packages: Path, package: str = "toy_bench") -> Path:
    data = tmp_path / "data"
    if not data.exists():
        env = environment(tmp_path, packages)
        built = run([sys.executable, "-m", f"{package}.build", str(data)], env, tmp_path)
        assert built.returncode == 0, built.stderr[-3000:]
    return data


def _renamed_toy(folder: Path) -> Path:
    """The toy benchmark as ``toylines`` (package ``toy_lines``): a second, working plugin."""
    package = folder / "toy_lines"
    shutil.copytree(TOY, package, ignore=shutil.ignore_patterns("__pycache__"))
    for path in [*package.rglob("*.py"), *package.rglob("*.yaml")]:
        text = path.read_text(encoding="utf-8").replace("toy_bench", "toy_lines")
        text = text.replace("toybars", "toylines").replace("TOYBARS", "TOYLINES").replace("Toy bars", "Toy lines")
        path.write_text(text, encoding="utf-8")
    (package / "tasks" / "toybars.yaml").rename(package / "tasks" / "toylines.yaml")
    info = folder / "toy_lines-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-lines\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[scifig.benchmarks]\ntoylines = toy_lines.description:BENCHMARK\n")
    return folder


def _minimal_plugin(packages: Path, name: str, task: str) -> None:
    """A plugin ``name`` whose one task is ``task`` (nothing else wrong with it)."""
    package = packages / f"{name}_bench"
    (package / "tasks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tasks" / f"{task}.yaml").write_text(
        f"task: {task}\ndataset_path: x\ntest_split: test\noutput_type: generate_until\ndoc_to_target: answer\n"
        "generation_kwargs:\n  until: ['</s>', '<|im_end|>', '<|eot_id|>', '<|endoftext|>', '<end_of_turn>']\n"
        f"metadata:\n  version: 1.0\n  scifig_source: {name}\n"
    )
    (package / "description.py").write_text(
        "from pathlib import Path\n"
        "from scifig_tasks.core.benchmark import Benchmark, Report, SummaryRow\n"
        "from scifig_tasks.core.schema import BenchmarkSource, Column, expect_str\n"
        f"SOURCE = BenchmarkSource('{name}', '', ('test',), 'SCIFIG_{name.upper()}_DATA',\n"
        "    (Column('qid', expect_str()),))\n"
        f"BENCHMARK = Benchmark('{name}', '{name}', '1.0', Path(__file__).parent / 'tasks', {{'{name}': SOURCE}},\n"
        f"    ('qid',), {{'{name}': 'free text'}}, Report((SummaryRow('{name}', (('{task}',),)),)))\n"
    )
    info = packages / f"{name}_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[scifig.benchmarks]\n{name} = {name}_bench.description:BENCHMARK\n")


def test_a_hook_bound_otherwise_than_its_yaml_is_one_line_before_the_model_runs(tmp_path: Path) -> None:
    """``toybars_strict`` declares ``strict: true``; its hook bound to ``strict=False`` would score as the plain task
    under the variant's name. lmms-eval stops once the tasks are built, before any request, naming task and option."""
    misbound = replace("tasks/utils.py", "bind(_results, strict=True)", "bind(_results, strict=False)")
    packages = install(tmp_path / "packages", misbound)
    env = environment(tmp_path, packages, SCIFIG_TOYBARS_DATA=str(_toy_data(tmp_path, packages)))

    completed = run([_executable("lmms-eval"), "--model", "scifig_chance", "--tasks", "toybars_strict"], env, tmp_path)

    assert completed.returncode == 1, completed.stderr[-3000:]
    assert last_line(completed) == (
        "scifig: task toybars_strict: the hook is bound to strict=False, the task declares strict=True — bind the "
        "scoring hook to the options its YAML declares (process_results = bind(score, OPTION=VALUE), "
        "scifig_tasks.core.task_options)"
    )
    assert "Running generate_until requests" not in completed.stderr
