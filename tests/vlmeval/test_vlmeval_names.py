"""VLMEvalKit speaks lmms-eval's names: every scifig dataset is called as the lmms-eval task (or group) of the same
questions and protocol, read from the task YAMLs; no name trips VLMEvalKit's name-based special cases; the old
``SciFig_*`` names still work with one deprecation line; the ``_paper`` twins score with the paper's protocol; and
VLMEvalKit's own ``--judge`` options choose the judge, over ``SCIFIG_JUDGE_*``, without the key reaching any file."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from scifig_tasks.commands.vlmeval import renamed_config, renamed_data
from scifig_tasks.core import deprecation, registry, task_files
from scifig_tasks.core.benchmark import Benchmark, VlmevalDataset
from scifig_tasks.vlmeval import names
from tests.harness.openai_server import ChatRequest
from tests.harness.vlmeval import MODEL, run_vlmeval

JUDGE_KEY = "sk-judge-cmdline-secret-4567"
NOT_A_LETTER = "judge reply is not a letter"


class _Loader(yaml.SafeLoader):
    """Reads task YAMLs, ``!function`` tags as their text."""


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def lmms_tasks() -> dict[str, dict[str, Any]]:
    """Every lmms-eval task and group of every registered benchmark's task folder (scifig's own, and an installed
    outside package's): name -> its YAML (includes resolved, the file's keys last)."""

    def load(path: Path) -> dict[str, Any]:
        config = yaml.load(path.read_text(), Loader=_Loader) or {}
        included = config.pop("include", None)
        return {**load(path.parent / included), **config} if included else config

    found: dict[str, dict[str, Any]] = {}
    folders = [Path(described.task_folder) for described in registry.benchmarks().values()]
    for path in sorted(path for folder in folders for path in folder.glob("*.yaml")):
        config = load(path)
        name = config.get("group") if isinstance(config.get("group"), str) else config.get("task")
        if isinstance(name, str):
            found[name] = config
    return found


def leaves(name: str, tasks: dict[str, dict[str, Any]]) -> list[str]:
    """The leaf tasks of a task or group, in order."""
    members = tasks[name].get("task")
    if "group" not in tasks[name] or not isinstance(members, list):
        return [name]
    return [leaf for member in members if isinstance(member, str) for leaf in leaves(member, tasks)]


def test_every_vlmeval_name_is_the_lmms_eval_task_of_the_same_questions_and_protocol() -> None:
    tasks = lmms_tasks()
    vlmeval = names.vlmeval_names()
    assert set(vlmeval.values()) == set(names.DATASETS) and len(names.DATASETS) == len(set(names.DATASETS))
    assert sorted(name for name in vlmeval if name not in tasks) == []
    assert all(lmms == dataset for lmms, dataset in vlmeval.items())
    assert sorted(names.DATASETS) == sorted(name for name in tasks if name not in names.GROUPS)  # every task
    for dataset in names.DATASETS:
        protocol = "paper" if dataset.endswith("_paper") else "default"
        for leaf in leaves(dataset, tasks):  # the task's option says its protocol; its hook names none
            assert "paper" not in str(tasks[leaf].get("process_results", "")), (dataset, leaf)
            declared = task_files.options(leaf).get("protocol")
            assert declared in (None, protocol) or protocol == "default", (dataset, leaf, declared)
    # a group VLMEvalKit runs as several datasets expands to the datasets of the group's leaves
    for group, members in names.GROUPS.items():
        assert group in tasks and group not in names.DATASETS
        assert list(members) == leaves(group, tasks), group
    # the old names all map to today's datasets, and each of today's datasets had at most one old name
    assert set(names.DEPRECATED.values()) <= set(names.DATASETS)
    assert len(set(names.DEPRECATED.values())) == len(names.DEPRECATED)


def _described() -> list[tuple[Benchmark, VlmevalDataset]]:
    """Every VLMEvalKit dataset of every registered description, with its benchmark, in the registry's order."""
    return [
        (described, dataset)
        for described in registry.benchmarks().values()
        for dataset in (described.vlmeval.datasets if described.vlmeval else ())
    ]


def test_the_names_are_those_of_the_registered_descriptions() -> None:
    """Datasets, groups and old names are read from every registered benchmark's ``vlmeval`` block, nowhere else."""
    described = _described()
    assert tuple(dataset.name for _, dataset in described) == names.DESCRIBED
    # every other task and group of a registered benchmark is a dataset of its name, served from its YAML's hooks
    others = [name for name in lmms_tasks() if name not in names.DESCRIBED and name not in names.GROUPS]
    assert sorted(names.GENERIC) == sorted(others) and names.DATASETS == names.DESCRIBED + names.GENERIC
    assert {old: dataset.name for _, dataset in described for old in dataset.old_names} == names.DEPRECATED
    blocks = [bench.vlmeval for bench in registry.benchmarks().values() if bench.vlmeval]
    assert {group: members for block in blocks for group, members in block.groups.items()} == names.GROUPS
    for owner, dataset in described:
        assert registry.benchmark_of(dataset.name) is owner and owner.owns(dataset.name)
    for group, members in names.GROUPS.items():  # a group expands to datasets of its own benchmark
        assert {registry.benchmark_of(member).name for member in members} == {registry.benchmark_of(group).name}, group
        assert names.expand([group]) == list(members)


def test_every_registered_dataset_has_the_tsv_its_description_names() -> None:
    """Source, split, rows kept and TSV format of each dataset are its description's."""
    from scifig_tasks.vlmeval import tsv

    assert list(tsv.specs()) == list(names.DESCRIBED)
    for name in names.GENERIC:  # the others: their tasks' documents
        spec = tsv.spec(name)
        assert isinstance(spec, tsv.TaskTsv) and list(spec.tasks) == leaves(name, lmms_tasks()), name
    for owner, dataset in _described():
        spec = tsv.spec(dataset.name)
        assert spec.source is registry.sources()[dataset.source], dataset.name
        assert (spec.split, spec.keep) == (dataset.split, dataset.keep), dataset.name
        assert spec.format is registry.load_reference(owner.vlmeval.tsv_formats[dataset.source]), dataset.name
        assert isinstance(spec.format, tsv.TsvFormat)


def test_the_registered_classes_serve_every_dataset_once() -> None:
    """The classes every description names serve its datasets, each dataset by exactly one class, carrying its
    benchmark's registered version."""
    pytest.importorskip("vlmeval", reason="VLMEvalKit (ms-vlmeval) not installed")
    from scifig_tasks.vlmeval import dataset_classes

    classes = dataset_classes()
    served = [name for cls in classes for name in cls.NAMES]
    assert sorted(served) == sorted(names.DATASETS) and len(served) == len(set(served))
    from scifig_tasks.vlmeval.generic import SciFigTask

    assert classes[-1] is SciFigTask and SciFigTask.NAMES == names.GENERIC
    for cls in classes[:-1]:
        owner = registry.benchmark(cls.BENCHMARK)
        assert f"{cls.__module__}:{cls.__name__}" in owner.vlmeval.classes, cls.__name__
        assert {registry.benchmark_of(name).name for name in cls.NAMES} == {owner.name}, cls.__name__
        assert cls.supported_datasets()[: len(cls.NAMES)] == list(cls.NAMES)


def test_the_paper_twins_lmms_eval_has_are_all_in_vlmeval() -> None:
    """SciFIBench's and MMSci's ``_paper`` tasks (multiple choice and captioning) each have their VLMEvalKit
    dataset, or their group is one."""
    tasks = lmms_tasks()
    paper = [name for name in tasks if name.endswith("_paper") and name.startswith(("scifibench", "mmsci"))]
    assert {"scifibench_cs_figure2caption_paper", "mmsci_fig2cap_paper", "mmsci_subcap2fig_paper"} <= set(paper)
    offered = set(names.DATASETS) | set(names.GROUPS)
    assert sorted(name for name in paper if name not in offered) == []


def test_names_import_without_vlmeval() -> None:
    code = (
        "import sys, scifig_tasks.vlmeval.names as n; n.vlmeval_names(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('vlmeval', 'datasets', 'torch')))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def _name_checks(root: Path) -> list[tuple[str, str, bool, str]]:
    """VLMEvalKit's string checks: ``(literal, kind, lowered, where)`` for ``listinstr([...], x)``,
    ``'lit' in x``, ``x == 'lit'``, ``x in ['lit', ...]``, ``x.startswith('lit')`` / ``endswith``; ``lowered``
    when ``x`` is lower-cased (``x.lower()``) before the check."""

    def lowered(node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("lower", "casefold")
            for n in ast.walk(node)
        )

    def strings(node: ast.AST) -> list[str]:
        return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]

    checks = []
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            found: list[tuple[str, ast.AST, str]] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "listinstr":
                if len(node.args) >= 2:
                    found += [(text, node.args[1], "in") for text in strings(node.args[0])]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                if node.func.attr in ("startswith", "endswith"):
                    found += [(text, node.func.value, node.func.attr) for text in strings(node.args[0])]
            elif isinstance(node, ast.Compare) and len(node.ops) == 1:
                op, left, right = node.ops[0], node.left, node.comparators[0]
                if isinstance(op, ast.In | ast.NotIn):
                    if isinstance(left, ast.Constant) and isinstance(left.value, str):
                        found.append((left.value, right, "in"))
                    elif isinstance(right, ast.List | ast.Tuple | ast.Set):
                        found += [(text, left, "eq") for text in strings(right)]
                elif isinstance(op, ast.Eq | ast.NotEq):
                    for one, other in ((left, right), (right, left)):
                        if isinstance(one, ast.Constant) and isinstance(one.value, str):
                            found.append((one.value, other, "eq"))
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            checks += [(text, kind, lowered(subject), where) for text, subject, kind in found if text]
    return checks


# string checks that a name of ours passes but that never look at a dataset name: whether a row, message or question
# holds an ``image`` field (many files), ``'reason' in raw_answer`` (OST-Bench's answer parser), ``'llm' in
# os.listdir(...)`` (a LLaVA checkpoint folder); and CharXiv's ``"descriptive"`` / ``"reasoning" in
# self.dataset_name`` inside its own class (scifig's CharXiv datasets are served by scifig's class, never by it).
# The names of the tasks served from their YAMLs' hooks pass more checks that never look at a dataset name: on
# table columns (``'id' in data.columns``), on replies and answers (``'true' in pred``, ``'no' in correct``, ``"pi" in
# string``, ``"or" in last_boxed_content``), on words (``text.endswith("es")``) and on other datasets' records
# (``'grid' in state_data``, ``"ignore" in item.keys()``). (literal, file or None for any file)
NOT_DATASET_NAME_CHECKS = {
    ("image", None),
    ("reason", "dataset/ost_bench.py"),
    ("llm", "vlm/llava/llava_xtuner.py"),
    ("reasoning", "dataset/charxiv.py"),
    ("descriptive", "dataset/charxiv.py"),
    ("id", "dataset/image_mcq.py"),
    ("id", "dataset/matbench.py"),
    ("id", "dataset/mmhelix.py"),
    ("id", "dataset/oceanocr.py"),
    ("id", "dataset/utils/sarena.py"),
    ("no", "dataset/image_shortqa.py"),
    ("no", "dataset/utils/yorn.py"),
    ("true", "dataset/image_vqa.py"),
    ("false", "dataset/image_vqa.py"),
    ("true", "dataset/utils/tablevqabench.py"),
    ("false", "dataset/utils/tablevqabench.py"),
    ("true", "dataset/utils/omni3dbench.py"),
    ("false", "dataset/utils/omni3dbench.py"),
    ("true", "dataset/utils/physics_eval_utils.py"),
    ("pi", "dataset/utils/hipho_verifier.py"),
    ("es", "dataset/utils/megabench/scoring/constrained_generation.py"),
    ("ies", "dataset/utils/megabench/scoring/constrained_generation.py"),
    ("grid", "dataset/utils/mmhelix/evaluators/shingoki_eval.py"),
    ("ignore", "dataset/utils/ocrbrnch_v2_eval.py"),
    ("or", "dataset/utils/puzzlevqa.py"),
    ("or", "dataset/utils/visualpuzzles.py"),
    ("or", "dataset/utils/visulogic.py"),
}


@pytest.mark.slow
def test_no_name_triggers_vlmeval_special_cases() -> None:
    spec = importlib.util.find_spec("vlmeval")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("VLMEvalKit (ms-vlmeval) not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    checks = _name_checks(root)
    assert len(checks) > 1000  # the scan reads VLMEvalKit's code

    def triggers(name: str, text: str, kind: str, low: bool) -> bool:
        value = name.lower() if low else name
        text = text.lower() if low and text.islower() else text  # 'IMAGE' in x.lower() is never true
        return {
            "in": text in value,
            "eq": text == value,
            "startswith": value.startswith(text),
            "endswith": value.endswith(text),
        }[kind]

    hits = {
        (text, where)
        for name in names.DATASETS
        for text, kind, low, where in checks
        if triggers(name, text, kind, low) and len(text) > 1
    }
    set_aside = {(text, file) for text, file in NOT_DATASET_NAME_CHECKS}
    assert (
        sorted(
            (text, where)
            for text, where in hits
            if (text, None) not in set_aside and (text, where.split(":")[0]) not in set_aside
        )
        == []
    )
    # the scan saw the special cases a name could trip: "MMSci" (case-sensitive: "mmsci" passes), "cn" in a
    # lower-cased name, ChartQA, MMBench, MMMU
    seen = {(text, low) for text, _, low, _ in checks}
    assert {("MMSci", False), ("cn", True), ("ChartQA", False), ("MMBench", False), ("MMMU", False)} <= seen
    assert not any(text.lower() == "mmsci" and low for text, _, low, _ in checks)


def test_old_data_names_map_with_one_deprecation_line(capsys: pytest.CaptureFixture[str]) -> None:
    deprecation._warned.clear()
    argv = ["--data", "SciFig_GRAB", "scifibench", "--model", "m", "--data=SciFig_MMSCI_MCQ_Dev", "--reuse"]
    assert renamed_data(argv) == [
        "--data",
        "grab",
        *names.GROUPS["scifibench"],
        "--model",
        "m",
        "--data",
        "mmsci_dev",
        "--reuse",
    ]
    config = {"model": {}, "data": {"SciFig_GRAB": {"class": "SciFigGRAB", "dataset": "SciFig_GRAB"}}}
    assert renamed_config(config) == {"model": {}, "data": {"grab": {"class": "SciFigGRAB", "dataset": "grab"}}}
    assert renamed_config({"data": {"grab": {"class": "SciFigGRAB", "dataset": "grab"}}}) is None
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "scifig: VLMEvalKit dataset SciFig_GRAB is deprecated and goes in 0.3.0 — use grab",
        "scifig: VLMEvalKit dataset SciFig_MMSCI_MCQ_Dev is deprecated and goes in 0.3.0 — use mmsci_dev",
    ]


def test_old_tsv_and_prediction_names_stay_readable() -> None:
    """A reader of files written under an old name finds its dataset's format (TSV columns, fingerprint source)."""
    from scifig_tasks.vlmeval import tsv

    for old, new in names.DEPRECATED.items():
        assert tsv.spec(old) is tsv.specs()[new]
        assert names.known(old) and names.known(new)


# ---- through VLMEvalKit's runner -----------------------------------------------------------------------------------

F2C = "CS_Figure2Caption"


def test_vlmeval_judge_options_old_name_and_paper_twin(tmp_path: Path, openai_server, lmms_env) -> None:
    from tests.vlmeval.test_vlmeval_runner import FAILED, SCIFIBENCH_CASES, policy, scifibench_data

    cases = SCIFIBENCH_CASES[F2C]
    stated = {case.reply: case.stated or "None" for case in cases if case.reply is not FAILED}
    output = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)

    def judge(request: ChatRequest) -> str:
        return stated[output.search(request.text).group(1)]

    model, cmdline_judge, env_judge = openai_server(policy), openai_server(judge), openai_server(judge)
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(scifibench_data(tmp_path / "data")),
        "SCIFIG_JUDGE_BASE_URL": env_judge.base_url,  # the environment's judge: VLMEvalKit's --judge wins over it
        "SCIFIG_JUDGE_MODEL": "env-judge",
        "SCIFIG_JUDGE_CACHE": str(tmp_path / "judge-cache"),
    }
    data = {
        "SciFig_SciFIBench_CS_Figure2Caption": "SciFigSciFIBench",
        "scifibench_cs_figure2caption_paper": "SciFigSciFIBench",
    }
    judge_options = ["--judge", "cmdline-judge", "--judge-base-url", cmdline_judge.base_url, "--judge-key", JUDGE_KEY]
    completed, out = run_vlmeval(tmp_path, model.base_url, env, data, extra=judge_options)
    output_text = completed.stdout + completed.stderr
    # one question of the split gets a failed request, in each of the two datasets: a failed run, said last
    assert completed.returncode == 1, output_text[-6000:]
    failed = f"scifig vlmeval: FAILED: 2 of {2 * len(cases)} model requests failed "
    assert completed.stderr.rstrip().splitlines()[-1].startswith(failed), output_text[-6000:]

    # the old name ran as today's dataset, with exactly one deprecation line
    warning = "scifig: VLMEvalKit dataset SciFig_SciFIBench_CS_Figure2Caption is deprecated and goes in 0.3.0"
    assert completed.stderr.count(warning) == 1 and f"{warning} — use scifibench_cs_figure2caption" in completed.stderr
    assert set(json.loads((out / "status.json").read_text())["datasets"]) == {
        "scifibench_cs_figure2caption",
        "scifibench_cs_figure2caption_paper",
    }
    default = json.loads((out / f"{MODEL}_scifibench_cs_figure2caption_scifig_scores.json").read_text())
    paper = json.loads((out / f"{MODEL}_scifibench_cs_figure2caption_paper_scifig_scores.json").read_text())

    # VLMEvalKit's --judge options chose the judge: the environment's was never asked; the scores name it
    assert env_judge.requests == []
    assert {request.body["model"] for request in cmdline_judge.requests} == {"cmdline-judge"}
    assert {request.headers.get("authorization") for request in cmdline_judge.requests} == {f"Bearer {JUDGE_KEY}"}
    described = {"model": "cmdline-judge", "base_url": cmdline_judge.base_url, "from": "VLMEvalKit --judge options"}
    assert default["judge"] == paper["judge"] == described

    # default protocol: rules first, the judge for the two outputs they refuse; paper: the judge reads every output
    correct = sum(case.stated == case.answer for case in cases)
    assert (default["metrics"]["correct"], paper["metrics"]["correct"]) == (correct, correct) == (4, 4)
    assert default["breakdown"]["flags"]["protocol"] == {"default": len(cases)}
    assert paper["breakdown"]["flags"]["protocol"] == {"paper": len(cases)}
    records_file = out / f"{MODEL}_scifibench_cs_figure2caption_paper_scifig_records.jsonl"
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    by_reply = {record["prediction"]: (record["resolution"], record["reason"]) for record in records}
    for reply, letter in stated.items():  # every output obtained is the judge's to read, none by the rules
        assert by_reply[reply] == (("judge", "paper parse") if letter != "None" else ("unresolved", NOT_A_LETTER))
    asked = {output.search(request.text).group(1) for request in cmdline_judge.requests}
    assert asked == set(stated)  # the three the rules read were asked by the paper twin only

    # the judge's key is in no output and no file
    assert JUDGE_KEY not in output_text
    leaked = [path for path in tmp_path.rglob("*") if path.is_file() and JUDGE_KEY.encode() in path.read_bytes()]
    assert leaked == []


def test_judge_resolution_precedence(tmp_path: Path) -> None:
    """VLMEvalKit's judge kwargs over ``SCIFIG_JUDGE_*``; its own default model for multiple choice is no choice."""
    from scifig_tasks.vlmeval import judging

    env = {
        "SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
        "SCIFIG_JUDGE_MODEL": "env-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-env-judge-key-123",
        "SCIFIG_JUDGE_CACHE": str(tmp_path),
    }
    defaults = {"nproc": 4, "retry": 6, "timeout": 600, "verbose": False}
    # VLMEvalKit named gpt-4o-mini itself (no --judge): the environment's judge, its settings untouched
    for known in (None, True):
        kwargs = {**defaults, "model": "gpt-4o-mini"}
        if known:
            with judging.command_line(None, False):
                chosen = judging.chosen_judge(kwargs, "MCQ", env)
        else:
            chosen = judging.chosen_judge(kwargs, "MCQ", env)
        assert chosen.source == judging.FROM_ENVIRONMENT and chosen.client is not None
        assert (chosen.client.config.model, chosen.client.config.max_concurrency) == ("env-judge", 8)
    # --judge alone: its model on the environment's endpoint and key, with VLMEvalKit's nproc / retry / timeout
    with judging.command_line("gpt-4o-mini", True):
        chosen = judging.chosen_judge({**defaults, "model": "gpt-4o-mini"}, "MCQ", env)
    config = chosen.client.config
    assert chosen.source == judging.FROM_VLMEVAL
    assert (config.model, config.base_url, config.api_key) == (
        "gpt-4o-mini",
        env["SCIFIG_JUDGE_BASE_URL"],
        env["SCIFIG_JUDGE_API_KEY"],
    )
    assert (config.max_concurrency, config.max_retries, config.timeout_s) == (4, 6, 600.0)
    assert chosen.described() == {
        "model": "gpt-4o-mini",
        "base_url": "http://127.0.0.1:9/v1",
        "from": judging.FROM_VLMEVAL,
    }
    # a non-multiple-choice dataset gets a model only from --judge (or --judge-args): no command line needed
    chosen = judging.chosen_judge(
        {**defaults, "model": "m2", "api_base": "http://u:p@127.0.0.1:8/v1/chat/completions"}, "VQA", {}
    )
    assert (chosen.client.config.model, chosen.client.config.base_url) == ("m2", "http://u:p@127.0.0.1:8/v1")
    assert chosen.described()["base_url"] == "http://127.0.0.1:8/v1"  # no credentials in the scores file
    assert judging.chosen_judge({**defaults, "model": "exact_matching"}, "VQA", env).client is None
    with pytest.raises(ValueError, match="no endpoint"):
        judging.chosen_judge({**defaults, "model": "m3"}, "VQA", {"SCIFIG_JUDGE_CACHE": str(tmp_path)})
