"""Small failures of the command line say why and leave nothing behind, through the real ``scifig`` command:

* data holding only some of a benchmark's splits, run under a group that reads the others, names the group that
  reads only what is there (a CS-only SciFIBench build: ``scifibench_cs``);
* ``scifig finetune-data`` that converts nothing exits 1 saying what the input held and what was expected, writing
  nothing; converting the data a benchmark evaluates warns of the contamination;
* a failed command removes the output folders it created and left empty, never a folder that existed before or that
  holds a file;
* ``scifig config`` shows every value whole.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scifig_tasks.commands.main import main
from tests.harness import grab_data, scifibench_data
from tests.harness.lmms import offline_env
from tests.harness.scifibench_data import Question

pytestmark = pytest.mark.cli


def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment of :func:`~tests.harness.lmms.offline_env` for a command run in this process."""
    for name, value in offline_env(tmp_path).items():
        monkeypatch.setenv(name, value)


def cs_only(root: Path) -> Path:
    """A SciFIBench build with only the two CS splits (what ``scifig curate scifibench`` on CS data writes)."""
    splits = {
        split: scifibench_data.build([Question(kind, "A")])
        for split, kind in scifibench_data.SAMPLE_SPLITS.items()
        if split.startswith("CS_")
    }
    return scifibench_data.write_splits(splits, root)


def test_cs_only_data_under_the_whole_group_names_the_cs_group_and_a_failed_export_leaves_no_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    offline(tmp_path, monkeypatch)
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(cs_only(tmp_path / "cs")))
    assert main(["export-tsv", "--data", "scifibench", "--out", str(tmp_path / "tsv")]) == 1
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("scifig export-tsv:")]
    assert (
        "has no General_Figure2Caption.parquet (found: CS_Caption2Figure, CS_Figure2Caption); this data holds " in line
    )
    assert "only the splits of scifibench_cs: run --tasks scifibench_cs (VLMEvalKit: --data scifibench_cs)" in line
    assert sorted(path.name for path in (tmp_path / "tsv").glob("*.tsv")) == [  # written before the failure: kept
        "scifibench_cs_caption2figure.tsv",
        "scifibench_cs_figure2caption.tsv",
    ]
    (tmp_path / "existing").mkdir()
    for out in (tmp_path / "new" / "tsv", tmp_path / "existing"):
        assert main(["export-tsv", "--data", "scifibench_general", "--out", str(out)]) == 1
        assert "has no General_Figure2Caption.parquet" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()  # created by the failed command, empty: removed with its new parent
    assert (tmp_path / "existing").is_dir()  # there before: kept


def test_finetune_data_of_a_gold_folder_or_a_results_folder_exits_1_saying_what_it_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "scifibench-cs" / "gold"  # as `scifig curate scifibench-accept` writes it
    for split, kind in scifibench_data.SAMPLE_SPLITS.items():
        if split.startswith("CS_"):
            rows = scifibench_data.build([Question(kind, "A"), Question(kind, "C")]).to_list()
            negatives = ["nearest", "random"]
            curated = [{**row, "tier": "gold", "negatives": negatives[index]} for index, row in enumerate(rows)]
            gold.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(curated), gold / f"{split}.parquet")
    (tmp_path / "runs" / "model").mkdir(parents=True)
    (tmp_path / "runs" / "model" / "2026-01-01T00-00-00_results.json").write_text("{}")
    (tmp_path / "existing").mkdir()

    status = main(["finetune-data", "--format", "scifibench", "--input", str(gold), "--out", str(tmp_path / "a" / "b")])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1
    assert f"{gold}: no example converted: its 4 rows are of tier gold, the test set, which is never converted" in err
    assert "fine-tuning reads the silver and bronze tiers with nearest negatives: expected curated SciFIBench " in err

    status = main(["finetune-data", "--format", "sft", "--input", str(tmp_path / "runs"), "--out", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1
    assert "it holds an lmms-eval run (2026-01-01T00-00-00_results.json): results and samples are not " in err
    assert "expected an SFT jsonl file (DIR/sft/train.jsonl of `scifig curate mmsci`)" in err

    status = main(["finetune-data", "--format", "grab", "--input", str(gold), "--out", str(tmp_path / "existing")])
    assert status == 1 and "no GRAB.parquet file" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()  # nothing left behind
    assert (tmp_path / "existing").is_dir() and not any((tmp_path / "existing").iterdir())


def test_converting_the_data_a_benchmark_evaluates_warns_of_contamination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluated = Path(grab_data.sample(tmp_path / "grab")["SCIFIG_GRAB_DATA"])
    training = grab_data.sample(tmp_path / "grab-train")["SCIFIG_GRAB_DATA"]
    offline(tmp_path, monkeypatch)
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(evaluated.parent))
    capsys.readouterr()  # what building the data printed
    assert (
        main(["finetune-data", "--format", "grab", "--input", str(evaluated.parent), "--out", str(tmp_path / "a")]) == 0
    )
    out, err = capsys.readouterr()
    assert "8 example(s) written" in out
    assert err.strip() == (
        f"scifig finetune-data: warning: {evaluated} is the GRAB data the grab tasks evaluate (SCIFIG_GRAB_DATA points "
        "at it): training on it contaminates every later evaluation on it; train on a separate set (another seed or "
        "source)"
    )
    assert main(["finetune-data", "--format", "grab", "--input", training, "--out", str(tmp_path / "b")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_config_shows_long_values_whole_and_keys_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "http://127.0.0.1:8000/" + "a-long-path-segment/" * 6 + "v1"
    monkeypatch.setenv("SCIFIG_JUDGE_BASE_URL", url)
    monkeypatch.setenv("SCIFIG_JUDGE_API_KEY", "sk-long-secret-" + "x" * 80)
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "…" not in "\n".join(lines) and "sk-long-secret" not in "\n".join(lines)
    row = next(index for index, line in enumerate(lines) if line.startswith("SCIFIG_JUDGE_BASE_URL "))
    assert lines[row].split() == ["SCIFIG_JUDGE_BASE_URL", "environment"]
    assert lines[row + 1].strip() == url  # whole, on the line below
    assert next(line for line in lines if line.startswith("SCIFIG_JUDGE_API_KEY ")).split()[1] == "<set>"
