"""``export_vlmeval`` (``scifig export-upstream --framework vlmeval``): every built-in benchmark's VLMEvalKit datasets
written into a copy of the installed VLMEvalKit, checked with VLMEvalKit's own flake8, isort and yapf settings, and
run by VLMEvalKit's own runner in a process where scifig does not exist (:mod:`tests.harness.hidden_scifig`), with
VLMEvalKit's ``GPT4V`` API model against a local server: each dataset's records and metrics equal those scifig's own
VLMEvalKit classes give for the same prediction file, a few verdicts are checked against the known right and wrong
of their replies, and a dataset that needs the judge is refused, with no request, while the others run.

One test, one VLMEvalKit run over the five benchmarks (the CI budget): exporting formats about 70 files with yapf,
and VLMEvalKit's start and the two scifig processes (TSVs and export; scifig's own scores) each import VLMEvalKit.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from scifig_tasks.core import registry
from scifig_tasks.export.vendoring import ExportError
from scifig_tasks.export.vlmeval_datasets import export_vlmeval
from tests.harness import warm_start
from tests.harness.benchmarks import data_module, own
from tests.harness.hidden_scifig import hidden_env
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.vlmeval import MODEL, vlmeval_config

BENCHMARKS = tuple(name for name in registry.benchmarks() if own(name))
"""scifig's own benchmarks (an outside one has no data module here: :mod:`tests.harness.benchmarks`)."""
RUN = {  # dataset -> exported class (VLMEvalKit's --config names a dataset's class)
    "grab_llm_extract": "SciFigGRAB",  # needs the judge: refused while it is built, first, so before any request
    "grab": "SciFigGRAB",
    "scifibench_cs_figure2caption": "SciFigSciFIBench",
    "scifibench_cs_caption2figure": "SciFigSciFIBench",  # options interleaved with the images
    "plot_twist": "SciFigPlotTwist",
    "mmsci": "SciFigMMSciMCQ",
    "charxiv_full": "SciFigCharxivFull",  # a group, served through its tasks' hooks
}
REFUSED = "grab_llm_extract"
WITH_TSV = [name for name in RUN if name != REFUSED]
WRONG = "no idea"
VLMEVAL_SETUP_CFG = """\
[flake8]
max-line-length = 99
ignore = W503,E203,E741
per-file-ignores =
    run.py: E402
    vlmeval/vlm/__init__.py: F401, E402
    vlmeval/dataset/video_dataset_config.py: F405, F403
    vlmeval/dataset/utils/longdocurl.py: E501
    vlmeval/dataset/utils/mmlongbench_judge_prompt.py: E501
    vlmeval/dataset/utils/memlens_utils.py: E501

[isort]
line_length = 99
multi_line_output = 0
known_first_party = vlmeval
no_lines_before = STDLIB,LOCALFOLDER
sections = FUTURE,STDLIB,THIRDPARTY,FIRSTPARTY,LOCALFOLDER
"""
"""The [flake8] and [isort] sections of VLMEvalKit's setup.cfg (open-compass/VLMEvalKit, December 2026): its
pre-commit runs flake8 with ``--max-line-length=120 --ignore=W503`` on top of them and isort with them."""

EXPORT = """
import json, sys
from pathlib import Path
from scifig_tasks.export.vlmeval_datasets import export_vlmeval, write_tsv

lmu, root = Path(sys.argv[1]), Path(sys.argv[2])
for name in sys.argv[4].split(","):
    write_tsv(name, lmu)
done = {}
for bench in sys.argv[3].split(","):
    result = export_vlmeval(bench, root, data=lmu)
    done[bench] = {
        "md5": result.md5, "registration": result.registration, "lines": result.lines(),
        "files": [str(path) for path in result.files], "classes": list(result.classes),
    }
print("REPORT " + json.dumps(done))
"""

SCIFIG_SCORES = """
import json, sys
from pathlib import Path
import vlmeval.dataset
from scifig_tasks.vlmeval import register

register()
found = {}
for name, prediction in json.loads(sys.argv[1]).items():
    dataset = vlmeval.dataset.build_dataset(name)
    metrics = dataset.evaluate(prediction)
    records = Path(prediction.rsplit(".", 1)[0] + "_scifig_records.jsonl").read_text().splitlines()
    found[name] = {"metrics": metrics, "records": [json.loads(line) for line in records]}
print("REPORT " + json.dumps(found))
"""

RUNNER = """
import runpy, sys
try:
    import scifig_tasks
    sys.exit("scifig_tasks can be imported: the run would not show the export stands alone")
except ModuleNotFoundError:
    pass
import vlmeval
print("VLMEVAL " + vlmeval.__file__, flush=True)
sys.argv = ["run.py", *sys.argv[1:]]
runpy.run_module("vlmeval.run", run_name="__main__")
"""
"""VLMEvalKit's own runner (``vlmeval/run.py`` as ``__main__``), after proving scifig cannot be imported."""


def _report(completed: Any) -> Any:
    assert completed.returncode == 0, (completed.stdout[-3000:], completed.stderr[-6000:])
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("REPORT ")]
    return json.loads(line.removeprefix("REPORT "))


def _tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)


def _register(init: Path, registration: list[list[str]]) -> None:
    """Add the printed lines to VLMEvalKit's ``vlmeval/dataset/__init__.py``, where its maintainers would: the imports
    at the end of its import block, the classes to ``IMAGE_DATASET`` before the video datasets are listed."""
    text = init.read_text()
    imports = "".join(lines[0] + "\n" for lines in registration)
    listed = "".join(lines[1] + "\n" for lines in registration)
    anchor, video = "\nfrom .video_dataset_config import", "\nVIDEO_DATASET = ["
    assert anchor in text and video in text, "VLMEvalKit's dataset __init__ changed its layout"
    text = text.replace(anchor, "\n" + imports.rstrip("\n") + anchor, 1)
    init.write_text(text.replace(video, "\n" + listed + video, 1))


def _gold(lmu: Path) -> dict[str, str]:
    """Question text -> the reply the server gives it: the gold answer of every other TSV row whose question is
    unique across the TSVs, :data:`WRONG` for the others."""
    seen: dict[str, list[str]] = {}
    for name in WITH_TSV:
        table = _tsv(lmu / f"{name}.tsv")
        for position, row in table.iterrows():
            answer = json.loads(row["document"])["answer"] if "document" in row else row["answer"]
            seen.setdefault(row["question"], []).append(answer if int(position) % 2 == 0 else WRONG)
    return {question: replies[0] for question, replies in seen.items() if len(replies) == 1 and question.strip()}


@pytest.mark.slow
@pytest.mark.cli
def test_exported_datasets_run_in_vlmeval_without_scifig(tmp_path: Path, openai_server) -> None:
    env = offline_env(tmp_path)
    for bench in BENCHMARKS:
        env |= importlib.import_module(data_module(bench)).sample(tmp_path / "data" / bench)
    lmu, site = tmp_path / "LMUData", tmp_path / "site"
    installed = Path(importlib.util.find_spec("vlmeval").origin).parent  # type: ignore[union-attr, arg-type]
    shutil.copytree(installed, site / "vlmeval", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "setup.cfg").write_text(VLMEVAL_SETUP_CFG)

    command = [sys.executable, "-c", EXPORT, str(lmu), str(site), ",".join(BENCHMARKS), ",".join(WITH_TSV)]
    exported = _report(warm_start.run(command, env, cwd=tmp_path, timeout=CLI_TIMEOUT_S))
    for bench, done in exported.items():  # each TSV's MD5 recorded, as VLMEvalKit's prepare_tsv checks it
        for name, digest in done["md5"].items():
            assert digest == hashlib.md5((lmu / f"{name}.tsv").read_bytes()).hexdigest(), name
        assert done["registration"][0].startswith(f"from .scifig_{bench} import "), done["registration"]
        assert done["lines"][-2:] == [f"  {line}" for line in done["registration"]]
    assert set(exported["grab"]["md5"]) == {"grab"} and exported["charxiv_full"]["classes"] == ["SciFigCharxivFull"]
    class_text = (site / "vlmeval" / "dataset" / "scifig_grab.py").read_text()
    assert "DATASET_MD5 = {'grab': '" in class_text and "scifig-tsv-not-uploaded-yet.invalid/grab.tsv" in class_text

    files = sorted({str(Path(file).relative_to(site)) for done in exported.values() for file in done["files"]})
    assert all(file.startswith("vlmeval/dataset/") for file in files) and len(files) > 40
    for tool in (  # VLMEvalKit's pre-commit: each passes with the files unchanged
        ["flake8", "--max-line-length=120", "--ignore=W503"],
        ["isort", "--check-only", "--diff"],
        ["yapf", "--diff", "--style={column_limit=120}"],
    ):
        checked = warm_start.run([sys.executable, "-m", *tool, *files], env, cwd=site, timeout=CLI_TIMEOUT_S)
        assert checked.returncode == 0, (tool[0], checked.stdout[-3000:], checked.stderr[-3000:])
    for file in files:
        text = (site / file).read_text()
        assert text.endswith("\n") and not text.endswith("\n\n") and " \n" not in text, file  # pre-commit-hooks
    _register(site / "vlmeval" / "dataset" / "__init__.py", [done["registration"] for done in exported.values()])

    gold = _gold(lmu)

    def reply(request: ChatRequest) -> Reply | str:
        found = [question for question in gold if question in request.text]
        if found:
            return gold[max(found, key=len)]
        return ("A", "C", WRONG)[int(hashlib.sha256(request.text.encode()).hexdigest(), 16) % 3]

    server = openai_server(reply)
    config = vlmeval_config(server.base_url, RUN)
    (tmp_path / "run.json").write_text(json.dumps(config))
    hidden = hidden_env({**env, "LMUData": str(lmu), "PRED_FORMAT": "tsv"}, tmp_path, path=[site])
    argv = ["--config", str(tmp_path / "run.json"), "--work-dir", str(tmp_path / "work"), "--api-nproc", "4"]
    ran = warm_start.run([sys.executable, "-c", RUNNER, *argv], hidden, cwd=tmp_path, timeout=CLI_TIMEOUT_S)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output[-6000:]
    assert f"VLMEVAL {site / 'vlmeval' / '__init__.py'}" in ran.stdout  # the copy, with the exported classes
    assert f"{REFUSED} cannot be scored without an LLM judge, and none is configured" in output
    assert "or run grab (scored without requiring one)" in output

    runs = tmp_path / "work" / MODEL
    predictions = {name: sorted(runs.rglob(f"{MODEL}_{name}.tsv")) for name in RUN}
    assert predictions[REFUSED] == [], "the refused dataset was asked"
    rows = {name: len(_tsv(lmu / f"{name}.tsv")) for name in WITH_TSV}
    assert len(server.requests) == sum(rows.values())  # every question of the others once, none of the refused one

    scifig_side = tmp_path / "scifig-side"  # scifig's own classes score a copy of each prediction file
    scifig_side.mkdir()
    copies = {name: str(shutil.copy(predictions[name][0], scifig_side)) for name in WITH_TSV}
    ours = _report(
        warm_start.run(
            [sys.executable, "-c", SCIFIG_SCORES, json.dumps(copies)],
            {**env, "LMUData": str(tmp_path / "scifig-LMUData")},
            cwd=tmp_path,
            timeout=CLI_TIMEOUT_S,
        )
    )
    for name in WITH_TSV:
        (prediction,) = predictions[name]
        stem = str(prediction)[: -len(".tsv")]
        records = [json.loads(line) for line in Path(f"{stem}_scifig_records.jsonl").read_text().splitlines()]
        scores = json.loads(Path(f"{stem}_scifig_scores.json").read_text())
        assert len(records) == rows[name], name
        assert records == ours[name]["records"], name  # each question's verdict, extraction and flags
        assert scores["metrics"] == ours[name]["metrics"], name
        assert scores["judge"]["model"] is None, name

    def exported_records(name: str) -> list[dict[str, Any]]:
        (prediction,) = predictions[name]
        text = Path(str(prediction)[: -len(".tsv")] + "_scifig_records.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]

    grab = _tsv(lmu / "grab.tsv")
    for record, (_, row) in zip(exported_records("grab"), grab.iterrows(), strict=True):
        assert record["prediction"] == gold[row["question"]]  # every GRAB question is unique
        assert bool(record["correct"]) == (record["prediction"] == row["answer"]), record
    assert {bool(record["correct"]) for record in exported_records("grab")} == {True, False}
    charxiv = exported_records("charxiv_full")
    right = [record for record in charxiv if record["prediction"] == record["accuracy"]["answer"]]
    assert right and all(record["accuracy"]["verdict"] == 1 for record in right)  # the gold answer, by the rules
    wrong = [record for record in charxiv if record["prediction"] == WRONG]
    assert wrong and all(record["accuracy"]["verdict"] == 0 for record in wrong)


def test_export_refuses_in_one_line(tmp_path: Path) -> None:
    """An unknown benchmark, a folder that is no VLMEvalKit checkout and a TSV lacking the columns the exported class
    reads (scifig's own TSV of a dataset served through its task's hooks has no prompt layout or document) are each
    refused in one line naming the name, folder or file, before anything is written (VLMEvalKit is not imported)."""
    root = tmp_path / "VLMEvalKit"
    (root / "vlmeval" / "dataset").mkdir(parents=True)
    with pytest.raises(ExportError, match=r"^unknown benchmark 'nope' \(registered: .*grab"):
        export_vlmeval("nope", root)
    with pytest.raises(ExportError, match=r"no vlmeval/dataset/__init__.py; give the root of a VLMEvalKit checkout$"):
        export_vlmeval("grab", root)
    (root / "vlmeval" / "dataset" / "__init__.py").write_text("")
    tsv = tmp_path / "tsv" / "charxiv_full.tsv"
    tsv.parent.mkdir()
    tsv.write_text("index\timage\timage_path\tquestion\ttask\tdoc\r\n")  # scifig export-tsv's header for it
    with pytest.raises(ExportError) as refused:
        export_vlmeval("charxiv_full", root, data=tsv.parent)
    assert str(refused.value) == (
        f"{tsv}: no column segments, document, which the exported charxiv_full reads: write it with "
        "scifig_tasks.export.vlmeval_datasets.write_tsv"
    )
    assert sorted(path.name for path in (root / "vlmeval" / "dataset").iterdir()) == ["__init__.py"]


@pytest.mark.slow
def test_an_outside_benchmarks_export_holds_every_module_its_files_import(tmp_path: Path) -> None:
    """An installed plugin's benchmark (the toy one: its hooks import its own ``toy_bench.rules``) exports like the
    built-ins: every ``vlmeval.dataset.utils`` module an exported file imports is a file of the tree, and nothing
    names the plugin's package."""
    if "toybars" not in registry.benchmarks():
        pytest.skip("the toy benchmark is not installed (the README's test command installs it)")
    root = tmp_path / "VLMEvalKit"
    (root / "vlmeval" / "dataset").mkdir(parents=True)
    (root / "vlmeval" / "dataset" / "__init__.py").write_text("")
    result = export_vlmeval("toybars", root)
    assert "rules.py" in result.own
    for path in result.files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vlmeval.dataset.utils"):
                parts = node.module.split(".")
                found = [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
                found += [root.joinpath(*parts, f"{alias.name}.py") for alias in node.names]
                assert any(candidate.is_file() for candidate in found), (path, node.module)
        assert "toy_bench" not in path.read_text(), path
