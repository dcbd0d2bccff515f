"""A fifth benchmark from an outside package works through every command line with no scifig file edited.

The toy benchmark of docs/adding-a-benchmark.md (``tests/fixtures/toy_bench``: ten bar charts with two questions
each, declared once as the source's ``questions``, scored by scifig's shared resolver; a ``strict`` variant task) is
copied into a temporary folder and made importable with its ``scifig.benchmarks`` entry point (a ``.dist-info``
beside it, as ``pip install`` writes). Then the guide's commands run as a user runs them: the data builder,
``scifig tasks``, plain ``lmms-eval --model scifig_chance``, the same replies through lmms-eval and ``scifig
vlmeval`` (equal numbers; the toy has no VLMEvalKit code: its tasks are datasets of their names, served from their
YAMLs' hooks), ``scifig rescore``, ``scifig report`` (the generic section, the lmms-eval and VLMEvalKit runs side by
side with the same numbers), ``scifig compare`` (the two frameworks' runs paired question by question, by ``qid`` or,
without it, by task and document index; a run without its records named with the files that lack them) and ``scifig
export-upstream``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, CliRun, _executable, offline_env
from tests.harness.paths import FIXTURES, REPO
from tests.harness.vlmeval import run_vlmeval, vlmeval_scores

TOY = FIXTURES / "toy_bench"
REPLY = "The answer is B."


def install_toy(folder: Path) -> Path:
    """The toy package and its entry point in ``folder`` (a path entry), as an installed distribution would be."""
    shutil.copytree(TOY / "toy_bench", folder / "toy_bench")
    info = folder / "toy_bench-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-bench\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[scifig.benchmarks]\ntoybars = toy_bench.description:BENCHMARK\n")
    return folder


def command(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a command line (recorded in :data:`RAN`, by :func:`command_key`)."""
    RAN.append(command_key(shlex.join([Path(args[0]).name, *args[1:]])))
    return unlisted(args, env, cwd)


def unlisted(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a command line the guide does not list (a check on the files the listed ones wrote)."""
    return warm_start.run(args, env, cwd=cwd, timeout=CLI_TIMEOUT_S)


GUIDE = REPO / "docs" / "adding-a-benchmark.md"
RUN = [
    "python -m toy_bench.build",
    "scifig tasks",
    "lmms-eval scifig_chance",
    "lmms-eval openai",
    "scifig vlmeval",
    "scifig rescore",
    "scifig report",
    "scifig compare",
    "scifig export-upstream",
]
"""The commands the test below runs, in order, each named by :func:`command_key`."""
RAN: list[str] = []


def command_key(line: str) -> str:
    """A command line named by its program and what it runs: ``scifig report``, ``lmms-eval openai`` (its model)."""
    words = shlex.split(line.split("#")[0].split("&&")[0])
    if words[0].startswith("python"):
        return f"python -m {words[2]}"
    if words[0] == "lmms-eval":
        return f"lmms-eval {words[words.index('--model') + 1]}"
    return " ".join(words[:2])


def test_the_guide_lists_the_commands_the_test_runs() -> None:
    block = GUIDE.read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    assert [command_key(line) for line in block.splitlines() if line.strip()] == RUN


def test_a_benchmark_registered_from_outside_runs_through_every_command(tmp_path: Path, openai_server) -> None:
    RAN.clear()
    packages = install_toy(tmp_path / "packages")
    env = offline_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(packages), env.get("PYTHONPATH")]))
    scifig, lmms_eval = _executable("scifig"), _executable("lmms-eval")

    built = command([sys.executable, "-m", "toy_bench.build", str(tmp_path / "data")], env, tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    env["SCIFIG_TOYBARS_DATA"] = str(tmp_path / "data")
    answers = [row["answer"] for row in _rows(tmp_path / "data" / "test.parquet")]

    listed = command([scifig, "tasks"], env, tmp_path)
    assert listed.returncode == 0 and any(line.split()[:1] == ["toybars"] for line in listed.stdout.splitlines())

    chance_out = tmp_path / "chance"
    chance = _lmms(lmms_eval, ["--model", "scifig_chance", "--tasks", "toybars"], env, tmp_path, chance_out)
    toy = chance.results()["results"]["toybars"]
    assert toy["breakdown,none"]["overall"]["all"]["n"] == 20  # two questions per chart (the source's `questions`)
    assert toy["accuracy,none"] == toy["breakdown,none"]["overall"]["all"]["accuracy"]

    # the same replies through both frameworks give the same numbers
    server = openai_server(lambda request: REPLY)
    served = {**env, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    model = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    lmms_out = tmp_path / "replied"
    tasks = "toybars,toybars_strict"
    replied = _lmms(lmms_eval, [*model, "--tasks", tasks], served, tmp_path, lmms_out).results()["results"]
    RAN.append("scifig vlmeval")  # through its --config file: tests/harness/vlmeval.py
    generic = {"toybars": "SciFigTask", "toybars_strict": "SciFigTask"}  # no VLMEvalKit code: the YAMLs' hooks
    completed, vlmeval_out = run_vlmeval(tmp_path, openai_server(lambda request: REPLY).base_url, env, generic)
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]
    vlmeval = vlmeval_scores(vlmeval_out, "toybars")
    more = ["A" if answer in "CD" else "B" for answer in answers]  # "more than two bars?" of each chart
    assert replied["toybars"]["accuracy,none"] == vlmeval["metrics"]["accuracy"] == (answers + more).count("B") / 20
    assert replied["toybars"]["breakdown,none"] == vlmeval["breakdown"]
    strict = vlmeval_scores(vlmeval_out, "toybars_strict")  # the option reaches VLMEvalKit: no reply is a letter alone
    assert replied["toybars_strict"]["accuracy,none"] == strict["metrics"]["accuracy"] == 0.0

    rescored = command([scifig, "rescore", str(lmms_out), "--out", str(tmp_path / "rescored")], env, tmp_path)
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    (diff,) = (tmp_path / "rescored").rglob("rescore_diff.json")
    toy_diff = json.loads(diff.read_text())["tasks"]["toybars"]
    assert toy_diff["changed_samples"] == 0 and toy_diff["samples"] == 20, toy_diff

    runs = [str(chance_out), str(lmms_out), str(vlmeval_out)]
    report = command(
        [scifig, "report", *runs, "--out", str(tmp_path / "report")],
        {**env, "LMUData": str(tmp_path / "LMUData")},
        tmp_path,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## Toy bars" in markdown and "Toy bars accuracy per category" in markdown
    # the VLMEvalKit run of the tasks' own datasets stands beside the lmms-eval run, with the same numbers
    assert "not shown in this report" not in markdown and "fake-vlm (VLMEvalKit): ." not in markdown.splitlines()
    accuracy = f"{100 * replied['toybars']['accuracy,none']:.1f} ("
    lmms_rows, vlmeval_rows = _table_rows(markdown, "fake-vlm"), _table_rows(markdown, "fake-vlm (VLMEvalKit)")
    assert vlmeval_rows[:2] == lmms_rows[:2] and lmms_rows[0][0].startswith(accuracy)  # summary and runs tables
    section = markdown.split("## Toy bars", 1)[1].split("\n## ", 1)[0]
    shown = _table_rows(section, "toybars") + _table_rows(section, "toybars_strict")  # per task, per category
    assert len(shown) == 6 and all(row[-1] == row[-2] != "-" for row in shown), shown

    # question by question: the two frameworks' runs pair on the benchmark's document_id (qid), and agree
    comparison = tmp_path / "compare.json"
    compared = command(
        [scifig, "compare", str(lmms_out), str(vlmeval_out), str(chance_out), "--json", str(comparison)], env, tmp_path
    )
    assert compared.returncode == 0 and "toybars" in compared.stdout, compared.stderr[-3000:]
    pairs = {(row["b"], row["task"]): row for row in json.loads(comparison.read_text())["comparisons"]}
    for task in ("toybars", "toybars_strict"):
        both = pairs[("B", task)]  # the VLMEvalKit run against the lmms-eval run
        assert (both["status"], both["n"], both["only_a"], both["only_b"]) == ("compared", 20, 0, 0), both
        assert both["accuracy_a"] == both["accuracy_b"] == replied[task]["accuracy,none"]
    assert pairs[("C", "toybars")]["status"] == "compared"  # the chance run (toybars only) against the lmms-eval run

    exported = command([scifig, "export-upstream", "--bench", "toybars", "--out", str(tmp_path / "up")], env, tmp_path)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert {path.name for path in (tmp_path / "up" / "lmms_eval" / "tasks" / "toybars").iterdir()} >= {
        "toybars.yaml",
        "utils.py",
        "toybars_hooks.py",
        "toy_bench",
    }
    assert RAN == RUN  # what the guide lists (test_the_guide_lists_the_commands_the_test_runs)

    # records without the id fields pair by task and document index (both frameworks number a task's documents alike)
    without_ids = tmp_path / "vlmeval-no-ids"
    shutil.copytree(vlmeval_out, without_ids)
    for records in without_ids.glob("*_scifig_records.jsonl"):
        lines = [json.loads(line) for line in records.read_text().splitlines()]
        for line in lines:
            del line["breakdown"]["qid"]
        records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    by_position = unlisted(
        [scifig, "compare", str(lmms_out), str(without_ids), "--json", str(comparison)], env, tmp_path
    )
    assert by_position.returncode == 0, (by_position.stdout + by_position.stderr)[-3000:]
    for row in json.loads(comparison.read_text())["comparisons"]:
        assert (row["status"], row["n"], row["only_a"], row["only_b"]) == ("compared", 20, 0, 0), row
    # a run without its records: the message names the files that lack them and what writes them
    for records in without_ids.glob("*_scifig_records.jsonl"):
        records.unlink()
    missing = unlisted([scifig, "compare", str(lmms_out), str(without_ids)], env, tmp_path)
    assert missing.returncode == 2 and missing.stderr.strip().splitlines() == [
        f"scifig compare: {without_ids} has no per-question records: no *_scifig_records.jsonl beside "
        "fake-vlm_toybars_scifig_scores.json, fake-vlm_toybars_strict_scifig_scores.json — run scifig vlmeval again "
        "(each dataset's evaluation writes its *_scifig_records.jsonl)"
    ], missing.stderr


def _lmms(executable: str, args: list[str], env: dict[str, str], cwd: Path, out: Path) -> CliRun:
    run = command([executable, *args, "--log_samples", "--output_path", str(out)], env, cwd)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    return CliRun(run.returncode, run.stdout + run.stderr, out)


def _table_rows(markdown: str, first: str) -> list[list[str]]:
    """The cells after the first of every Markdown table row whose first cell is ``first``."""
    rows = [[cell.strip() for cell in line[1:-1].split("|")] for line in markdown.splitlines() if line.startswith("|")]
    return [row[1:] for row in rows if row[0] == first]


def _rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=["answer"]).to_pylist()
