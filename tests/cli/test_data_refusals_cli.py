"""Data that is not data is refused through ``scifig eval``, naming the file, the row and the column; a model's
non-finite number is never a right answer.

* A gold answer that reads as a non-finite number (``nan``, ``inf``, ``1e309``: beyond the float range) in GRAB and
  Plot Twist: otherwise a model answering ``inf`` would score correct.
* A string column holding bytes that are not UTF-8.
* An image cell with no bytes and a path: the file is read only when the path resolves (symlinks followed) inside
  the folder of the data; a path elsewhere is refused before any model is called, a path inside works (relative
  paths are relative to that folder) and the model gets the file's bytes.

Every data file is built here; each expected message is written out by hand from the rule it breaks.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import datasets
import pytest

from scifig_tasks.benchmarks.plot_twist.source import plot_twist_features
from tests.harness.grab_data import Row, png, question_text, records, with_invalid_utf8, write_records
from tests.harness.openai_server import Reply, by_question

GRAB_ROWS = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")]
SENTENCE = "The answer is {}. I hope the answer is correct."
OPENAI = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
NON_FINITE = "not a finite number (nan, inf and numbers beyond the float range, such as 1e309, cannot be answers)"


def plot_twist_records(answers: list[str], y_range: float = 200.0) -> list[dict]:
    """Bar questions of one figure each, tagged ``[bN]`` so a reply policy can key on them."""
    kinds = ("y_max_axis", "y_min_axis", "max_bar", "count_bars")
    return [
        {
            "q_id": f"b{index}",
            "figure_id": f"fig{index}",
            "chart_type": "bar",
            "question_type": kinds[index % len(kinds)],
            "question": f"[b{index}] What is the value asked about in this bar chart?",
            "answer": answer,
            "x_range": 3.3,
            "y_range": y_range,
            "image": {"bytes": png(index), "path": None},
            "variant": "base",
        }
        for index, answer in enumerate(answers)
    ]


def write_plot_twist(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=plot_twist_features()).to_parquet(str(path))
    return path


def grab_answer(answer: str) -> Callable[[Path], tuple[dict[str, str], Path, str]]:
    def build(root: Path) -> tuple[dict[str, str], Path, str]:
        rows = records(GRAB_ROWS)
        rows[2]["answer"] = answer
        path = write_records(rows, root / "grab" / "GRAB.parquet")
        return {"SCIFIG_GRAB_DATA": str(path)}, path, "grab"

    return build


def plot_twist_answer(answer: str) -> Callable[[Path], tuple[dict[str, str], Path, str]]:
    def build(root: Path) -> tuple[dict[str, str], Path, str]:
        path = write_plot_twist(plot_twist_records(["120", answer, "3"]), root / "plot_twist" / "test.parquet")
        return {"SCIFIG_PLOT_TWIST_DATA": str(path.parent)}, path, "plot_twist_bar"

    return build


def grab_invalid_utf8(root: Path) -> tuple[dict[str, str], Path, str]:
    path = write_records(records(GRAB_ROWS), root / "grab" / "GRAB.parquet")
    with_invalid_utf8(path, 1, "question", b"[q1] What is the \xff value?")
    return {"SCIFIG_GRAB_DATA": str(path)}, path, "grab"


CASES = {
    # builder, the error after "<file>, "
    "GRAB answer nan": (grab_answer("nan"), f"row 2 (0-based), column 'answer': 'nan' reads as nan, {NON_FINITE}"),
    "GRAB answer inf": (grab_answer("inf"), f"row 2 (0-based), column 'answer': 'inf' reads as inf, {NON_FINITE}"),
    "GRAB answer 1e309": (
        grab_answer("1e309"),
        f"row 2 (0-based), column 'answer': '1e309' reads as inf, {NON_FINITE}",
    ),
    "Plot Twist answer nan": (
        plot_twist_answer("NaN"),
        f"row 1 (0-based), column 'answer': 'NaN' reads as nan, {NON_FINITE}",
    ),
    "Plot Twist answer inf": (
        plot_twist_answer("-Infinity"),
        f"row 1 (0-based), column 'answer': '-Infinity' reads as -inf, {NON_FINITE}",
    ),
    "Plot Twist answer 1e309": (
        plot_twist_answer("1e309"),
        f"row 1 (0-based), column 'answer': '1e309' reads as inf, {NON_FINITE}",
    ),
    "GRAB question not UTF-8": (
        grab_invalid_utf8,
        "row 1 (0-based), column 'question': text is not valid UTF-8 (invalid start byte 0xff at byte 17); "
        "write the column as UTF-8 text",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_scifig_eval_refuses_data_that_is_not_data(case: str, tmp_path: Path, lmms_env, run_cli) -> None:
    builder, problem = CASES[case]
    data_env, path, task = builder(tmp_path)

    run = run_cli("scifig", ["eval", "--model", "scifig_chance", "--tasks", task], {**lmms_env, **data_env}, tmp_path)

    assert run.returncode != 0, run.output[-3000:]
    assert f"{path}, {problem}" in run.output, run.output[-3000:]
    assert "UnicodeDecodeError" not in run.output
    assert not list(tmp_path.rglob("*_results.json"))


def test_an_image_path_outside_the_data_folder_is_refused_before_any_request(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    secret = tmp_path / "private" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(png(99))
    rows = records(GRAB_ROWS)
    rows[2]["decoded_image"] = {"bytes": None, "path": str(secret)}
    path = write_records(rows, tmp_path / "grab" / "GRAB.parquet")
    server = openai_server(by_question({}, default="3"))
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(path), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}

    run = run_cli("scifig", ["eval", *OPENAI, "--tasks", "grab"], env, tmp_path / "out")

    assert run.returncode != 0, run.output[-3000:]
    expected = (
        f"{path}, row 2 (0-based), column 'decoded_image': image path {str(secret)!r} resolves to "
        f"{secret.resolve()}, outside the data's folder {path.parent}: image files are read only from there (store "
        "the image bytes in the cell, or move the file into the folder)"
    )
    assert expected in run.output, run.output[-3000:]
    assert server.requests == []  # nothing was read from the file, nothing uploaded
    assert not list(tmp_path.rglob("*_results.json"))


def test_image_paths_inside_the_data_folder_are_read_and_non_finite_outputs_score_wrong(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """Row 1's image is a relative path (relative to the data's folder, not to the working directory), row 2's an
    absolute path inside the folder; the model gets each file's bytes as they are. GRAB's exact match is on text:
    ``inf`` and ``nan`` outputs are wrong."""
    folder = tmp_path / "grab"
    (folder / "figures").mkdir(parents=True)
    relative, absolute = folder / "figures" / "q1.png", folder / "figures" / "q2.png"
    relative.write_bytes(png(101, (80, 60)))
    absolute.write_bytes(png(102, (70, 50)))
    grab_rows = [*GRAB_ROWS, Row("transform", "7"), Row("transform", "-8")]
    rows = records(grab_rows)
    rows[1]["decoded_image"] = {"bytes": None, "path": "figures/q1.png"}
    rows[2]["decoded_image"] = {"bytes": None, "path": str(absolute)}
    path = write_records(rows, folder / "GRAB.parquet")
    replies = {question_text(0, grab_rows[0]): "3", question_text(1, grab_rows[1]): "4"}
    replies |= {question_text(2, grab_rows[2]): "5", question_text(3, grab_rows[3]): "6"}
    replies |= {question_text(4, grab_rows[4]): "inf", question_text(5, grab_rows[5]): "nan"}
    server = openai_server(by_question(replies, default=Reply(status=404)))
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(path), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}

    run = run_cli("scifig", ["eval", *OPENAI, "--tasks", "grab", "--log_samples"], env, tmp_path)

    assert run.returncode == 0, run.output[-4000:]
    assert run.results()["groups"]["grab"]["accuracy,none"] == 4 / 6
    uploaded = {}
    for request in server.requests:
        (message,) = request.body["messages"]
        url = next(part["image_url"]["url"] for part in message["content"] if part["type"] == "image_url")
        tag = request.text.split("]", 1)[0].split("[", 1)[1]
        uploaded[tag] = base64.b64decode(url.split(",", 1)[1])
    assert uploaded["q1"] == relative.read_bytes() and uploaded["q2"] == absolute.read_bytes()
    assert uploaded["q0"] == png(0)


def test_a_non_finite_model_answer_is_never_right_in_plot_twist(
    tmp_path: Path, openai_server, lmms_env, run_cli
) -> None:
    """Golds near the top of the float range: 1.05 g and g + margin overflow to inf, so ``inf`` (or ``1e309``, which
    reads as inf) would fall inside the relaxed and range-based bounds. A non-finite answer is wrong whatever the
    gold; ``nan`` too. A fifth reply lacks the answer sentence: with no judge configured it is counted wrong, and the
    run ends with a line counting it and exit status 1."""
    rows = plot_twist_records(["1.75e308", "1.75e308", "1.7e308", "3", "80"], y_range=1e308)
    path = write_plot_twist(rows, tmp_path / "plot_twist" / "test.parquet")
    said = ["inf", "1e309", "nan", "3"]
    replies = {row["question"]: SENTENCE.format(answer) for row, answer in zip(rows, said, strict=False)}
    replies[rows[4]["question"]] = "It is 80."
    server = openai_server(by_question(replies, default=Reply(status=404)))
    env = {**lmms_env, "SCIFIG_PLOT_TWIST_DATA": str(path.parent), "OPENAI_API_BASE": server.base_url}
    env["OPENAI_API_KEY"] = "sk-test"

    args = ["eval", *OPENAI, "--tasks", "plot_twist_bar", "--log_samples"]
    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 1, run.output[-4000:]
    assert run.output.splitlines()[-1] == (
        "scifig eval: 1 outputs needed the LLM judge and none is configured (judge_off: plot_twist_bar 1) — those the "
        "rules could not read are counted wrong; set SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL (or "
        "SCIFIG_JUDGE=<preset>) and run again"
    )
    results = run.results()["results"]["plot_twist_bar"]
    assert (results["standard_acc,none"], results["relaxed_acc,none"], results["range_acc,none"]) == (0.2,) * 3
    assert results["breakdown,none"]["flags"]["judge"]["judge_off"] == 1
    by_question_id = {sample["breakdown"]["q_id"]: sample["breakdown"] for sample in run.samples("plot_twist_bar")}
    for index, answer in enumerate(said):
        record = by_question_id[f"b{index}"]
        expected = [int(answer == "3")]
        assert (record["standard"], record["relaxed"], record["range"]) == (expected,) * 3, (answer, record)
