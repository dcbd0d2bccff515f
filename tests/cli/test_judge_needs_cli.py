"""A task that cannot be scored without the LLM judge is refused before the model is asked anything, in one line
naming what to set, by ``scifig eval``, ``scifig vlmeval``, ``scifig rescore --protocol paper`` and plain
``lmms-eval`` (its last words, no ``RetryError``). (Plot Twist outputs counted wrong for want of a judge: see
``test_a_non_finite_model_answer_is_never_right_in_plot_twist``.)

No judge is configured in any of these runs (:func:`tests.harness.lmms.offline_env` sets none).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cli.test_data_refusals_cli import OPENAI
from tests.harness import mmsci_data, scifibench_data, warm_start
from tests.harness.lmms import CLI_TIMEOUT_S
from tests.harness.openai_server import Reply
from tests.harness.scifibench_run import ScifibenchRun
from tests.harness.vlmeval import run_vlmeval

SETTINGS = "set SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL"


def lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_scifig_eval_refuses_paper_tasks_before_the_model_runs(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    model = openai_server(lambda request: Reply(text="B"))
    env = {**lmms_env, **mmsci_data.sample(tmp_path / "mmsci"), **scifibench_data.sample(tmp_path / "scifibench")}
    env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}

    run = run_cli(
        "scifig", ["eval", *OPENAI, "--tasks", "mmsci_paper,scifibench_cs_figure2caption_paper"], env, tmp_path / "out"
    )

    assert run.returncode == 1, run.output[-4000:]
    assert lines(run.output) == [
        "scifig eval: mmsci_paper, scifibench_cs_figure2caption_paper cannot be scored without an LLM judge, and none "
        f"is configured — {SETTINGS} (or SCIFIG_JUDGE=<preset>), or run mmsci, scifibench_cs_figure2caption (scored "
        "without requiring one)"
    ]
    assert model.count == 0


def test_scifig_vlmeval_refuses_before_vlmevalkit_starts(tmp_path: Path, openai_server, lmms_env) -> None:
    model = openai_server(lambda request: Reply(text="B"))
    data = {"grab_llm_extract": "SciFigGRAB", "scifibench_cs_figure2caption_paper": "SciFigSciFIBench"}

    completed, _ = run_vlmeval(tmp_path, model.base_url, lmms_env, data)

    assert completed.returncode == 1, completed.stderr[-4000:]
    assert lines(completed.stdout + completed.stderr) == [
        "scifig vlmeval: grab_llm_extract, scifibench_cs_figure2caption_paper cannot be scored without an LLM judge, "
        f"and none is configured — {SETTINGS} (or SCIFIG_JUDGE=<preset>), or run grab, scifibench_cs_figure2caption "
        "(scored without requiring one)"
    ]
    assert model.count == 0


def test_plain_lmms_eval_ends_with_the_refusal_and_no_retry(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    model = openai_server(lambda request: Reply(text="B"))
    env = {**lmms_env, **scifibench_data.sample(tmp_path / "scifibench")}
    env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}

    run = run_cli("lmms-eval", [*OPENAI, "--tasks", "scifibench_cs_figure2caption_paper"], env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]
    assert lines(run.output)[-1].startswith(
        "scifig: scifibench_cs_figure2caption_paper cannot be scored without an LLM judge, and none is configured — "
        f"{SETTINGS}"
    ), run.output[-4000:]
    assert "RetryError" not in run.output and "Traceback" not in run.output
    assert model.count == 0


def test_rescore_under_the_paper_protocol_refuses_without_a_judge(
    tmp_path: Path, lmms_env, scifibench_judge_off: ScifibenchRun
) -> None:
    env = {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(scifibench_judge_off.data)}
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "rescore", str(scifibench_judge_off.run.output_path)]
    command += ["--protocol", "paper", "--out", str(tmp_path / "paper")]

    done = warm_start.run(command, env, cwd=tmp_path, timeout=CLI_TIMEOUT_S)

    assert done.returncode == 1, done.stderr[-4000:]
    (line,) = lines(done.stdout + done.stderr)
    assert line.startswith("scifig rescore: scifibench_cs_caption2figure (--protocol paper), ")
    assert f"cannot be scored without an LLM judge, and none is configured — {SETTINGS}" in line
    assert not (tmp_path / "paper").exists() or not any((tmp_path / "paper").rglob("*.json"))
