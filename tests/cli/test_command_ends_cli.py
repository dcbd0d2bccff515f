"""How long commands end: ``scifig curate`` names its data with an absolute path (the ``use SCIFIG_<BENCH>_DATA=...``
line works pasted in any folder), and ``scifig vlmeval`` ends as ``scifig eval`` does (where its scores files are,
then the ``scifig report`` command), without the ERROR line VLMEvalKit's import logs when it finds no ``.env`` file
beside its package, saying once that a ``.env`` in the folder it runs from is not read.

One module-scoped curate run (a relative ``--out``) feeds both tests: the vlmeval run reads the data through the
line curate printed, from another folder.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env, scifig

DATA_LINE = "use SCIFIG_PLOT_TWIST_DATA="


@dataclass
class Curated:
    folder: Path  # where scifig curate ran
    stdout: str


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Curated:
    """``scifig curate plot-twist --out pt`` (relative) in a folder of its own: the base charts, one of each type."""
    folder = tmp_path_factory.mktemp("curate")
    args = ["curate", "plot-twist", "--out", "pt", "--plots-per-type", "1", "--variant-plots", "0", "--workers", "1"]
    done = scifig(args, offline_env(folder), folder)
    assert done.returncode == 0, done.stderr[-4000:]
    return Curated(folder, done.stdout)


def pasted_data(curated: Curated) -> str:
    """The value of the data line curate ended with."""
    (line,) = [line for line in curated.stdout.splitlines() if DATA_LINE in line]
    return line.split(DATA_LINE, 1)[1]


@pytest.mark.slow
@pytest.mark.cli
def test_curate_names_its_data_with_an_absolute_path(curated: Curated) -> None:
    assert pasted_data(curated) == str(curated.folder / "pt")
    assert (curated.folder / "pt" / "test.parquet").is_file()


@pytest.mark.slow
@pytest.mark.cli
def test_vlmeval_ends_with_its_scores_and_the_report_command(curated: Curated, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-a-dot-env\n")  # a file a user may rely on
    env = {**offline_env(tmp_path), "SCIFIG_PLOT_TWIST_DATA": pasted_data(curated), "LMUData": str(tmp_path / "LMU")}
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "vlmeval", "--data", "plot_twist"]
    command += ["--model", "scifig_chance", "--work-dir", "out"]

    done = warm_start.run(command, env, tmp_path, CLI_TIMEOUT_S)

    assert done.returncode == 0, done.stderr[-4000:]
    output = done.stdout + done.stderr
    assert "Did not detect the .env file" not in output and "ERROR" not in output, output[-4000:]
    spec = importlib.util.find_spec("vlmeval")
    assert spec is not None and spec.origin is not None
    read = Path(spec.origin).parent.parent / ".env"  # the one file VLMEvalKit reads
    said = [line for line in output.splitlines() if ".env" in line]
    assert said == (
        []
        if read.is_file()
        else [
            f"scifig vlmeval: the .env file in this folder is not read (VLMEvalKit reads API keys from {read} only) — "
            "set its variables in the environment, or copy it there"
        ]
    )
    scores = Path("out") / "scifig_chance" / "scifig_chance_plot_twist_scifig_scores.json"
    assert (tmp_path / scores).is_file()
    assert done.stderr.splitlines()[-2:] == [
        f"scifig vlmeval: results in {scores}",
        f"next: scifig report {scores} --out {Path('out') / 'report'}",
    ]
