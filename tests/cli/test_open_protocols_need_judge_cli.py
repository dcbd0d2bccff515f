"""Plot Twist's open-model protocols (``open``, ``open_pali``: App. B.3, every output reformatted by the judge) cannot
be scored without an LLM judge, and say so as the ``_paper`` tasks do: their scoring hook declares the judge required
for those options, so ``scifig tasks`` says it, and ``scifig eval``, plain ``lmms-eval`` and ``scifig vlmeval`` refuse
``plot_twist_open`` in one line before the model is asked anything.

No judge is configured (:func:`tests.harness.lmms.offline_env` sets none). One test, four command lines: each
refusal comes before the model runs, so each costs a process start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.plot_twist.build import build_plot_twist
from tests.cli.test_data_refusals_cli import OPENAI
from tests.harness.lmms import offline_env, run, scifig
from tests.harness.openai_server import Reply
from tests.harness.vlmeval import run_vlmeval

REFUSAL = (
    "cannot be scored without an LLM judge, and none is configured — set SCIFIG_JUDGE_BASE_URL and "
    "SCIFIG_JUDGE_MODEL (or SCIFIG_JUDGE=<preset>), or run plot_twist (scored without requiring one)"
)


def lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.cli
def test_plot_twist_open_is_refused_before_the_model_runs_everywhere(tmp_path: Path, openai_server) -> None:
    model = openai_server(lambda request: Reply(text="I see 3 bars"))
    data = build_plot_twist(tmp_path / "data", plots_per_type=1, variant_plots=0, workers=1, progress=False).out
    env = {**offline_env(tmp_path), "SCIFIG_PLOT_TWIST_DATA": str(data)}
    env |= {"OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk-test"}

    told = scifig(["tasks", "plot_twist_open"], env, tmp_path)
    assert told.returncode == 0, told.stderr
    assert "  LLM judge: required: the run is refused before the model runs when none is configured" in lines(
        told.stdout
    )

    evaluated = run("scifig", ["eval", *OPENAI, "--tasks", "plot_twist_open"], env, tmp_path / "eval")
    assert evaluated.returncode == 1, evaluated.output[-4000:]
    assert lines(evaluated.output) == [f"scifig eval: plot_twist_open {REFUSAL}"]

    plain = run("lmms-eval", [*OPENAI, "--tasks", "plot_twist_open"], env, tmp_path / "plain")
    assert plain.returncode == 1, plain.output[-4000:]
    leaves = "plot_twist_open_scatter, plot_twist_open_bar, plot_twist_open_pie"
    assert lines(plain.output)[-1] == f"scifig: {leaves} {REFUSAL}", plain.output[-4000:]
    assert not list((tmp_path / "plain").rglob("*_results.json"))

    vlmeval, _ = run_vlmeval(tmp_path, model.base_url, env, {"plot_twist_open": "SciFigPlotTwist"})
    assert vlmeval.returncode == 1, vlmeval.stderr[-4000:]
    assert lines(vlmeval.stdout + vlmeval.stderr) == [f"scifig vlmeval: plot_twist_open {REFUSAL}"]

    assert model.count == 0
