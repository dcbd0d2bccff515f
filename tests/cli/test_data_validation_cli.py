"""Bad data stops a run through the real command lines, naming the file, the row and the column.

``lmms-eval`` (plain, the tasks found through the installed plugin) prints the error and writes no results (it exits
0 on a failed task, so the test reads its output and its output folder); ``scifig eval`` exits non-zero. Every data
file is built here; each expected message is written out by hand from the rule it breaks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import datasets
import pytest

from tests.harness.bad_images import broken_stream
from tests.harness.grab_data import Row
from tests.harness.grab_data import build as build_grab
from tests.harness.mmsci_data import Mcq, mcq_row
from tests.harness.openai_server import by_question
from tests.harness.scifibench_data import FEATURES as SCIFIBENCH_FEATURES
from tests.harness.scifibench_data import Question
from tests.harness.scifibench_data import build as build_scifibench

GRAB_ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")]


def _scifibench(split: str, kind: str, change: Callable[[list[dict]], list[dict]], root: Path) -> tuple[Path, Path]:
    rows = change(build_scifibench([Question(kind, "A"), Question(kind, "C")]).to_list())
    path = root / "scifibench" / f"{split}.parquet"
    path.parent.mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=SCIFIBENCH_FEATURES).to_parquet(str(path))
    return path.parent, path


def scifibench_answer_beyond_options(root: Path) -> tuple[dict[str, str], Path]:
    folder, path = _scifibench("CS_Figure2Caption", "f2c", lambda rows: [rows[0], {**rows[1], "Answer": "F"}], root)
    return {"SCIFIG_SCIFIBENCH_DATA": str(folder)}, path


def scifibench_images_for_options(root: Path) -> tuple[dict[str, str], Path]:
    folder, path = _scifibench(
        "CS_Caption2Figure", "c2f", lambda rows: [{**rows[0], "Images": rows[0]["Images"][:4]}, rows[1]], root
    )
    return {"SCIFIG_SCIFIBENCH_DATA": str(folder)}, path


def mmsci_duplicate_question(root: Path) -> tuple[dict[str, str], Path]:
    from scifig_tasks.benchmarks.mmsci.source import mmsci_mcq_features

    rows = [mcq_row(0, Mcq("fig2cap", "A")), mcq_row(1, Mcq("subfig2cap", "B")), mcq_row(2, Mcq("fig2cap", "C"))]
    rows.append({**rows[1], "answer": "D", "image": rows[0]["image"]})  # same figure, setting and sub-figure
    path = root / "mmsci" / "mcq" / "test.parquet"
    path.parent.mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=mmsci_mcq_features()).to_parquet(str(path))
    return {"SCIFIG_MMSCI_DATA": str(root / "mmsci")}, path


def _grab(change: Callable[[datasets.Dataset], datasets.Dataset], root: Path) -> tuple[dict[str, str], Path]:
    path = root / "grab" / "GRAB.parquet"
    path.parent.mkdir(parents=True)
    change(build_grab(GRAB_ROWS)).to_parquet(str(path))
    return {"SCIFIG_GRAB_DATA": str(path)}, path


def _break_image(row: dict, index: int) -> dict:
    if index == 2:
        row["decoded_image"] = {"bytes": broken_stream(row["decoded_image"]["bytes"]), "path": None}
    return row


def grab_broken_png(root: Path) -> tuple[dict[str, str], Path]:
    return _grab(
        lambda ds: ds.cast_column("decoded_image", datasets.Image(decode=False)).map(_break_image, with_indices=True),
        root,
    )


def grab_duplicate_pid(root: Path) -> tuple[dict[str, str], Path]:
    return _grab(lambda ds: ds.map(lambda row, i: {"pid": 0 if i == 3 else row["pid"]}, with_indices=True), root)


LMMS_CASES = {
    # builder, task, the error after "<file>, "
    "SciFIBench answer F with 5 options": (
        scifibench_answer_beyond_options,
        "scifibench_cs_figure2caption",
        "row 1 (0-based), column 'Answer': 'F' is not one of the row's 5 options (A to E)",
    ),
    "SciFIBench Caption→Figure row with 4 images": (
        scifibench_images_for_options,
        "scifibench_cs_caption2figure",
        "row 0 (0-based), column 'Images': 4 images for 5 options (a Caption→Figure question has one image per option)",
    ),
    "MMSci duplicate question key": (
        mmsci_duplicate_question,
        "mmsci_fig2cap",
        "row 3 (0-based), column 'uid, figure_index, setting, subfigure': "
        "duplicate key ('ncomms1001', 1, 'subfig2cap', 'b'), already at row 1",
    ),
    "GRAB duplicate pid": (
        grab_duplicate_pid,
        "grab",
        "row 3 (0-based), column 'pid': duplicate key 0, already at row 0",
    ),
}


def test_lmms_eval_stops_on_bad_data_before_any_result(tmp_path: Path, lmms_env, run_cli) -> None:
    """The plain ``lmms-eval`` command line on GRAB data with a duplicate question key; the other benchmarks' data
    reach the same check through the same loading step, shown in process below."""
    builder, task, problem = LMMS_CASES["GRAB duplicate pid"]
    data_env, path = builder(tmp_path)

    run = run_cli("lmms-eval", ["--model", "scifig_chance", "--tasks", task], {**lmms_env, **data_env}, tmp_path / "o")

    assert f"{path}, {problem}" in run.output, run.output[-3000:]
    assert not list((tmp_path / "o").rglob("*_results.json"))


@pytest.mark.parametrize("case", [case for case in LMMS_CASES if not case.startswith("GRAB")])
@pytest.mark.slow
def test_lmms_eval_task_loading_stops_on_bad_data(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lmms-eval's own task loading (``get_task_dict`` with a ``TaskManager``, what its command line calls before the
    model starts), in this process: each benchmark's bad data stops it with the file, row and column."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    from scifig_tasks.core.errors import DataError
    from scifig_tasks.lmms_eval.plugin import install

    builder, task, problem = LMMS_CASES[case]
    data_env, path = builder(tmp_path)
    for name, value in {**data_env, "HF_DATASETS_CACHE": str(tmp_path / "hf")}.items():
        monkeypatch.setenv(name, value)
    install()

    with pytest.raises(DataError) as raised:
        get_task_dict([task], TaskManager("WARNING"))

    assert str(raised.value) == f"{path}, {problem}"


BROKEN_PNG = (
    "row 2 (0-based), column 'decoded_image': image bytes are not a readable image "
    "(OSError: broken data stream when reading image file)"
)
OPENAI = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]


@pytest.mark.parametrize("command", ["lmms-eval", "scifig"])
def test_a_png_whose_pixel_data_is_broken_stops_the_run_when_its_request_is_built(
    command: str, tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """Its structure verifies, so the data load; its pixels are decoded (strictly) when the request is built, and
    the run stops there with the data check's file, row and column, sending no request with that image."""
    data_env, path = grab_broken_png(tmp_path)
    server = openai_server(by_question({}, default="3"))
    env = {**lmms_env, **data_env, "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
    args = [*OPENAI, "--tasks", "grab"]

    run = run_cli(command, args if command == "lmms-eval" else ["eval", *args], env, tmp_path / "o")

    assert f"{path}, {BROKEN_PNG}" in run.output, run.output[-3000:]
    assert not list((tmp_path / "o").rglob("*_results.json"))
    assert len(server.requests) < len(GRAB_ROWS)  # the broken row's request was never sent
    if command == "scifig":
        assert run.returncode != 0


def test_scifig_eval_exits_non_zero_on_an_empty_split(tmp_path: Path, lmms_env, run_cli) -> None:
    env, path = _grab(lambda ds: ds.select([]), tmp_path)

    run = run_cli(
        "scifig", ["eval", "--model", "scifig_chance", "--tasks", "grab"], {**lmms_env, **env}, tmp_path / "o"
    )

    assert run.returncode != 0
    assert f"{path}: has no rows (an empty split: nothing to evaluate)" in run.output, run.output[-3000:]
    assert "cannot be read as parquet" not in run.output and "scifig eval: FAILED" in run.output


def _last_line(output: str) -> str:
    return [line for line in output.splitlines() if line.strip()][-1]


def test_offline_lmms_eval_ends_with_the_benchmark_the_source_and_the_way_out(
    tmp_path: Path, lmms_env, run_cli
) -> None:
    """No local data and no Hub (offline mode): the last line names the benchmark, the dataset tried and the remedy."""
    run = run_cli("lmms-eval", ["--model", "scifig_chance", "--tasks", "grab"], lmms_env, tmp_path / "o")

    last = _last_line(run.output)
    pinned = "Hugging Face Hub dataset jonathan-roberts1/GRAB at revision 6ad38024227403d2852e9077ca0e0d662446c5c4: "
    assert pinned + "GRAB data could not be loaded (LocalEntryNotFoundError: " in last
    assert last.rstrip().endswith(
        "download it online once (or name another revision with SCIFIG_GRAB_REVISION), "
        "or set SCIFIG_GRAB_DATA=DIR to local data (`scifig curate grab --out DIR` builds it), "
        "or run `scifig demo` to try scifig offline"
    ), last
    assert not list((tmp_path / "o").rglob("*_results.json"))


def test_offline_scifig_eval_exits_non_zero_with_the_way_out(tmp_path: Path, lmms_env, run_cli) -> None:
    run = run_cli("scifig", ["eval", "--model", "scifig_chance", "--tasks", "scifibench"], lmms_env, tmp_path / "o")

    assert run.returncode == 1
    last = _last_line(run.output)
    assert last.startswith(
        "scifig eval: FAILED: DataError: Hugging Face Hub dataset jonathan-roberts1/SciFIBench at revision main: "
        "SciFIBench data could not be loaded (LocalEntryNotFoundError: "
    )
    assert last.endswith(
        "download it online once (or name another revision with SCIFIG_SCIFIBENCH_REVISION), or set "
        "SCIFIG_SCIFIBENCH_DATA=DIR to local data (`scifig curate scifibench --pairs PAIRS --out DIR` builds it), "
        "or run `scifig demo` to try scifig offline"
    ), last
