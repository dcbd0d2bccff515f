"""Every ``scifig`` command ends an error in one line on stderr, ``scifig COMMAND: what happened — what to do``, with a
non-zero exit status; the traceback only under ``scifig --debug``. ``scifig presets`` fits 100 columns."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from scifig_tasks.commands.main import main
from scifig_tasks.core import registry
from tests.harness import warm_start
from tests.harness.lmms import offline_env

SCIFIG = Path(sys.executable).parent / "scifig"


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and the single stderr line of ``scifig ARGV`` run in this process."""
    status = main(argv)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return status, err.rstrip("\n")


@pytest.mark.cli
def test_report_of_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexistent"
    status, line = one_line(["report", "--out", str(tmp_path / "r"), str(missing)], capsys)
    assert (status, line) == (1, f"scifig report: no results file or directory at {missing} — check the path")


@pytest.mark.cli
def test_report_of_a_folder_without_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").mkdir()
    status, line = one_line(["report", "--out", str(tmp_path / "r"), str(tmp_path / "runs")], capsys)
    assert status == 1 and line.startswith("scifig report: no *_results.json or *_scifig_scores.json under ")
    assert line.endswith(" — check the path")


@pytest.mark.cli
def test_export_upstream_of_an_unknown_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, line = one_line(["export-upstream", "--bench", "grabb", "--out", str(tmp_path / "up")], capsys)
    assert status == 1
    assert line == (
        f"scifig export-upstream: unknown benchmark 'grabb'; available: {', '.join(registry.benchmarks())}"
        " — see scifig export-upstream --help"
    )


@pytest.mark.cli
def test_export_upstream_for_vlmeval_outside_a_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["export-upstream", "--framework", "vlmeval", "--bench", "grab", "--out", str(tmp_path)]
    status, line = one_line(argv, capsys)
    assert status == 1 and line.startswith(f"scifig export-upstream: {tmp_path}: no vlmeval/dataset/__init__.py"), line


@pytest.mark.cli
def test_unknown_task_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert one_line(["tasks", "scifibenchh"], capsys) == (
        2,
        "scifig tasks: no scifig task 'scifibenchh' — did you mean scifibench?",
    )


@pytest.mark.cli
def test_unknown_preset(capsys: pytest.CaptureFixture[str]) -> None:
    status, line = one_line(["presets", "gpt-5o"], capsys)
    assert status == 1 and line.startswith("scifig presets: model preset gpt-5o: unknown preset; available: ")


@pytest.mark.cli
def test_demo_refuses_zero_questions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["demo", "--per-task", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "scifig demo: error: argument --per-task: must be at least 1, not 0"
    )


def test_a_whole_number_of_at_least_one_is_taken_as_it_is() -> None:
    from scifig_tasks.commands.demo import positive_int

    assert positive_int("3") == 3 and positive_int("1") == 1


@pytest.mark.slow
@pytest.mark.cli
def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    completed = warm_start.run(
        [str(SCIFIG), "--debug", "report", "--out", str(tmp_path / "r"), str(missing)], os.environ, timeout=300
    )
    assert completed.returncode == 1
    assert "Traceback (most recent call last)" in completed.stderr
    assert completed.stderr.rstrip().splitlines()[-1] == f"FileNotFoundError: no results file or directory at {missing}"


@pytest.mark.slow
@pytest.mark.cli
def test_export_tsv_without_data_says_so_in_one_line(tmp_path: Path) -> None:
    """Offline, with no local data: the Hub cannot be reached; the message says which variable to set."""
    completed = warm_start.run(
        [str(SCIFIG), "export-tsv", "--out", str(tmp_path / "tsv")], offline_env(tmp_path), timeout=300
    )
    assert completed.returncode == 1
    lines = [line for line in completed.stderr.splitlines() if line.startswith("scifig ")]
    assert "Traceback" not in completed.stderr and len(lines) == 1, completed.stderr[-3000:]
    assert lines[0].startswith("scifig export-tsv: ") and "Hugging Face Hub dataset jonathan-roberts1/GRAB" in lines[0]
    assert "set SCIFIG_GRAB_DATA=DIR" in lines[0]


@pytest.mark.cli
def test_presets_fit_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert lines[0].startswith("| preset ") and "| VLMEvalKit model " in lines[0]
    assert any(line.startswith("| `gpt-4o` ") for line in lines)


def test_damage_in_a_run_file_is_fixed_by_the_run_not_by_curation() -> None:
    """A damaged results or samples file is no data problem: the advice is to rerun or restore, never to curate."""
    from scifig_tasks.commands.format import error_line
    from scifig_tasks.core.errors import DataError

    log, _ = error_line("report", DataError("/runs/m/2026_samples_grab_series.jsonl", 5, None, "not valid JSON"))
    assert log.endswith("— run the evaluation again, or restore the file from a copy of the run")
    data, _ = error_line("eval", DataError("/data/grab/GRAB.parquet", 5, "answer", "'nan' reads as nan"))
    assert data.endswith("— fix the data it names, or build it again with scifig curate")
