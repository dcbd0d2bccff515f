"""``scifig export-upstream``: the benchmarks written into a copy of lmms-eval's own source tree, checked as its
maintainers check a contribution and run where scifig does not exist.

"Does not exist" is made honest with a ``sitecustomize`` on ``PYTHONPATH`` for the subprocesses
(:mod:`tests.harness.hidden_scifig`): the scifig distribution's modules cannot be imported and its metadata is not
listed, so its ``lmms_eval.models`` entry point (the plugin that adds our tasks and data loading) is invisible. The
test first proves both, and that the same probe sees the package without the blocker. The lmms-eval tree is a copy
of the installed ``lmms_eval`` package (the one the lock pins), put first on ``PYTHONPATH``; the checks are
lmms-eval's pre-commit formatters at its pinned versions (:data:`scifig_tasks.export.style.LMMS_EVAL`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scifig_tasks.core import registry
from scifig_tasks.export import lmms_eval_folders as folders
from scifig_tasks.export.style import LMMS_EVAL
from scifig_tasks.export.vendoring import ExportError, Placement, plugin_package, write_shared
from tests.harness import warm_start
from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.hidden_scifig import hidden_env
from tests.harness.openai_server import Reply, by_question
from tests.harness.paths import REPO

PROBE = """
import importlib.metadata as md, json
found = {}
try:
    import scifig_tasks
    found["import"] = scifig_tasks.__file__
except ModuleNotFoundError as exc:
    found["import"] = None
found["entry_points"] = sorted(
    ep.value for ep in md.entry_points(group="lmms_eval.models") if ep.value.startswith("scifig_tasks")
)
try:
    found["distribution"] = md.distribution("scifig").version
except md.PackageNotFoundError:
    found["distribution"] = None
from lmms_eval.models import get_model
try:
    get_model("scifig_chance")
    found["scifig_chance"] = True
except Exception:
    found["scifig_chance"] = False
print(json.dumps(found))
"""

FAILED = Reply(status=400)
# (row, reply, correct as a whole answer (grab's rule), correct by the authors' rule (grab_paper's: strip leading
# whitespace, truncate to the answer's length, ==)); `grab` keeps both verdicts of every output
CASES: list[tuple[Row, str | Reply, bool, bool]] = [
    (Row("properties", "15"), "15", True, True),
    (Row("properties", "15"), " 15.3", False, True),  # a longer number: right only when cut to the answer's length
    (Row("properties", "10"), "1", False, False),
    (Row("properties", "-3"), "", False, False),
    (Row("function", "2.5", precision_sentence=ONE_DP, complexity=2), "2.50", True, True),
    (Row("function", "4", complexity=1), FAILED, False, False),
    (Row("function", "4", complexity=1), "4", True, True),
    (Row("series", "6", category="Extrema", complexity=3), "\t6\n", True, True),
    (Row("series", "7", category="Extrema"), "The answer is 7", True, False),  # stated after words
    (Row("transform", "-1", category="Range", complexity=1), "-1", True, True),
]
SUBTASKS = {
    "grab_properties": "properties",
    "grab_functions": "function",
    "grab_series": "series",
    "grab_transforms": "transform",
}


BIN = Path(sys.executable).parent


def _blocked_env(base: dict[str, str], tmp_path: Path, also: tuple[str, ...] = (), tree: Path | None = None) -> dict:
    """``base`` where scifig's modules and ``also`` cannot be imported, the lmms-eval ``tree`` first on the path."""
    return hidden_env(base, tmp_path, also, [tree] if tree is not None else [])


def _python(code: str, env: dict[str, str], cwd: Path, *args: str) -> dict:
    completed = warm_start.run([sys.executable, "-c", code, *args], env, cwd=cwd, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def lmms_eval_tree(root: Path) -> Path:
    """A copy of the installed ``lmms_eval`` package under ``root`` (the repository's layout: ``root/lmms_eval``)."""
    spec = importlib.util.find_spec("lmms_eval")
    assert spec is not None and spec.submodule_search_locations
    shutil.copytree(
        spec.submodule_search_locations[0], root / "lmms_eval", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def lint(tree: Path, paths: list[Path]) -> dict[str, subprocess.CompletedProcess]:
    """lmms-eval's pre-commit hooks in check mode, with its arguments, run at the repository's root."""
    relative = [str(path.relative_to(tree)) for path in paths]
    commands = {
        "black": [str(BIN / "black"), f"--line-length={LMMS_EVAL.black_line_length}", "--check", *relative],
        "isort": [str(BIN / "isort"), "--profile", "black", "--check-only", *relative],
    }
    return {name: subprocess.run(argv, cwd=tree, capture_output=True, text=True) for name, argv in commands.items()}


# ---- the rules, without a framework -------------------------------------------------------------------------------


def _grab_hooks() -> folders.Hooks:
    source = Path(registry.benchmark("grab").task_folder)
    owner = plugin_package(source)
    placement = Placement(folders.SHARED, "lmms_eval.tasks.grab.grab", owner)
    return folders._hooks(source, "grab", placement, folders.questions_rules(source, owner))


def test_generated_hooks_refuse_judged_tasks_bind_options_and_write_breakdown_files() -> None:
    hooks = _grab_hooks()
    keys = hooks.keys
    # a task that needs the judge refuses at document processing, before lmms-eval builds one request
    assert keys["grab_functions_llm_extract.yaml"]["process_docs"] == (
        "!function grab_hooks.grab_functions_llm_extract_docs"
    )
    lines = "\n".join(hooks.lines)
    assert (
        'grab_functions_llm_extract_docs = documents("grab_functions_llm_extract", judged=True, '
        "then=utils.grab_functions_docs_llm_extract)" in lines
    )  # then its own process_docs
    assert "process_docs" not in keys["grab_functions.yaml"]  # no judge needed: its own process_docs stays
    # options bound (lmms-eval hands process_results none)
    assert (
        "grab_functions_paper_results = bind(utils.grab_process_results, llm_extract=False, protocol='paper')" in lines
    )
    # the breakdown metric's aggregation writes a file; the group merges its tasks' files
    assert "aggregation: !function grab_hooks.grab_functions_breakdown" in keys["grab_functions.yaml"]["metric_list"]
    assert "aggregation: !function grab_hooks.grab_group_breakdown" in keys["grab.yaml"]["aggregate_metric_list"]
    text = folders._with_keys(
        "task: t\nmetric_list:\n  - metric: a\n    aggregation: mean\nx: 1\n",
        {"metric_list": "metric_list:\n  - metric: b"},
    )
    assert text == "task: t\nx: 1\nmetric_list:\n  - metric: b\n"


def test_exported_yaml_keeps_only_upstream_metadata() -> None:
    path = Path(registry.benchmark("grab").task_folder) / "grab.yaml"
    exported = folders._export_yaml(path.read_text(), path, {}, "grab")
    assert "scifig_" not in exported and re.search(r"^metadata:\n  version: [0-9.]+\n", exported, re.MULTILINE)


def test_the_formatting_pins_are_the_locked_versions() -> None:
    locked = (REPO / ".ci" / "requirements.lock").read_text()
    for name, version in LMMS_EVAL.pins.items():
        assert f"\n{name}=={version} " in locked, name
    LMMS_EVAL.check_versions()


def test_a_shared_module_written_by_another_version_stops_the_export(tmp_path: Path) -> None:
    path = tmp_path / "scifig" / "errors.py"
    assert write_shared(path, "a = 1\n") and not write_shared(path, "a = 1\n")
    with pytest.raises(ExportError, match="already exists with other content"):
        write_shared(path, "a = 2\n")


HOOKS = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("utils", sys.argv[1])  # as lmms-eval loads a task's `!function`
utils = importlib.util.module_from_spec(spec)
spec.loader.exec_module(utils)
doc = {"qid": "c0", "category": "bars", "answer": "B", "question": "How many bars?", "options": ["1", "2", "3", "4"]}
scored = utils.process_results(doc, ["The answer is B."])
strict = utils.process_results_strict(doc, ["The answer is B."])
print(json.dumps({
    "prompt": utils.doc_to_text(doc),
    "accuracy": [scored["accuracy"], strict["accuracy"]],
    "breakdown": utils.breakdown([scored["breakdown"]])["overall"]["all"]["accuracy"],
    "imported": sorted({name.split(".")[0] for name in sys.modules} & {"toy_bench", "scifig_tasks"}),
}))
"""


TOY_DOCS = """
import json, sys
from lmms_eval.tasks import TaskManager, get_task_dict
manager = TaskManager(include_path=sys.argv[1], include_defaults=False)  # only the exported folder
tasks = get_task_dict(["toybars", "toybars_strict", "toybars_few"], manager)
fields = ("qid", "question", "options", "answer", "category")
print(json.dumps({name: [[doc[f] for f in fields] for doc in task.test_docs()] for name, task in tasks.items()}))
"""


@pytest.mark.slow
@pytest.mark.cli
def test_a_plugins_export_vendors_its_own_modules_and_runs_without_the_plugin(
    tmp_path: Path, lmms_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The toy benchmark (an outside package, docs/adding-a-benchmark.md) exported: the hooks import the plugin's
    rule module (``from toy_bench import rules``), which is vendored beside the core modules; the exported hooks
    score a reply in a process where neither scifig nor the toy package can be imported. Its rows hold two questions
    each (the source's ``questions`` rule, vendored too): lmms-eval's own TaskManager, in that process, gives both
    exported tasks the 20 documents the packaged tasks have, in their order, and a variant with a ``process_docs`` of
    its own gets it after the expansion."""
    from tests.project.test_outside_benchmark import install_toy

    packages = install_toy(tmp_path / "packages")
    tasks = packages / "toy_bench" / "tasks"  # a variant filtering the questions: its process_docs sees each question
    (tasks / "toybars_few.yaml").write_text(
        "task: toybars_few\ninclude: toybars.yaml\nprocess_docs: !function utils.few\n"
    )
    few = '\n\ndef few(dataset: Any) -> Any:\n    return dataset.filter(lambda doc: doc["category"] == "few")\n'
    (tasks / "utils.py").write_text((tasks / "utils.py").read_text() + few)
    env = {**lmms_env, "PYTHONPATH": str(packages)}
    built = warm_start.run([sys.executable, "-m", "toy_bench.build", "data"], env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    tree = lmms_eval_tree(tmp_path / "lmms-eval")
    command = [str(BIN / "scifig"), "export-upstream", "--bench", "toybars", "--out", str(tree)]
    done = warm_start.run([*command, "--data", str(tmp_path / "data")], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tree / "lmms_eval" / "tasks" / "toybars"
    assert "questions per row of toybars: toy_bench.rules.questions, applied by toybars_hooks.py" in done.stdout
    assert (folder / "toy_bench" / "rules.py").is_file()  # the plugin's own module, vendored beside its tasks
    assert "from lmms_eval.tasks.toybars.toy_bench import rules" in (folder / "utils.py").read_text()
    assert "`toy_bench/`" in (folder / "README.md").read_text()  # the README says where the rules are

    blocked = _blocked_env({**lmms_env, "SCIFIG_JUDGE": "off"}, tmp_path, also=("toy_bench",), tree=tree)
    toy = "import json\ntry:\n    import toy_bench\nexcept ModuleNotFoundError:\n    toy_bench = None\n"
    toy += "print(json.dumps(bool(toy_bench)))"
    assert _python(toy, env, tmp_path) is True and _python(toy, blocked, tmp_path) is False  # the blocker blocks it
    ran = _python(HOOKS, blocked, tmp_path, str(folder / "utils.py"))
    assert ran == {
        "prompt": "How many bars?\nA) 1\nB) 2\nC) 3\nD) 4\nAnswer with the option's letter.",
        "accuracy": [1.0, 0.0],  # the strict variant reads only a letter alone
        "breakdown": 1.0,
        "imported": [],
    }

    from scifig_tasks.core import registry
    from scifig_tasks.core.data import load_benchmark

    monkeypatch.setenv("SCIFIG_TOYBARS_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    packaged = load_benchmark(registry.sources()["toybars"], split="test")
    fields = ("qid", "question", "options", "answer", "category")
    expected = [[doc[name] for name in fields] for doc in packaged]
    assert len(expected) == 20 and expected[1][0] == "toy-0-more"  # two questions per chart, in order
    assert _python(TOY_DOCS, {**blocked, "HF_DATASETS_CACHE": str(tmp_path / "up-cache")}, tmp_path, str(folder)) == {
        "toybars": expected,
        "toybars_strict": expected,
        "toybars_few": [doc for doc in expected if doc[-1] == "few"],
    }
    assert "process_docs: !function toybars_hooks.toybars_few_docs" in (folder / "toybars_few.yaml").read_text()


# ---- the five benchmarks in a copy of lmms-eval's tree -------------------------------------------------------------

RUN = {
    "grab": "grab",
    "scifibench": "scifibench",
    "plot_twist": "plot_twist",
    "mmsci": "mmsci",
    "charxiv_full": "charxiv_full",
}
"""Benchmark -> the group the run asks for (one per built-in benchmark)."""
HEADLINE = {**RUN, "charxiv_full": "charxiv_full_reasoning"}
"""Benchmark -> the group or task whose scores the run checks (CharXiv's group aggregates nothing)."""


def _data(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Path]]:
    """Small local data for each built-in benchmark as lmms-eval reads it (parquet in the published layout):
    benchmark -> ``--data`` source -> path."""
    from scifig_tasks.benchmarks.charxiv.source import read_authors_layout
    from scifig_tasks.core.data import load_benchmark
    from tests.harness import charxiv_full_data, mmsci_data, plot_twist_data, scifibench_data

    charxiv = root / "charxiv"
    charxiv.mkdir(parents=True)
    read_authors_layout(charxiv_full_data.write_layout(root / "charxiv-authors", charxiv_full_data.SAMPLE[:2]), "val")
    read_authors_layout(root / "charxiv-authors", "val").to_parquet(str(charxiv / "val.parquet"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(root / "hf-datasets"))
    for name, value in mmsci_data.sample(root / "mmsci-authors").items():
        monkeypatch.setenv(name, value)
    (root / "mmsci").mkdir()
    load_benchmark(registry.sources()["mmsci_mcq"], "test").to_parquet(str(root / "mmsci" / "test.parquet"))
    return {
        "grab": {"grab": write_parquet([row for row, *_ in CASES], root / "grab" / "GRAB.parquet")},
        "scifibench": {"scifibench": Path(scifibench_data.sample(root / "scifibench")["SCIFIG_SCIFIBENCH_DATA"])},
        "plot_twist": {"plot_twist": Path(plot_twist_data.sample(root / "plot_twist")["SCIFIG_PLOT_TWIST_DATA"])},
        "mmsci": {"mmsci_mcq": root / "mmsci"},
        "charxiv_full": {"charxiv_descriptive": charxiv, "charxiv_reasoning": charxiv},
    }


@pytest.mark.slow
@pytest.mark.cli
def test_the_exports_pass_lmms_evals_lint_and_run_in_its_tree_without_scifig(
    tmp_path: Path, openai_server, lmms_env, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = lmms_eval_tree(tmp_path / "lmms-eval")
    data = _data(tmp_path / "data", monkeypatch)
    first = warm_start.run(  # one through the command line, as a contributor runs it
        [
            str(BIN / "scifig"),
            "export-upstream",
            "--bench",
            "grab",
            "--out",
            str(tree),
            "--data",
            str(data["grab"]["grab"]),
        ],
        lmms_env,
        cwd=tmp_path,
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    assert f"exported grab to {tree / 'lmms_eval/tasks/grab'} (" in first.stdout
    assert "need an LLM judge (refused before any request without one): grab_functions_llm_extract" in first.stdout
    exported = {"grab": None}
    for bench in RUN:
        if bench != "grab":
            exported[bench] = folders.export(bench, tree, data[bench])
    tasks = tree / "lmms_eval" / "tasks"
    shared = tasks / "_task_utils" / "scifig"
    paths = [tasks / bench for bench in RUN] + [shared]

    # lmms-eval's pre-commit hooks (black, isort at its pinned versions and arguments) leave every file as it is
    for name, done in lint(tree, paths).items():
        assert done.returncode == 0, (name, done.stdout[-2000:], done.stderr[-2000:])
    # upstream keys only; no judge preset a task scanner would read as a task; nothing of scifig's own tests or CLI
    for bench in RUN:
        folder = tasks / bench
        for path in folder.glob("*.yaml"):
            assert "scifig_" not in path.read_text(), path
        readme = (folder / "README.md").read_text()
        assert len(readme.splitlines()) <= 179 and "tests/" not in readme and "scifig eval" not in readme, bench
    assert not list(shared.rglob("*.yaml")) and len(list((shared / "judges").glob("*.yml"))) >= 3
    seen: dict[str, Path] = {}  # no module copied twice: the shared core once, each benchmark's rules in its folder
    for path in sorted(p for folder in paths for p in folder.rglob("*.py") if p.stat().st_size > 200):
        assert seen.setdefault(path.read_text(), path) == path, (path, seen[path.read_text()])

    blocked = _blocked_env(lmms_env, tmp_path, tree=tree)
    assert _python(PROBE, blocked, tmp_path) == {
        "import": None,
        "entry_points": [],
        "distribution": None,
        "scifig_chance": False,
    }
    assert _python(PROBE, lmms_env, tmp_path)["import"] == str(REPO / "scifig_tasks" / "__init__.py")

    replies = {question_text(pid, row) + "\n": reply for pid, (row, reply, *_) in enumerate(CASES)}
    server = openai_server(by_question(replies, default="A"))
    model = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    api = {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    upstream = run_cli("lmms-eval", [*model, "--tasks", ",".join(RUN.values())], blocked | api, tmp_path / "upstream")
    assert upstream.returncode == 0, upstream.output[-4000:]
    results = upstream.results()
    groups = results["groups"]
    for name in HEADLINE.values():
        scores = groups.get(name) or results["results"][name]
        assert isinstance(scores.get("accuracy,none", scores.get("standard_acc,none")), float), name
        assert scores["breakdown,none"] == f"submissions/{name}_breakdown.json", name
        assert (tmp_path / "upstream" / scores["breakdown,none"]).is_file(), name
    table = [line for line in upstream.output.splitlines() if line.startswith("|")]
    widest = max(len(line) for line in table)
    print(f"printed table: {len(table)} lines, the widest {widest} characters")
    assert widest <= 200, max(table, key=len)

    # GRAB's numbers equal the packaged task's on the same data and replies (the breakdown: read from its file)
    packaged = run_cli(
        "lmms-eval",
        [*model, "--tasks", "grab"],
        lmms_env | api | {"SCIFIG_GRAB_DATA": str(data["grab"]["grab"])},
        tmp_path / "packaged",
    )
    assert packaged.returncode == 0, packaged.output[-4000:]
    theirs = packaged.results()
    for name in ["grab", *SUBTASKS]:
        part = results["groups"].get(name) or results["results"][name]
        same = theirs["groups"].get(name) or theirs["results"][name]
        assert part["accuracy,none"] == same["accuracy,none"], name
        assert json.loads((tmp_path / "upstream" / part["breakdown,none"]).read_text()) == json.loads(
            json.dumps(same["breakdown,none"], sort_keys=True, default=str)
        ), name
    whole_answer = [whole for _, _, whole, _ in CASES]
    assert groups["grab"]["accuracy,none"] == pytest.approx(sum(whole_answer) / len(CASES))

    # a task that needs the judge, none configured: refused before any request, the process ends with status 1
    asked = len(server.requests)
    refused = run_cli("lmms-eval", [*model, "--tasks", "grab,grab_llm_extract"], blocked | api, tmp_path / "refused")
    assert refused.returncode == 1, refused.output[-3000:]
    assert re.search(r"grab_\w+_llm_extract cannot be scored without an LLM judge", refused.output.splitlines()[-1])
    assert len(server.requests) == asked and not list((tmp_path / "refused").rglob("*_results.json"))
