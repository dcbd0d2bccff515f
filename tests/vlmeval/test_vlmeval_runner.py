"""GRAB, SciFIBench (four splits) and Plot Twist through VLMEvalKit's own runner (``scifig vlmeval`` in a subprocess,
VLMEvalKit's ``GPT4V`` OpenAI-compatible API model pointed at the local server) and through the real ``lmms-eval``
CLI, on the same test-built data, the same reply policy and the same LLM judge (a second local server answering
SciFIBench's ambiguous outputs and Plot Twist's reformatting): the numbers agree exactly, and match values derived by
hand from the papers' rules (written below per reply, not computed with the package's scorers).

The replies include the cases where VLMEvalKit's own evaluation would differ: an option label followed by text that
starts with the article "A" (``E) A plot of ...`` is E), outputs naming no option or two options (VLMEvalKit guesses a
random option; here the judge is asked, and when it finds none they are wrong and counted as unresolved), request
failures (VLMEvalKit's ``Failed to obtain answer via API.`` is wrong and flagged ``request_failed``, as lmms-eval's
failure marker is; the run exits 1 with one line counting them, and each scores file counts its own).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import datasets
from PIL import Image

from scifig_tasks.benchmarks.plot_twist.source import plot_twist_features
from tests.harness.grab_data import ONE_DP, Row, write_parquet
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.plot_twist_prompts import API as PLOT_TWIST_API_PROMPT
from tests.harness.scifibench_data import CAPTIONS, FEATURES, png, write_splits
from tests.harness.vlmeval import KEY, run_vlmeval, vlmeval_scores

FAILED = Reply(status=400)
JUDGE_LETTERS = {"B or C": "B"}  # every other output the rules refuse: the judge finds no answer ("None")
JUDGE_SENTENCES = {"About 150, I think.": "The answer is 150. I hope the answer is correct."}
TAG = re.compile(r"\[((?:q|sf|pt)\d+)\]")
LETTERS = "ABCDE"

# ---- GRAB: (row, reply, correct by the GRAB rule: lstrip, truncate to len(answer), ==) -----------------------------
GRAB_CASES: list[tuple[Row, str | Reply, bool]] = [
    (Row("properties", "15"), "15", True),
    (Row("properties", "15"), "15.3", True),
    (Row("properties", "10"), "1", False),
    (Row("properties", "-3"), "The answer is -3.", False),
    (Row("function", "2.5", precision_sentence=ONE_DP), "2.50", True),
    (Row("function", "2.5", precision_sentence=ONE_DP), "2", False),
    (Row("function", "-8"), FAILED, False),
    (Row("series", "6"), " 6", True),
    (Row("series", "0.3", precision_sentence=ONE_DP), "0.3", True),
    (Row("transform", "-1"), "-1", True),
    (Row("transform", "4"), "four", False),
]

# GRAB's LLM-extraction protocol: the judge returns the answer it extracts (JUDGE_EXTRACTS, else the output as it
# is), then the same exact match; a failed request is never sent to the judge
JUDGE_EXTRACTS = {"The answer is -3.": "-3", "four": "4"}
LLM_EXTRACT_OK = [True, True, False, True, True, False, False, True, True, True, True]  # per GRAB_CASES row

# ---- SciFIBench: per split, (answer, reply, letter a reader of the reply finds: None when it names no single option)


@dataclass(frozen=True)
class McqCase:
    answer: str
    reply: str | Reply
    stated: str | None


def article_reply(text: str) -> str:
    return f"Answer: {text}"


SCIFIBENCH_CASES: dict[str, list[McqCase]] = {
    "CS_Figure2Caption": [
        McqCase("B", "B", "B"),
        McqCase("C", "The answer is C.", "C"),
        McqCase("E", f"E) {CAPTIONS[1].capitalize()}", "E"),  # "E) A plot of ...": E, not the article A
        McqCase("B", "B or C", "B"),  # alternatives: the rules refuse, the judge answers B
        McqCase("D", "I cannot tell from this figure.", None),
        McqCase("C", FAILED, None),
    ],
    "CS_Caption2Figure": [
        McqCase("A", "A", "A"),
        McqCase("D", "(B)", "B"),
        McqCase("E", "Image E", "E"),
        McqCase("B", "A) image0\nB) image1", None),  # several labels echoed
    ],
    "General_Figure2Caption": [
        McqCase("D", "**D**", "D"),
        McqCase("A", "Answer: C", "C"),
        McqCase("B", FAILED, None),
    ],
    "General_Caption2Figure": [
        McqCase("C", "C", "C"),
        McqCase("E", "The correct image is E.", "E"),
        McqCase("A", "None of them.", None),
    ],
}
FIRST_ID = {
    "CS_Figure2Caption": 0,
    "CS_Caption2Figure": 100,
    "General_Figure2Caption": 200,
    "General_Caption2Figure": 300,
}


def scifibench_tag(qid: int) -> str:
    return f"[sf{qid}]"


def f2c_options(qid: int) -> list[str]:
    # the tag closes the last option, so option texts keep their first words
    options = [f"{LETTERS[i]}) {CAPTIONS[(qid + i) % 5]}" for i in range(5)]
    options[-1] += f" {scifibench_tag(qid)}"
    return options


def scifibench_data(directory: Path) -> Path:
    splits = {}
    for split, cases in SCIFIBENCH_CASES.items():
        rows = []
        for offset, case in enumerate(cases):
            qid = FIRST_ID[split] + offset
            if "Figure2Caption" in split:
                question, options = "Which caption best matches the image?", f2c_options(qid)
                images = [png((qid % 256, 10, 200))]
            else:
                question = f"Caption: {scifibench_tag(qid)} {CAPTIONS[qid % 5]} Which image best matches the caption?"
                options = [f"{LETTERS[i]}) image{i}" for i in range(5)]
                images = [png((qid % 256, 40 * i + 10, 200)) for i in range(5)]
            rows.append(
                {
                    "ID": qid,
                    "Question": question,
                    "Options": options,
                    "Answer": case.answer,
                    "Category": "cs.CV" if offset % 2 else "physics",
                    "Images": [{"bytes": data, "path": None} for data in images],
                }
            )
        splits[split] = datasets.Dataset.from_list(rows, features=FEATURES)
    return write_splits(splits, directory)


# ---- Plot Twist: (chart, question type, gold, x_range, y_range, figure, reply, (standard, relaxed, range)) ----------
SENTENCE = "The answer is {}. I hope the answer is correct."


@dataclass(frozen=True)
class PtCase:
    chart: str
    question_type: str
    gold: str
    figure: str
    reply: str | Reply
    expected: tuple[bool, bool, bool]
    x_range: float = 10.0
    y_range: float = 200.0
    variant: str = "base"


PLOT_TWIST_CASES: list[PtCase] = [
    # scatter, figure s1: exact + exact -> collective right on all three
    PtCase("scatter", "x_max_point", "8", "s1", SENTENCE.format("8"), (True, True, True)),
    PtCase("scatter", "y_min_point", "40", "s1", SENTENCE.format("40"), (True, True, True)),
    # figure s2: 8.3 vs 8 -> outside 5% (8.4 is the bound: 8.3 is inside) ... 8.3 <= 8.4: relaxed; range 8 +/- 0.5
    PtCase("scatter", "x_min_point", "8", "s2", SENTENCE.format("8.3"), (False, True, True)),
    # 48 vs 40: outside [38, 42]; range 40 +/- 10 (5% of y_range 200) -> range only
    PtCase("scatter", "y_max_point", "40", "s2", SENTENCE.format("48"), (False, False, True)),
    # bar, figure b1: number words ("four" -> 4), count margin 5% of x_range 10 = 0.5
    PtCase("bar", "count_bars", "4", "b1", SENTENCE.format("four"), (True, True, True)),
    PtCase("bar", "max_bar", "150", "b1", "About 150, I think.", (True, True, True)),  # no sentence: judge reformats
    PtCase("bar", "min_bar", "20", "b2", FAILED, (False, False, False)),
    # pie, figure p1: text answer compared case-insensitively; 33% -> "33" vs 35: range margin 5 -> range only
    PtCase("pie", "max_category", "Apples", "p1", SENTENCE.format("apples"), (True, True, True)),
    PtCase("pie", "count_categories", "35", "p1", SENTENCE.format("33%"), (False, False, True)),
    PtCase("pie", "min_category", "12", "p2", SENTENCE.format("$12"), (True, True, True)),
]


# robustness variants: only in plot_twist_robustness (lmms-eval's plot_twist group and plot_twist keep base)
VARIANT_CASES: list[PtCase] = [
    PtCase("bar", "count_bars", "4", "b1", SENTENCE.format("4"), (True, True, True), variant="title_misleading"),
    PtCase("scatter", "x_max_point", "8", "s1", SENTENCE.format("9"), (False, False, False), variant="grid"),
]


def plot_twist_data(path: Path) -> Path:
    rows = []
    for index, case in enumerate(PLOT_TWIST_CASES + VARIANT_CASES):
        buffer = io.BytesIO()
        Image.new("RGB", (40, 30), (index, 100, 50)).save(buffer, format="PNG")
        rows.append(
            {
                "q_id": f"pt{index}",
                "figure_id": case.figure,
                "chart_type": case.chart,
                "question_type": case.question_type,
                "question": f"[pt{index}] What is asked about this {case.chart} chart?",
                "answer": case.gold,
                "x_range": case.x_range,
                "y_range": case.y_range,
                "image": {"bytes": buffer.getvalue(), "path": None},
                "variant": case.variant,
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=plot_twist_features()).to_parquet(str(path))
    return path


# ---- the shared reply policy ---------------------------------------------------------------------------------------


def replies() -> dict[str, str | Reply]:
    table: dict[str, str | Reply] = {f"q{pid}": reply for pid, (_, reply, _) in enumerate(GRAB_CASES)}
    for split, cases in SCIFIBENCH_CASES.items():
        table |= {f"sf{FIRST_ID[split] + offset}": case.reply for offset, case in enumerate(cases)}
    table |= {f"pt{index}": case.reply for index, case in enumerate(PLOT_TWIST_CASES + VARIANT_CASES)}
    return table


REPLIES = replies()


def policy(request: ChatRequest) -> str | Reply:
    tags = set(TAG.findall(request.text))
    assert len(tags) == 1, f"expected one question tag in the request, found {tags}: {request.text[:300]!r}"
    return REPLIES[tags.pop()]


MCQ_JUDGE = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)


GRAB_EXTRACTION = re.compile(r'The output from the model answering the question is: "(.*)"\n Extract', re.DOTALL)


def judge_policy(request: ChatRequest) -> str:
    """The test's judge: letters for SciFIBench's ambiguous outputs, answer sentences for Plot Twist, extracted
    answers for GRAB."""
    if found := MCQ_JUDGE.search(request.text):
        return JUDGE_LETTERS.get(found.group(1), "None")
    if found := GRAB_EXTRACTION.search(request.text):
        return JUDGE_EXTRACTS.get(found.group(1), found.group(1))
    output = request.text.rsplit('Model Answer: "', 1)[1].rsplit('"\n        Extracted Answer:', 1)[0]  # the task
    return JUDGE_SENTENCES.get(output, "The answer is None. I hope the answer is correct.")


def judge_asked(requests: list[ChatRequest]) -> set[str]:
    return {request.text for request in requests}


def request_shapes(requests: list[ChatRequest]) -> set[tuple[str, str, tuple[str, ...]]]:
    """(question tag, all request text, part types in order) of every request."""
    shapes = set()
    for request in requests:
        (tag,) = set(TAG.findall(request.text))
        parts = request.body["messages"][-1]["content"]
        kinds = tuple(part["type"] for part in parts) if isinstance(parts, list) else ("text",)
        shapes.add((tag, request.text, kinds))
    return shapes


def write_all(tmp_path: Path) -> dict[str, str]:
    grab = write_parquet([row for row, _, _ in GRAB_CASES], tmp_path / "data" / "grab" / "GRAB.parquet")
    return {
        "SCIFIG_GRAB_DATA": str(grab),
        "SCIFIG_SCIFIBENCH_DATA": str(scifibench_data(tmp_path / "data" / "scifibench")),
        "SCIFIG_PLOT_TWIST_DATA": str(plot_twist_data(tmp_path / "data" / "plot_twist" / "test.parquet")),
    }


VLMEVAL_DATASETS = {
    "grab": "SciFigGRAB",
    "grab_llm_extract": "SciFigGRAB",
    **{f"scifibench_{split.lower()}": "SciFigSciFIBench" for split in SCIFIBENCH_CASES},
    "plot_twist": "SciFigPlotTwist",
    "scifibench_general_caption2figure_reasoning": "SciFigSciFIBench",
    "plot_twist_robustness": "SciFigPlotTwistRobustness",
}


def test_vlmeval_and_lmms_eval_give_the_same_numbers(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    data_env = write_all(tmp_path)

    vlm_server, vlm_judge = openai_server(policy), openai_server(judge_policy)
    judge_env = {"SCIFIG_JUDGE_MODEL": "fake-judge", "SCIFIG_JUDGE_CACHE": str(tmp_path / "judge-cache-vlmeval")}
    vlm_env = {**lmms_env, **data_env, **judge_env, "SCIFIG_JUDGE_BASE_URL": vlm_judge.base_url}
    completed, out = run_vlmeval(tmp_path, vlm_server.base_url, vlm_env, VLMEVAL_DATASETS)
    output = completed.stdout + completed.stderr
    # the replies include failed requests (one attempt each): a failed run, said in one line, last
    failed = sum(policy(request) is FAILED for request in vlm_server.requests)
    assert completed.returncode == 1, output[-6000:]
    assert (
        completed.stderr.rstrip()
        .splitlines()[-1]
        .startswith(
            f"scifig vlmeval: FAILED: {failed} of {len(vlm_server.requests)} model requests failed (endpoint "
            f"{vlm_server.base_url}/chat/completions; first error: Failed to obtain answer via API.) — "
        )
    ), output[-6000:]

    lmms_server, lmms_judge = openai_server(policy), openai_server(judge_policy)
    env = {**lmms_env, **data_env, "OPENAI_API_BASE": lmms_server.base_url, "OPENAI_API_KEY": "sk-test"}
    env |= {**judge_env, "SCIFIG_JUDGE_BASE_URL": lmms_judge.base_url, "SCIFIG_JUDGE_CACHE": str(tmp_path / "jc")}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "grab,grab_llm_extract,scifibench,plot_twist"]
    lmms = run_cli("lmms-eval", args, env, tmp_path / "lmms-out")
    assert lmms.returncode == 0, lmms.output[-4000:]
    results = lmms.results()

    # the same prompts (text and image/text interleaving) reached the model from both frameworks
    vlm_shapes, lmms_shapes = request_shapes(vlm_server.requests), request_shapes(lmms_server.requests)
    assert {tag for tag, _, _ in vlm_shapes} == set(REPLIES)
    assert lmms_shapes <= vlm_shapes
    extra = vlm_shapes - lmms_shapes  # only VLMEvalKit ran the reasoning prompt and the robustness variants
    reasoning = [f"sf{FIRST_ID['General_Caption2Figure'] + offset}" for offset in range(3)]
    assert sorted(tag for tag, _, _ in extra) == sorted([*reasoning, "pt10", "pt11"])
    for tag, text, kinds in extra:
        if tag.startswith("sf"):
            assert text.endswith("Which of the images best matches the caption? Let's think step by step. Answer:")
            assert kinds == ("text", "image_url") * 5 + ("text",)
    (title,) = [text for tag, text, _ in extra if tag == "pt10"]
    assert title == f"{PLOT_TWIST_API_PROMPT} [pt10] What is asked about this bar chart?"  # paper Fig. 2
    c2f = [kinds for tag, _, kinds in lmms_shapes if tag == f"sf{FIRST_ID['CS_Caption2Figure']}"]
    assert c2f == [("text", "image_url") * 5 + ("text",)]

    # GRAB: hand-derived counts, equal to lmms-eval's
    grab = vlmeval_scores(out, "grab")
    correct = sum(ok for _, _, ok in GRAB_CASES)
    assert grab["metrics"]["correct"] == correct == 6
    assert grab["metrics"]["accuracy"] == correct / len(GRAB_CASES)
    assert grab["breakdown"] == results["groups"]["grab"]["breakdown,none"]
    for task, subtask in (("properties", "grab_properties"), ("function", "grab_functions")):
        cases = [ok for row, _, ok in GRAB_CASES if row.task == task]
        assert grab["breakdown"]["task"][task]["correct"] == sum(cases)
        assert results["results"][subtask]["accuracy,none"] == sum(cases) / len(cases)
    assert grab["breakdown"]["flags"]["output_status"] == {"ok": 10, "request_failed": 1}
    assert (grab["scifig_model_requests"]["failed"], grab["scifig_model_requests"]["total"]) == (1, 11)
    # no --judge option: the SCIFIG_JUDGE_* judge, named in the scores
    judge = {"model": "fake-judge", "base_url": vlm_judge.base_url, "from": "SCIFIG_JUDGE_* environment"}
    assert grab["judge"] == judge
    extract = vlmeval_scores(out, "grab_llm_extract")
    assert len(LLM_EXTRACT_OK) == len(GRAB_CASES)
    assert extract["metrics"]["correct"] == sum(LLM_EXTRACT_OK) == 8
    assert extract["breakdown"] == results["groups"]["grab_llm_extract"]["breakdown,none"]
    assert extract["breakdown"]["flags"]["judge"] == {"judged": 10, "not_used": 1}

    # SciFIBench: per split, hand-derived; unresolved answers are wrong and counted, never guessed
    tasks = {
        "CS_Figure2Caption": "scifibench_cs_figure2caption",
        "CS_Caption2Figure": "scifibench_cs_caption2figure",
        "General_Figure2Caption": "scifibench_general_figure2caption",
        "General_Caption2Figure": "scifibench_general_caption2figure",
    }
    for split, cases in SCIFIBENCH_CASES.items():
        scores = vlmeval_scores(out, tasks[split])
        correct = sum(case.stated == case.answer for case in cases)
        unresolved = sum(case.stated is None for case in cases)
        assert scores["metrics"]["correct"] == correct, split
        assert scores["metrics"]["unresolved"] == unresolved, split
        assert scores["metrics"]["accuracy"] == correct / len(cases)
        assert scores["metrics"]["accuracy"] == results["results"][tasks[split]]["accuracy,none"], split
        assert scores["breakdown"] == results["results"][tasks[split]]["breakdown,none"], split
    assert [vlmeval_scores(out, tasks[s])["metrics"]["correct"] for s in tasks] == [4, 2, 1, 2]

    # Plot Twist: the three accuracies and their collective forms, hand-derived and equal to the lmms-eval group
    twist = vlmeval_scores(out, "plot_twist")
    for position, name in enumerate(("standard", "relaxed", "range")):
        hits = sum(case.expected[position] for case in PLOT_TWIST_CASES)
        assert twist["metrics"][f"{name}_acc"] == hits / len(PLOT_TWIST_CASES), name
        figures = {case.figure for case in PLOT_TWIST_CASES}
        whole = sum(
            all(case.expected[position] for case in PLOT_TWIST_CASES if case.figure == figure) for figure in figures
        )
        assert twist["metrics"][f"collective_{name}"] == whole / len(figures), name
        assert twist["metrics"][f"collective_{name}"] == results["groups"]["plot_twist"][f"collective_{name},none"]
    assert [twist["breakdown"]["overall"]["hits"][key] for key in ("standard", "relaxed", "range")] == [[6], [7], [9]]
    assert twist["breakdown"] == results["groups"]["plot_twist"]["breakdown,none"]

    # VLMEvalKit only: the reasoning prompt (same replies, same resolution) and the robustness deltas, by hand
    assert vlmeval_scores(out, "scifibench_general_caption2figure_reasoning")["metrics"]["correct"] == 2
    robust = vlmeval_scores(out, "plot_twist_robustness")
    assert {key: cell["questions"] for key, cell in robust["breakdown"]["variant"].items()} == {
        "base": 10,
        "title_misleading": 1,
        "grid": 1,
    }
    assert robust["metrics"]["delta_vs_base/title_misleading/standard_acc"] == round(1.0 - 0.6, 4)
    assert robust["metrics"]["delta_vs_base/grid/range_acc"] == round(0.0 - 0.9, 4)

    # both frameworks asked the judge the same questions: SciFIBench's four outputs the rules refuse, Plot Twist's one
    # without answer sentence, GRAB's ten obtained outputs
    assert judge_asked(vlm_judge.requests) == judge_asked(lmms_judge.requests)
    assert len(judge_asked(lmms_judge.requests)) == 4 + 1 + 10

    # VLMEvalKit's run summary has every dataset, and the API key is in no output or file
    status = json.loads((out / "status.json").read_text())["datasets"]
    assert set(status) == set(VLMEVAL_DATASETS)
    assert all(entry.get("metrics") and not entry.get("error_message") for entry in status.values())
    assert KEY not in output
    leaked = [path for path in tmp_path.rglob("*") if path.is_file() and KEY.encode() in path.read_bytes()]
    assert leaked == [tmp_path / "vlmeval.json"]


def test_scifig_vlmeval_fails_loudly_on_bad_data(tmp_path: Path, lmms_env) -> None:
    """VLMEvalKit logs a failed dataset and exits 0; ``scifig vlmeval`` exits 1 naming the file, row and column of
    bad data. (The LLM-extraction dataset without a judge is refused before VLMEvalKit starts:
    ``tests/cli/test_judge_needs_cli.py``.)"""
    bad = write_parquet([Row("properties", "1"), Row("spline", "2")], tmp_path / "bad" / "GRAB.parquet")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(bad)}
    completed, _ = run_vlmeval(tmp_path, "http://127.0.0.1:9/v1", env, {"grab": "SciFigGRAB"})
    assert completed.returncode == 1
    assert "scifig vlmeval: FAILED: fake-vlm x grab: " in completed.stderr
    assert f"{bad}, row 1 (0-based), column 'task': unknown value 'spline'" in completed.stderr
