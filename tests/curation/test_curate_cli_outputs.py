"""Every ``scifig curate`` command refuses an output path it cannot write at once, in one line, with exit code 2.

The path lies under a regular file, which nobody (root included) can create a folder in. The commands' inputs need
not exist: the output is checked before any work. Run through the installed ``scifig`` command line.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.harness.lmms import _executable

# command -> its arguments other than --out (inputs that need not exist) and whether --out names a file
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "grab": ([], False),
    "plot-twist": ([], False),
    "scifibench": (["--pairs", "pairs.parquet"], False),
    "scifibench-accept": (["--accepted", "accepted.txt"], False),
    "scifibench-from-scicap": (["--root", "scicap"], True),
    "mmsci": (["--articles", "articles.jsonl"], False),
    "mmsci-from-vlmeval": (["--mcq", "MMSci_DEV_MCQ.tsv"], False),
    "mmsci-from-authors": (["--benchmark", "benchmark"], False),
}


def _curate(command: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_executable("scifig"), "curate", command, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.slow
@pytest.mark.cli
def test_unwritable_out_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    inputs, names_file = COMMANDS[command]
    out = blocker / "out" / ("pairs.parquet" if names_file else "set")

    run = _curate(command, [*inputs, "--out", str(out)], tmp_path)

    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [f"scifig curate {command}: cannot create {out}: {blocker} is not a directory"]
    assert run.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing created


@pytest.mark.slow
@pytest.mark.cli
def test_out_of_the_wrong_kind_is_one_line(tmp_path: Path) -> None:
    existing = tmp_path / "existing.txt"
    existing.write_text("x", encoding="utf-8")

    folder_expected = _curate("grab", ["--out", str(existing)], tmp_path)
    file_expected = _curate("scifibench-from-scicap", ["--root", "scicap", "--out", str(tmp_path)], tmp_path)

    assert (folder_expected.returncode, file_expected.returncode) == (2, 2)
    assert folder_expected.stderr.splitlines() == [f"scifig curate grab: {existing} exists and is not a directory"]
    assert file_expected.stderr.splitlines() == [
        f"scifig curate scifibench-from-scicap: {tmp_path} is a directory, expected a file path"
    ]


@pytest.mark.cli
def test_a_write_failing_mid_build_is_one_line_and_exit_1(tmp_path: Path, monkeypatch, capsys) -> None:
    from curation.plot_twist import build
    from scifig_tasks.commands.main import main

    def full_disk(out: Path, **_: object) -> None:
        raise OSError(28, "No space left on device", str(out / "test.parquet.partial"))

    monkeypatch.setattr(build, "build_plot_twist", full_disk)

    assert main(["curate", "plot-twist", "--out", str(tmp_path / "set")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"scifig curate plot-twist: [Errno 28] No space left on device: '{tmp_path / 'set' / 'test.parquet.partial'}'"
    ]
