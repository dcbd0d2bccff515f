"""GRAB through the real ``lmms-eval`` CLI: plain discovery, local data, and both rules end to end.

The model is lmms-eval's own ``openai`` backend pointed at a local server whose replies are chosen per question: the
session's run of tests/harness/grab_run.py, whose cases give each reply's expected outcome under each rule, written
by hand (the answer as a whole; the authors' rule: strip leading whitespace, truncate to the answer's length, compare
with ``==``), not computed with the package's scorer.
"""

from __future__ import annotations

from scipy.stats import binomtest

from tests.harness.grab_run import CASES, PAPER_CORRECT, GrabRun


def _expected(task: str) -> tuple[int, int]:
    outcomes = [correct for row, _, correct in CASES if row.task == task]
    return sum(outcomes), len(outcomes)


def test_grab_scores_exactly_through_plain_lmms_eval(grab_exact_run: GrabRun) -> None:
    """The session's run (tests/harness/grab_run.py): ``lmms-eval --tasks grab --log_samples`` on :data:`CASES`, no
    ``--include_path`` (discovery through the installed plugin)."""
    run, requests = grab_exact_run.run, grab_exact_run.requests

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    subtasks = {
        "grab_properties": "properties",
        "grab_functions": "function",
        "grab_series": "series",
        "grab_transforms": "transform",
    }
    for name, task in subtasks.items():
        correct, total = _expected(task)
        assert results["results"][name]["accuracy,none"] == correct / total, name
        assert results["results"][name]["breakdown,none"]["overall"]["all"]["n"] == total
    total_correct = sum(correct for _, _, correct in CASES)
    micro = total_correct / len(CASES)
    macro = sum(_expected(task)[0] / _expected(task)[1] for task in subtasks.values()) / 4
    assert abs(micro - macro) > 0.01  # the data distinguishes the two averages
    group = results["groups"]["grab"]
    assert abs(group["accuracy,none"] - micro) < 1e-12
    wilson = binomtest(total_correct, len(CASES)).proportion_ci(confidence_level=0.95, method="wilson")
    assert group["breakdown,none"]["overall"]["all"] == {
        "n": len(CASES),
        "correct": total_correct,
        "accuracy": round(micro, 4),
        "ci95": [round(wilson.low, 4), round(wilson.high, 4)],
    }
    assert group["breakdown,none"]["flags"]["output_status"] == {"ok": 14, "empty": 2, "request_failed": 1}
    assert group["breakdown,none"]["precision"]["1dp"]["n"] == 3
    # the outputs the authors' rule scores otherwise: "15.3" and "4999..." (right only cut), "The answer is -3."
    assert group["breakdown,none"]["flags"]["rules_differ"] == {
        "agree": 14,
        "integer/truncation_only": 2,
        "integer/whole_answer_only": 1,
    }
    assert group["breakdown,none"]["flags"]["reading"] == {"whole": 9, "stated": 1, "unresolved": 4}
    assert {sample["breakdown"]["rule"] for sample in run.samples("grab_properties")} == {"whole_answer"}

    function_samples = run.samples("grab_functions")
    failed = [s for s in function_samples if s["breakdown"]["output_status"] == "request_failed"]
    assert len(failed) == 1 and failed[0]["accuracy"] == 0.0
    assert failed[0]["filtered_resps"].startswith("[LMMS_EVAL_REQUEST_FAILED")
    sent_images = [request.n_images for request in requests]
    assert sent_images and set(sent_images) == {1}

    # The README prompt byte for byte (its triple-quoted template evaluated), text before the image, no system prompt.
    (first,) = [request for request in requests if "[q0] " in request.text]
    (message,) = first.body["messages"]
    assert message["role"] == "user"
    assert (first.body["temperature"], first.body["max_tokens"]) == (0, 1024)  # greedy decoding
    assert [part["type"] for part in message["content"]] == ["text", "image_url"]
    assert message["content"][0]["text"] == (
        "\n[q0] What is the value of the y-intercept of the function? Give your answer as an integer.\n"
        " Only provide the answer, no reasoning steps.\nIf you are unsure, still provide an answer. Answer: \n\n"
    )


def test_rescore_with_the_paper_protocol_gives_the_authors_numbers(
    grab_exact_run: GrabRun, tmp_path, monkeypatch
) -> None:
    """``scifig rescore --protocol paper`` of the session's run (in this process): every task scored as its
    ``grab_*_paper`` twin, the authors' rule, as ``grab`` scored before 2.5."""
    from scifig_tasks.commands.rescore import rescore
    from tests.harness.lmms import offline_env

    for key, value in {**offline_env(tmp_path), "SCIFIG_GRAB_DATA": str(grab_exact_run.data)}.items():
        monkeypatch.setenv(key, value)
    rescore([grab_exact_run.run.output_path], tmp_path / "paper", "paper")
    (results_file,) = (tmp_path / "paper").rglob("*_results.json")
    import json

    results = json.loads(results_file.read_text())
    assert results["groups"]["grab"]["accuracy,none"] == sum(PAPER_CORRECT) / len(CASES)
    breakdown = results["groups"]["grab"]["breakdown,none"]
    assert breakdown["flags"]["rules_differ"]["integer/truncation_only"] == 2
    assert "reading" not in breakdown["flags"]  # the whole-answer reading is not the verdict's rule here
