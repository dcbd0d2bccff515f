"""``scifig rescore`` on runs of the real ``lmms-eval`` CLI (``--log_samples``, ``--model openai`` against the local
server): scoring the saved outputs again under the run's own setting gives the run's numbers exactly, for every
benchmark; another setting (the judge switched on, SciFIBench's paper protocol) changes exactly the samples worked out
by hand from the reply corpus; runs that cannot be scored again are refused with the file named.

The model server is stopped before re-scoring: any request to it would fail the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.core.provenance import scifig_version
from scifig_tasks.report.runs import load_runs
from tests.harness.grab_run import GrabRun
from tests.harness.lmms import CLI_TIMEOUT_S, CliRun, offline_env
from tests.harness.openai_server import FakeOpenAIServer, Reply
from tests.harness.scifibench_run import ScifibenchRun
from tests.lmms_eval.test_plot_twist_lmms_cli import generated  # noqa: F401 -- the module's Plot Twist data fixture

SCORE_KEYS = ("results", "groups")


def rescore(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "rescore", *args]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL, cwd=cwd
    )


def results_of(folder: Path) -> dict[str, Any]:
    (path,) = sorted(folder.rglob("*_results.json"))
    return json.loads(path.read_text())


def samples_of(folder: Path, task: str) -> list[dict[str, Any]]:
    (path,) = sorted(folder.rglob(f"*_samples_{task}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def diff_of(folder: Path) -> dict[str, Any]:
    (path,) = sorted(folder.rglob("rescore_diff.json"))
    return json.loads(path.read_text())


def without_cache_hits(tree: Any) -> Any:
    """The entries without the judge client's ``cache_hits`` counter (how many replies came from the cache: a fact
    about the process that scored, not a score; re-scoring finds every reply cached)."""
    if isinstance(tree, dict):
        return {key: without_cache_hits(value) for key, value in tree.items() if key != "cache_hits"}
    if isinstance(tree, list):
        return [without_cache_hits(value) for value in tree]
    return tree


def assert_reproduced(run: CliRun, out: Path) -> None:
    """Same task and group entries as the run, the same per-sample metrics, no changed sample."""
    old, new = run.results(), results_of(out)
    for key in SCORE_KEYS:
        assert without_cache_hits(new.get(key)) == without_cache_hits(old.get(key)), key
    tasks = [name for name in old["results"] if not old["group_subtasks"].get(name)]
    assert tasks
    for task in tasks:
        assert without_cache_hits(samples_of(out, task)) == without_cache_hits(run.samples(task)), task
    diff = diff_of(out)
    assert {name: entry["changed_samples"] for name, entry in diff["tasks"].items()} == dict.fromkeys(diff["tasks"], 0)
    assert all(pair["old"] == pair["new"] for entry in diff["tasks"].values() for pair in entry["metrics"].values())
    (loaded,) = load_runs([out])  # scifig report reads the re-scored run
    assert loaded.model == "fake-vlm" and set(loaded.entries) == set(old["results"]) | set(old.get("groups", {}))


# ---- SciFIBench: judge off -> the same, judge on, paper protocol -----------------------------------------------------


def scifibench_run(shared: ScifibenchRun, lmms_env: dict[str, str]) -> tuple[CliRun, dict[str, str]]:
    """The session's judge-off SciFIBench run, and this test's own environment (its own judge cache) for its data."""
    return shared.run, {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(shared.data)}


def test_scifibench_same_setting_reproduces_and_the_judge_changes_exactly_the_refused_outputs(
    tmp_path: Path, openai_server, lmms_env, scifibench_judge_off: ScifibenchRun
) -> None:
    from tests.harness.scifibench_run import (
        CASES,
        TASKS,
        expected_correct,
        judge_letter,
        judge_policy,
        never_judged,
    )

    run, env = scifibench_run(scifibench_judge_off, lmms_env)

    same = rescore([str(run.output_path), "--out", str(tmp_path / "same")], env, tmp_path)
    assert same.returncode == 0, same.stderr[-4000:]
    assert_reproduced(run, tmp_path / "same")
    assert "| scifibench | accuracy,none |" in same.stdout

    judge = openai_server(judge_policy)
    judged_env = {**env, "SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "fake-judge"}
    on = rescore([str(run.output_path), "--out", str(tmp_path / "on")], judged_env, tmp_path)
    assert on.returncode == 0, on.stderr[-4000:]
    diff = diff_of(tmp_path / "on")["tasks"]
    new = results_of(tmp_path / "on")
    for split, task in TASKS.items():
        cases = [case for case in CASES if case.split == split]
        # the judge is asked about exactly the outputs the rules refuse (not the empty / failed ones)
        asked = {doc_id for doc_id, case in enumerate(cases) if not case.style.states_answer and not never_judged(case)}
        assert {entry["doc_id"] for entry in diff[task]["changed"]} == asked, task
        for entry in diff[task]["changed"]:
            case = cases[entry["doc_id"]]
            assert entry["old"]["predicted"] is None and entry["old"]["resolution"] == "unresolved"
            letter = judge_letter(case)
            assert entry["new"]["predicted"] == letter
            assert entry["new"]["resolution"] == ("judge" if letter else "unresolved")
            assert entry["new"]["correct"] == int(letter == case.answer)
        correct = sum(expected_correct(case, judge_on=True) for case in cases)
        assert new["results"][task]["accuracy,none"] == pytest.approx(correct / len(cases))
        assert diff[task]["metrics"]["accuracy,none"]["old"] == run.results()["results"][task]["accuracy,none"]
    total = sum(expected_correct(case, judge_on=True) for case in CASES)
    assert new["groups"]["scifibench"]["accuracy,none"] == pytest.approx(total / len(CASES))
    assert diff["scifibench"]["changed_samples"] == sum(
        not case.style.states_answer and not never_judged(case) for case in CASES
    )


def test_scifibench_paper_protocol_sends_every_readable_output_to_the_judge(
    tmp_path: Path, openai_server, lmms_env, scifibench_judge_off: ScifibenchRun
) -> None:
    from tests.harness.scifibench_run import (
        CASES,
        JUDGE_OUTPUT,
        TASKS,
        expected_correct,
        judge_letter,
        never_judged,
    )

    run, env = scifibench_run(scifibench_judge_off, lmms_env)

    def reader(request) -> Reply:  # reads what a reply states; for the ambiguous ones, judge_letter
        output = JUDGE_OUTPUT.search(request.text).group(1).strip()
        # the logged output is the reply after lmms-eval stripped reasoning tags: match by containment
        case = next(c for c in CASES if isinstance(c.reply, str) and output and output in c.reply)
        return Reply(text=(case.stated if case.style.states_answer else judge_letter(case)) or "None")

    judge = openai_server(reader)
    judged_env = {**env, "SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "fake-judge"}
    paper = rescore(
        [str(run.output_path), "--out", str(tmp_path / "paper"), "--protocol", "paper"], judged_env, tmp_path
    )
    assert paper.returncode == 0, paper.stderr[-4000:]
    diff = diff_of(tmp_path / "paper")["tasks"]
    new = results_of(tmp_path / "paper")
    for split, task in TASKS.items():
        cases = [case for case in CASES if case.split == split]
        changed = {entry["doc_id"]: entry for entry in diff[task]["changed"]}
        assert set(changed) == set(range(len(cases)))  # every record now says protocol "paper"
        for doc_id, entry in changed.items():
            case = cases[doc_id]
            assert entry["new"]["protocol"] == "paper"
            readable = not never_judged(case) or case.style.states_answer
            assert entry["new"]["resolution"] == ("judge" if readable and entry["new"]["predicted"] else "unresolved")
            assert ("correct" in entry["fields"]) == (
                expected_correct(case, judge_on=True) != expected_correct(case, judge_on=False)
            )
        correct = sum(expected_correct(case, judge_on=True) for case in cases)
        assert new["results"][task]["accuracy,none"] == pytest.approx(correct / len(cases))
        # the table counts changed verdicts (correct), not records: every record changed its protocol
        flipped = sum(expected_correct(case, judge_on=True) != expected_correct(case, judge_on=False) for case in cases)
        assert diff[task]["changed_verdicts"] == flipped and diff[task]["changed_samples"] == len(cases)
        assert diff[task]["other_changes"]["protocol"] == {"samples": len(cases), "old": "default", "new": "paper"}
        (row,) = [line for line in paper.stdout.splitlines() if line.startswith(f"| {task} | accuracy,none |")]
        assert row.endswith(f"| {len(cases)} | {flipped} of {len(cases)} |"), row
    (line,) = [line for line in paper.stdout.splitlines() if "besides their verdicts" in line]
    assert f"in {len(CASES)} of {len(CASES)} samples: protocol default -> paper ({len(CASES)})" in line, line
    # identical outputs are asked once (the judge cache), so every distinct readable output is one request
    readable = {
        text
        for text in (sample["filtered_resps"] for sample in _logged_outputs(run))
        if text.strip() and not text.startswith("[LMMS_EVAL_REQUEST_FAILED")  # failed requests are never sent
    }
    assert len({request.text for request in judge.requests}) == len(readable)


def _logged_outputs(run: CliRun) -> list[dict[str, Any]]:
    from tests.harness.scifibench_run import TASKS

    return [sample for task in TASKS.values() for sample in run.samples(task) if sample["filtered_resps"] != "None"]


# ---- GRAB, Plot Twist, MMSci: the same setting reproduces the run --------------------------------------------------


def test_grab_same_setting_reproduces(tmp_path: Path, lmms_env, grab_exact_run: GrabRun) -> None:
    """The session's GRAB run (tests/harness/grab_run.py, its model server stopped), copied: this test edits its
    results file."""
    import shutil

    from tests.harness.grab_run import CASES

    shared = grab_exact_run.run
    assert shared.returncode == 0, shared.output[-4000:]
    run = CliRun(shared.returncode, shared.output, tmp_path / "out")
    shutil.copytree(shared.output_path, run.output_path)
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(grab_exact_run.data)}

    done = rescore([str(run.output_path), "--out", str(tmp_path / "again")], env, tmp_path)

    assert done.returncode == 0, done.stderr[-4000:]
    assert_reproduced(run, tmp_path / "again")
    assert results_of(tmp_path / "again")["groups"]["grab"]["accuracy,none"] == pytest.approx(
        sum(correct for _, _, correct in CASES) / len(CASES)
    )
    # same environment: no warning; the re-scored file carries this environment and keeps the run's
    assert "another environment" not in done.stderr
    original = run.results()["scifig_environment"]
    again = results_of(tmp_path / "again")
    assert again["scifig_rescore"]["source_environment"] == original
    assert again["scifig_environment"]["libraries"] == original["libraries"]

    # a run recorded under other versions: the re-score says which differ
    (results_file,) = run.output_path.rglob("*_results.json")
    recorded = json.loads(results_file.read_text())
    numpy = recorded["scifig_environment"]["libraries"]["numpy"]
    recorded["scifig_environment"]["libraries"]["numpy"] = "1.26.0"
    recorded["scifig_environment"]["scifig"]["version"] = "0.1.9"
    results_file.write_text(json.dumps(recorded))
    done = rescore([str(run.output_path), "--out", str(tmp_path / "other")], env, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    (warning,) = [line for line in done.stderr.splitlines() if "another environment" in line]
    assert warning == (
        f"scifig rescore: WARNING: {results_file} was scored in another environment: scifig 0.1.9 -> "
        f"{scifig_version()}; numpy 1.26.0 -> {numpy}"
    )


def test_plot_twist_same_setting_reproduces(
    tmp_path: Path,
    openai_server,
    lmms_env,
    run_cli,
    generated,  # noqa: F811
) -> None:
    from tests.lmms_eval.test_plot_twist_lmms_cli import env_for, plan_cases, servers

    out, rows = generated
    cases = [case for case in plan_cases(rows) if case.row["variant"] == "base"]
    model, judge = servers(openai_server, cases)
    env = env_for(lmms_env, out, model, judge)
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    run = run_cli("lmms-eval", [*args, "--tasks", "plot_twist", "--log_samples"], env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]
    model.stop()

    done = rescore([str(run.output_path), "--out", str(tmp_path / "again")], env, tmp_path)

    # the reply the judge answers with an error in the run is not judged again either: exit 1, as scifig eval does
    assert done.returncode == 1, done.stderr[-4000:]
    assert "1 samples could not be judged (judge_failed: plot_twist_scatter 1)" in done.stderr
    assert_reproduced(run, tmp_path / "again")


def test_mmsci_multiple_choice_and_captioning_same_setting_reproduce(tmp_path: Path, mmsci_judged_run) -> None:
    from tests.harness.mmsci_run import judge_policy

    run, _, _ = mmsci_judged_run
    assert run.returncode == 0, run.output[-4000:]
    data = run.output_path.parent
    judge = FakeOpenAIServer(judge_policy).start()  # a judge of its own: the run's counts its requests
    env = {
        **offline_env(tmp_path),
        "SCIFIG_MMSCI_DATA": str(data / "mmsci"),
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_JUDGE_API_KEY": "sk-judge-secret-9191",
        "SCIFIG_MMSCI_BERTSCORE_MODEL": str(data / "tiny-bert"),
    }
    try:
        done = rescore([str(run.output_path), "--out", str(tmp_path / "again")], env, tmp_path)
    finally:
        judge.stop()

    assert done.returncode == 0, done.stderr[-4000:]
    assert not judge.errors, judge.errors
    assert_reproduced(run, tmp_path / "again")
    new = results_of(tmp_path / "again")
    assert {"mmsci", "mmsci_dev", "mmsci_caption_image_only", "mmsci_caption_with_abstract"} <= set(new["results"])


# ---- refusals ---------------------------------------------------------------------------------------------------


def test_refusals_name_the_file(tmp_path: Path, lmms_env, scifibench_judge_off: ScifibenchRun) -> None:
    run, env = scifibench_run(scifibench_judge_off, lmms_env)
    (results_path,) = sorted(run.output_path.rglob("*_results.json"))

    # results without sample logs
    bare = tmp_path / "bare" / "fake-vlm"
    bare.mkdir(parents=True)
    (bare / results_path.name).write_text(results_path.read_text())
    done = rescore([str(bare / results_path.name), "--out", str(tmp_path / "x")], env, tmp_path)
    assert done.returncode == 1
    assert f"{bare / results_path.name}: no sample logs for scifibench_cs_caption2figure" in done.stderr
    assert "written without --log_samples" in done.stderr

    # the data changed: another answer for question 3 of CS_Figure2Caption
    import shutil

    from tests.harness.scifibench_data import Question, build, write_splits
    from tests.harness.scifibench_run import CASES, LETTERS, SPLITS

    splits = {}
    for split, (kind, _count, first_id, _) in SPLITS.items():
        cases = [case for case in CASES if case.split == split]
        answers = [case.answer for case in cases]
        if split == "CS_Figure2Caption":
            answers[3] = LETTERS[(LETTERS.index(answers[3]) + 1) % 5]
        splits[split] = build(
            [Question(kind, answer, case.category) for answer, case in zip(answers, cases, strict=True)],
            first_id=first_id,
        )
    changed = write_splits(splits, tmp_path / "changed")
    changed_env = {**offline_env(tmp_path / "fresh"), "SCIFIG_SCIFIBENCH_DATA": str(changed)}
    done = rescore([str(run.output_path), "--out", str(tmp_path / "y")], changed_env, tmp_path)
    assert done.returncode == 1
    samples = sorted(run.output_path.rglob("*_samples_scifibench_cs_figure2caption.jsonl"))[0]
    assert f"{samples}: task scifibench_cs_figure2caption, doc_id 3: the data changed since the run" in done.stderr
    assert "set SCIFIG_SCIFIBENCH_DATA to the data the run used" in done.stderr

    # a task scifig does not provide
    foreign = tmp_path / "foreign" / "fake-vlm"
    foreign.mkdir(parents=True)
    data = json.loads(results_path.read_text())
    data["results"] = {"mme": {"alias": "mme", "mme_score,none": 1.0}}
    data.pop("groups")
    data["group_subtasks"] = {"mme": []}
    (foreign / results_path.name).write_text(json.dumps(data))
    (foreign / results_path.name.replace("_results.json", "_samples_mme.jsonl")).write_text('{"doc_id": 0}\n')
    done = rescore([str(foreign), "--out", str(tmp_path / "z")], env, tmp_path)
    assert done.returncode == 1
    assert f"{foreign / results_path.name}: task 'mme' is not a scifig task" in done.stderr

    # --out pointing at the run itself
    done = rescore([str(run.output_path), "--out", str(run.output_path)], env, tmp_path)
    assert done.returncode == 1 and "would overwrite the run itself" in done.stderr
    shutil.rmtree(tmp_path / "x", ignore_errors=True)


# ---- VLMEvalKit prediction files ------------------------------------------------------------------------------------


def test_vlmeval_predictions_rescore_and_the_judge_changes_exactly_the_refused_outputs(
    tmp_path: Path, openai_server, lmms_env
) -> None:
    """A ``scifig vlmeval`` run of the chatty SciFIBench-style outputs (judge off) scored again: the same setting
    reproduces its scores; a judge answering "A" changes exactly the outputs that state no answer (hand-labelled)."""
    import datasets

    from tests.harness.mcq_corpus import CHATTY, CHATTY_OPTIONS
    from tests.harness.scifibench_data import FEATURES, png, write_splits
    from tests.harness.vlmeval import run_vlmeval

    options = [f"{chr(65 + i)}) {text}" for i, text in enumerate(CHATTY_OPTIONS)]
    rows = [
        {
            "ID": index,
            "Question": "Which caption best matches the image?",
            "Options": options,
            "Answer": label or "E",
            "Category": "cs.CV",
            "Images": [{"bytes": png((12 + 24 * (index % 10), 12 + 24 * (index // 10), 12), (64, 48)), "path": None}],
        }
        for index, (_, label) in enumerate(CHATTY)
    ]
    data = write_splits({"CS_Figure2Caption": datasets.Dataset.from_list(rows, features=FEATURES)}, tmp_path / "sf")

    def replay(request: Any) -> str:
        import base64
        import io

        from PIL import Image

        for message in request.body["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part.get("type") == "image_url":
                    image = Image.open(io.BytesIO(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])))
                    red, green, _ = image.convert("RGB").getpixel((32, 24))
                    return CHATTY[round((red - 12) / 24) + 10 * round((green - 12) / 24)][0]
        raise AssertionError("a request without an image")

    name = "scifibench_cs_figure2caption"
    env = {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(data), "SCIFIG_JUDGE": "off"}
    completed, work = run_vlmeval(tmp_path, openai_server(replay).base_url, env, {name: "SciFigSciFIBench"})
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]

    same = rescore([str(work), "--out", str(tmp_path / "same")], env, tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    (old_scores,) = work.glob(f"*{name}_scifig_scores.json")
    (new_scores,) = (tmp_path / "same").rglob(f"*{name}_scifig_scores.json")
    assert json.loads(new_scores.read_text()) == json.loads(old_scores.read_text())
    assert diff_of(tmp_path / "same")["tasks"][name]["changed"] == []

    judge = openai_server(lambda request: Reply(text="A"))
    judged_env = {
        **env,
        "SCIFIG_JUDGE": "",
        "SCIFIG_JUDGE_BASE_URL": judge.base_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
    }
    judged = rescore([str(work), "--out", str(tmp_path / "judged")], judged_env, tmp_path)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    changed = diff_of(tmp_path / "judged")["tasks"][name]["changed"]
    stated_none = [str(index) for index, (_, label) in enumerate(CHATTY) if label is None]
    assert sorted(entry["index"] for entry in changed) == sorted(stated_none)
