"""``scifig export-upstream``: a task folder for the lmms-eval repository, generated from this package's own files,
that loads in lmms-eval's own TaskManager and runs end to end where this package does not exist.

"Does not exist" is made honest with a ``sitecustomize`` on ``PYTHONPATH`` for the subprocesses: a meta-path finder
that refuses every module of the scifig distribution (``scifig_tasks``, ``curation``, ``scifig_model_configs``,
``scifig_finetune``) ahead of the editable-install finder, and an ``importlib.metadata`` that no longer lists the
``scifig`` distribution — so its ``lmms_eval.models`` entry point (the plugin that adds our tasks and data loading)
is invisible. The test first proves both, and that the same probe sees the package without the blocker.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import scifig_tasks
from scifig_tasks.core import task_files
from tests.harness import warm_start
from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.openai_server import Reply, by_question
from tests.harness.paths import REPO

BLOCKER = '''\
"""Test-only: make the scifig distribution invisible (modules and metadata) in this interpreter."""
import importlib.abc
import importlib.metadata as _metadata
import sys

_BLOCKED = __BLOCKED__


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (scifig is not installed here)", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
_all_distributions, _one_distribution = _metadata.distributions, _metadata.distribution


def _distributions(**kwargs):
    return (d for d in _all_distributions(**kwargs) if (d.metadata["Name"] or "").lower() != "scifig")


def _distribution(name):
    if name.lower() == "scifig":
        raise _metadata.PackageNotFoundError(name)
    return _one_distribution(name)


_metadata.distributions, _metadata.distribution = _distributions, _distribution
'''

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

TASK_INDEX = """
import json, sys
from lmms_eval.tasks import TaskManager
manager = TaskManager(include_path=sys.argv[1], include_defaults=False)  # only the exported folder: fast
names = ["grab", "grab_properties", "grab_functions", "grab_series", "grab_transforms", "grab_properties_mc"]
print(json.dumps({name: str(manager.task_index[name]["yaml_path"]) for name in names if name in manager.task_index}))
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


def _scifig(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "scifig"), *args]
    return warm_start.run(command, os.environ, cwd=cwd, timeout=300)


def _python(code: str, env: dict[str, str], cwd: Path, *args: str) -> dict:
    completed = warm_start.run([sys.executable, "-c", code, *args], env, cwd=cwd, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


SCIFIG_MODULES = ("scifig_tasks", "curation", "scifig_model_configs", "scifig_finetune")


def _blocked_env(base: dict[str, str], tmp_path: Path, also: tuple[str, ...] = ()) -> dict[str, str]:
    """``base`` with the blocker on ``PYTHONPATH`` (nothing else): scifig's modules and ``also`` cannot be imported."""
    blocker = tmp_path / "no-scifig"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER.replace("__BLOCKED__", repr(SCIFIG_MODULES + also)))
    return {**base, "PYTHONPATH": str(blocker)}


@pytest.mark.slow
@pytest.mark.cli
def test_export_is_generated_from_the_package_and_self_contained(tmp_path: Path) -> None:
    completed = _scifig("export-upstream", "--bench", "grab", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    folder = tmp_path / "out" / "grab"
    core = folder / "grab_core"
    vendored = sorted(path.relative_to(core).as_posix() for path in core.rglob("*.py") if path != core / "__init__.py")
    # what the hooks import, and what that imports: grab/scoring.py (one output under the task's protocol) with
    # grab/whole_answer.py (grab's rule), scoring_protocol.py (`scifig rescore --protocol` wins over the task's own)
    expected_modules = (
        "audit.py deprecation.py errors.py grab/__init__.py grab/answers.py grab/multiple_choice.py grab/rules.py "
        "grab/scoring.py grab/whole_answer.py images.py judge/__init__.py judge/accounting.py judge/breaker.py "
        "judge/cache.py judge/client.py judge/config.py judge/deadline.py judge/replies.py judge/sending.py "
        "judge/usage.py judge_presets.py judged_hooks.py multiple_choice.py pickle_files.py raw_outputs.py "
        "resources.py run_files.py scoring_protocol.py secrets.py settings.py stats.py task_options.py"
    )
    assert vendored == expected_modules.split()
    for name in vendored:  # each vendored module is the package's file with only the import roots renamed
        own = name.startswith("grab/")  # the benchmark's package, vendored as grab_core/grab/
        source = (REPO / "scifig_tasks" / ("benchmarks" if own else "core") / name).read_text()
        expected = source.replace("scifig_tasks.core", "grab_core").replace(
            "scifig_tasks.benchmarks.grab", "grab_core.grab"
        )
        if name == "resources.py":  # where the judge finds its presets
            expected = expected.replace('resources.files("scifig_model_configs")', 'resources.files("grab_core")')
        assert (core / name).read_text() == expected, name
    assert sorted(p.name for p in (folder / "grab_core" / "judges").glob("*.yaml")) == sorted(
        p.name for p in (REPO / "model_configs" / "judges").glob("*.yaml")
    )
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(m.split(".")[0] in ("scifig_tasks", "curation", "scifig_model_configs") for m in modules)
    yamls = sorted(p.name for p in folder.iterdir() if p.suffix == ".yaml" or p.name == "_default_template_yaml")
    assert yamls == sorted(
        p.name
        for p in (REPO / "scifig_tasks/benchmarks/grab/tasks").iterdir()
        if p.suffix == ".yaml" or p.name == "_default_template_yaml"
    )
    for name in yamls:
        assert "scifig_source" not in (folder / name).read_text(), name
    template = (folder / "_default_template_yaml").read_text()
    assert "dataset_path: jonathan-roberts1/GRAB\n" in template and "test_split: GRAB" in template
    readme = (folder / "README.md").read_text()
    assert "## Data" in readme and "## Code layout" in readme and "## Local data" not in readme
    assert "`jonathan-roberts1/GRAB`" in readme and readme.rstrip().endswith("```")  # the citation stays last

    again = _scifig("export-upstream", "--bench", "grab", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert again.returncode != 0 and "exists and is not empty" in again.stderr
    unknown = _scifig("export-upstream", "--bench", "nope", "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert unknown.returncode != 0 and "unknown benchmark 'nope'" in unknown.stderr


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
    command = [str(Path(sys.executable).parent / "scifig"), "export-upstream", "--bench", "toybars", "--out", "up"]
    done = warm_start.run([*command, "--data", str(tmp_path / "data")], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "up" / "toybars"
    assert "vendored plugin files: toy_bench/__init__.py, toy_bench/rules.py" in done.stdout
    assert "questions per row of toybars: toy_bench.rules.questions, applied by toybars_questions.py" in done.stdout
    assert (folder / "toybars_core" / "toy_bench" / "rules.py").is_file()
    assert "from toybars_core.toy_bench import rules" in (folder / "utils.py").read_text()
    assert "`toy_bench/rules.py`" in (folder / "README.md").read_text()  # the README lists what is vendored

    blocked = _blocked_env({**lmms_env, "SCIFIG_JUDGE": "off"}, tmp_path, also=("toy_bench",))
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
    assert "process_docs: !function toybars_questions.toybars__utils__few" in (folder / "toybars_few.yaml").read_text()


@pytest.mark.slow
@pytest.mark.cli
def test_plot_twist_export_documents_local_data(tmp_path: Path) -> None:
    """No Hub copy: the YAMLs name parquet data_files (placeholders until --data gives real paths)."""
    completed = _scifig("export-upstream", "--bench", "plot_twist", "--out", str(tmp_path), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    template = (tmp_path / "plot_twist" / "_default_template_yaml").read_text()
    assert template.endswith(
        'dataset_path: parquet\ndataset_kwargs:\n  data_files:\n    test: "/path/to/plot_twist/test.parquet"\n'
    )
    chartqa = (tmp_path / "plot_twist" / "plot_twist_chartqa.yaml").read_text()
    assert 'test: "/path/to/plot_twist_chartqa/test.parquet"' in chartqa
    assert "plot_twist_core" in (tmp_path / "plot_twist" / "utils.py").read_text()
    # every task keeps its options (prompt protocol, margin rule): the exported hooks read the same YAML values
    exported = task_files.scifig_tasks({"plot_twist": tmp_path / "plot_twist"})
    packaged = task_files.scifig_tasks({"plot_twist": REPO / "scifig_tasks" / "benchmarks" / "plot_twist" / "tasks"})
    assert {name: info.options for name, info in exported.items()} == {
        name: info.options for name, info in packaged.items()
    }
    assert exported["plot_twist_open_pali_bar"].options == {"protocol": "open_pali", "margin_rule": "synthetic"}


@pytest.mark.cli
def test_exported_grab_runs_in_plain_lmms_eval_without_scifig(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    rows = [row for row, *_ in CASES]
    data = write_parquet(rows, tmp_path / "grab-data" / "GRAB.parquet")
    exported = _scifig(
        "export-upstream", "--bench", "grab", "--out", str(tmp_path / "tasks"), "--data", str(data), cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    folder = tmp_path / "tasks" / "grab"
    template = yaml.safe_load(
        "\n".join(
            line for line in (folder / "_default_template_yaml").read_text().splitlines() if "!function" not in line
        )
    )
    assert template["dataset_path"] == "parquet"
    assert template["dataset_kwargs"] == {"data_files": {"GRAB": str(data)}}

    blocked = _blocked_env(lmms_env, tmp_path)
    assert _python(PROBE, lmms_env, tmp_path) == {  # the probe sees the package when nothing blocks it
        "import": str(REPO / "scifig_tasks" / "__init__.py"),
        "entry_points": ["scifig_tasks.lmms_eval.plugin:manifests"],
        "distribution": scifig_tasks.__version__,
        "scifig_chance": True,
    }
    assert _python(PROBE, blocked, tmp_path) == {
        "import": None,
        "entry_points": [],
        "distribution": None,
        "scifig_chance": False,
    }
    index = _python(TASK_INDEX, blocked, tmp_path, str(folder))
    assert index == {
        "grab": str(folder / "grab.yaml"),
        "grab_properties": str(folder / "grab_properties.yaml"),
        "grab_functions": str(folder / "grab_functions.yaml"),
        "grab_series": str(folder / "grab_series.yaml"),
        "grab_transforms": str(folder / "grab_transforms.yaml"),
        "grab_properties_mc": str(folder / "grab_properties_mc.yaml"),
    }

    replies = {question_text(pid, row) + "\n": reply for pid, (row, reply, *_) in enumerate(CASES)}
    server = openai_server(by_question(replies, default=Reply(status=404)))
    model = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    api = {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    upstream = run_cli(
        "lmms-eval", [*model, "--tasks", "grab", "--include_path", str(folder)], blocked | api, tmp_path / "upstream"
    )
    assert upstream.returncode == 0, upstream.output[-4000:]
    packaged = run_cli(
        "lmms-eval",
        [*model, "--tasks", "grab"],
        lmms_env | api | {"SCIFIG_GRAB_DATA": str(data)},
        tmp_path / "packaged",
    )
    assert packaged.returncode == 0, packaged.output[-4000:]

    mine, theirs = upstream.results(), packaged.results()
    for name, task in SUBTASKS.items():
        outcomes = [whole for row, _, whole, _ in CASES if row.task == task]
        assert mine["results"][name]["accuracy,none"] == pytest.approx(sum(outcomes) / len(outcomes)), name
    whole_answer = [whole for _, _, whole, _ in CASES]
    assert mine["groups"]["grab"]["accuracy,none"] == pytest.approx(sum(whole_answer) / len(CASES))
    differ = sum(whole != truncation for _, _, whole, truncation in CASES)
    rules_differ = mine["groups"]["grab"]["breakdown,none"]["flags"]["rules_differ"]
    assert (rules_differ["agree"], sum(rules_differ.values()) - rules_differ["agree"]) == (len(CASES) - differ, differ)
    for name in [*SUBTASKS, "grab"]:
        for metric in ("accuracy,none", "breakdown,none"):
            assert mine["results"][name][metric] == theirs["results"][name][metric], (name, metric)
    assert mine["groups"]["grab"]["breakdown,none"]["flags"]["output_status"] == {
        "ok": 8,
        "empty": 1,
        "request_failed": 1,
    }
    assert mine["groups"]["grab"]["breakdown,none"]["complexity"]["1"]["n"] == 3
    assert len(server.requests) == 2 * len(CASES)


@pytest.mark.cli
def test_exported_charxiv_runs_in_plain_lmms_eval_without_scifig(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """CharXiv's export carries its package's data file (the authors' texts) and its questions rule: the reasoning
    task runs from a Hub-shaped parquet file with scifig blocked, each answer decided by the exact rules."""
    from scifig_tasks.benchmarks.charxiv.source import read_authors_layout
    from tests.harness.charxiv_full_data import SAMPLE, authors_file, write_layout

    layout = write_layout(tmp_path / "authors", SAMPLE)
    data = tmp_path / "hub"
    data.mkdir()
    read_authors_layout(layout, "val").to_parquet(str(data / "val.parquet"))
    exported = _scifig(
        "export-upstream",
        "--bench",
        "charxiv_full",
        "--out",
        str(tmp_path / "tasks"),
        *(f"--data=charxiv_{kind}={data}" for kind in ("descriptive", "reasoning")),  # both read the one dataset
        cwd=tmp_path,
    )
    assert exported.returncode == 0, exported.stderr
    folder = tmp_path / "tasks" / "charxiv_full"
    assert (folder / "charxiv_full_core" / "charxiv" / "authors_text.json").is_file()

    answers = authors_file("reasoning")
    gold = {answers[key]["query"]: answers[key]["answer"] for key in SAMPLE}  # every other question: "no idea"
    replies = {question: answer if index % 2 else "no idea" for index, (question, answer) in enumerate(gold.items())}
    server = openai_server(by_question(replies, default=Reply(status=404)))
    model = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    api = {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    args = [*model, "--tasks", "charxiv_full_reasoning", "--include_path", str(folder)]
    upstream = run_cli("lmms-eval", args, _blocked_env(lmms_env, tmp_path) | api, tmp_path / "upstream")
    assert upstream.returncode == 0, upstream.output[-4000:]
    part = upstream.results()["results"]["charxiv_full_reasoning"]["breakdown,none"]
    # the gold answers are decided right by the rules; "no idea" is undecided and, with no judge, wrong and flagged
    assert part["overall"]["correct"] == len(SAMPLE) // 2 and part["overall"]["questions"] == len(SAMPLE)
    assert part["counts"]["flags"] == {"undecided_no_judge": len(SAMPLE) - len(SAMPLE) // 2}
