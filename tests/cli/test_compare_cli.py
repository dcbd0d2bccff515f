"""``scifig compare`` through the real command lines: two lmms-eval runs of the same small SciFIBench split with the
``openai`` model against the local server under two reply policies (the second right more often), then ``scifig
compare`` on the two output folders. The printed table and the JSON equal what this test computes by hand from the
sample logs (scipy's binomial test for the exact McNemar p-value); each results file records the data it read, a run
made from other data is refused in one line unless --allow-data-change, and is then refused for that task, a
task only one run has is listed as not compared, and a VLMEvalKit work dir of the same questions lines up with the
lmms-eval runs by question id.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import datasets
from PIL import Image
from scipy.stats import binomtest

from scifig_tasks.core import provenance, validation_records
from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S
from tests.harness.openai_server import ChatRequest
from tests.harness.scifibench_data import FEATURES, options_for, png, write_splits
from tests.harness.vlmeval import MODEL, run_vlmeval

TASK = "scifibench_cs_figure2caption"
QUESTIONS = 40
LETTERS = "ABCDE"


def answer(qid: int) -> str:
    return LETTERS[(qid * 3) % 5]


def grey(qid: int) -> int:
    """The grey level of question ``qid``'s figure: 6 levels apart, so a re-encoded (JPEG) image still tells it."""
    return 6 * (qid % 40) + 3


def write_data(directory: Path, first_id: int = 0) -> Path:
    """One SciFIBench split (CS_Figure2Caption) of :data:`QUESTIONS` questions with IDs from ``first_id``."""
    rows = [
        {
            "ID": qid,
            "Question": "Which caption best matches the image?",
            "Options": options_for(qid),
            "Answer": answer(qid),
            "Category": "cs.CV",
            "Images": [{"bytes": png((grey(qid),) * 3), "path": None}],
        }
        for qid in range(first_id, first_id + QUESTIONS)
    ]
    return write_splits({"CS_Figure2Caption": datasets.Dataset.from_list(rows, features=FEATURES)}, directory)


def question_of(request: ChatRequest) -> int:
    """The question (modulo :data:`QUESTIONS`) whose figure the request carries, from its grey level."""
    for message in request.body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                level = Image.open(io.BytesIO(data)).convert("L").getpixel((0, 0))
                return round((level - 3) / 6)
    raise AssertionError("no image in the request")


def replying(right: set[int]):
    """A policy naming the right letter for the questions in ``right`` (by ID), the next letter otherwise."""

    def policy(request: ChatRequest) -> str:
        qid = question_of(request)
        letter = answer(qid) if qid in right else LETTERS[(LETTERS.index(answer(qid)) + 1) % 5]
        return f"The answer is {letter}."

    return policy


WEAK = {qid for qid in range(QUESTIONS) if qid % 2 == 0} | {1}  # 21 of 40
STRONG = {qid for qid in range(QUESTIONS) if qid % 5 != 0}  # 32 of 40


def lmms_run(tmp_path: Path, name: str, data: Path, policy, openai_server, lmms_env, run_cli) -> Path:
    server = openai_server(policy)
    env = {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(data), "OPENAI_API_BASE": server.base_url}
    env["OPENAI_API_KEY"] = "sk-test"
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", TASK, "--log_samples"]
    run = run_cli("lmms-eval", args, env, tmp_path / name)
    assert run.returncode == 0, run.output[-4000:]
    assert TASK in run.results()["results"], run.output[-4000:]
    return tmp_path / name


def scifig_compare(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "compare", *map(str, args)]
    return warm_start.run(command, env, timeout=CLI_TIMEOUT_S)


def logged(out: Path) -> dict[int, bool]:
    """ID -> correct, read from the run's sample log."""
    (path,) = out.rglob(f"*_samples_{TASK}.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["breakdown"]["ID"]: bool(line["breakdown"]["correct"]) for line in lines}


def test_compare_two_lmms_eval_runs_and_refuse_other_data(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    data = write_data(tmp_path / "data")
    weak = lmms_run(tmp_path, "weak", data, replying(WEAK), openai_server, lmms_env, run_cli)
    strong = lmms_run(tmp_path, "strong", data, replying(STRONG), openai_server, lmms_env, run_cli)
    other_data = write_data(tmp_path / "other-data", first_id=100)
    other = lmms_run(tmp_path, "other", other_data, replying(set(range(QUESTIONS))), openai_server, lmms_env, run_cli)

    # each results file records the data its run read: local files by the digest of their content, and the rows
    recorded = json.loads(next(weak.rglob("*_results.json")).read_text())["scifig_environment"]["data"]["scifibench"]
    assert recorded == {
        "origin": "local",
        "local": True,
        "revision": validation_records.data_digest(data),
        "rows": {"CS_Figure2Caption": QUESTIONS},
    }
    # a run made from other data is refused in one line, unless --allow-data-change
    changed = scifig_compare(weak, other, env=lmms_env)
    words = f"A ({weak}) and B ({other}) were made from different data: scifibench "
    words += f"{provenance.short_revision(validation_records.data_digest(data))} -> "
    words += provenance.short_revision(validation_records.data_digest(other_data))
    assert (changed.returncode, changed.stdout) == (1, "")
    assert changed.stderr.splitlines() == [
        f"scifig compare: {words} — compare runs of the same data, or pass --allow-data-change"
    ]

    args = (weak, strong, other, "--allow-data-change", "--json", tmp_path / "comparison.json")
    completed = scifig_compare(*args, env=lmms_env)
    assert f"scifig compare: {words.replace('B (', 'C (')}; compared anyway (--allow-data-change)" in completed.stderr
    print(completed.stdout)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    table = completed.stdout

    a, b = logged(weak), logged(strong)
    assert set(a) == set(b) == set(range(QUESTIONS))
    assert (sum(a.values()), sum(b.values())) == (len(WEAK), len(STRONG))  # the replies were scored as meant
    only_a = sum(1 for qid in a if a[qid] and not b[qid])
    only_b = sum(1 for qid in a if b[qid] and not a[qid])
    p = binomtest(only_b, only_a + only_b, 0.5).pvalue
    difference = 100 * (sum(b.values()) - sum(a.values())) / QUESTIONS

    entries = json.loads((tmp_path / "comparison.json").read_text())["comparisons"]
    (entry,) = [e for e in entries if e["b"] == "B" and e["status"] == "compared"]
    assert entry["task"] == TASK and entry["n"] == QUESTIONS
    assert (entry["only_a"], entry["only_b"]) == (only_a, only_b)
    assert entry["accuracy_a"] == sum(a.values()) / QUESTIONS and entry["accuracy_b"] == sum(b.values()) / QUESTIONS
    assert abs(entry["p_value"] - p) < 1e-9
    low, high = (100 * value for value in entry["ci"])
    assert low < difference < high and entry["significant"] == (p < 0.05)

    row = [line for line in table.splitlines() if line.startswith(TASK)][0].split()
    accuracies = [f"{100 * len(WEAK) / QUESTIONS:.1f}", f"{100 * len(STRONG) / QUESTIONS:.1f}"]
    assert row[:4] == [TASK, str(QUESTIONS), *accuracies]
    assert row[4:] == [f"{difference:+.1f}", f"({low:+.1f},", f"{high:+.1f})", str(only_a), str(only_b), f"{p:.3f}"]
    verdict = f"B is better than A on {TASK} by {difference:.1f} points (95% CI {low:.1f} to {high:.1f}; McNemar"
    assert verdict in " ".join(table.split())
    assert f"{TASK}: refused: different questions (40 each, but 40 of A's are not C's)" in table
    assert max(len(line) for line in table.splitlines()) <= 100

    # a VLMEvalKit run of the same questions with the strong replies lines up with the weak lmms-eval run by ID:
    # the same row as the two lmms-eval runs
    server = openai_server(replying(STRONG))
    env = {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(data)}
    (tmp_path / "vlm").mkdir()
    vlm, out = run_vlmeval(tmp_path / "vlm", server.base_url, env, {TASK: "SciFigSciFIBench"})
    assert vlm.returncode == 0, (vlm.stdout + vlm.stderr)[-4000:]
    mixed = scifig_compare(weak, out.parent, env=lmms_env)
    print(mixed.stdout)
    assert mixed.returncode == 0, mixed.stdout + mixed.stderr
    assert f"A: fake-vlm ({weak})" in mixed.stdout and f"B: {MODEL} (VLMEvalKit)" in mixed.stdout
    assert [line for line in mixed.stdout.splitlines() if line.startswith(TASK)][0].split() == row

    refused = scifig_compare(weak, other, "--allow-data-change", env=lmms_env)
    assert refused.returncode == 1
    assert "no task could be compared" in refused.stderr
