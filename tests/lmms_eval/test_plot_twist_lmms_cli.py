"""Plot Twist through the real ``lmms-eval`` CLI against the local server: the six metrics per chart type and per
group, judge reformatting, the ChartQA task, the robustness group's deltas, and repeated sampling.

The data is a small generated set. The model's reply to every question is chosen by the test (keyed by the image
bytes and the question), and each reply's expected outcome is computed below by hand from the paper's rules
(:func:`expected`), independently of the package's scorer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import datasets
import pytest

from curation.plot_twist.build import build_plot_twist
from curation.plot_twist.questions import TITLE_STATEMENTS
from scifig_tasks.benchmarks.plot_twist.source import plot_twist_features
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.plot_twist_prompts import API, COGVLM_REFORMAT, OPEN, OPEN_FIGURE_ONLY, PALI_REFORMAT

SENTENCE = "The answer is {}. I hope the answer is correct."
WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
NOT_PROVIDED = None
CHART_TASKS = {"scatter": "plot_twist_scatter", "bar": "plot_twist_bar", "pie": "plot_twist_pie"}
METRICS = ("standard_acc", "relaxed_acc", "range_acc", "collective_standard", "collective_relaxed", "collective_range")


def margin(row: dict, chartqa: bool = False) -> float | None:
    """Range-based margin, by hand from the paper: bar count 5% of x_range, other bar 5% of y_range, pie 5, scatter
    x questions 5% of x_range, y questions 5% of y_range; none for the ChartQA subset."""
    if chartqa:
        return None
    if row["chart_type"] == "pie":
        return 5
    if row["chart_type"] == "bar":
        return 0.05 * (row["x_range"] if row["question_type"] == "count_bars" else row["y_range"])
    return 0.05 * (row["x_range"] if row["question_type"].startswith("x_") else row["y_range"])


def expected(said: float | str | None, gold: str, band: float | None) -> tuple[bool, bool, bool]:
    """(standard, relaxed, range) of a stated answer: exact; within [0.95 g, 1.05 g]; within g +/- margin (else
    the relaxed band); bounds sorted and inclusive; text answers by case-insensitive equality."""
    if said is None:
        return (False, False, False)
    if isinstance(said, str):
        same = said.lower() == gold.lower()
        return (same, same, same)
    g = float(gold)
    low, high = sorted((g * 0.95, g * 1.05))
    low_m, high_m = (low, high) if band is None else sorted((g - band, g + band))
    return (said == g, low <= said <= high, low_m <= said <= high_m)


@dataclass
class Case:
    row: dict
    reply: str | Reply
    said: float | str | None
    judge: str | Reply | None = None  # the judge's reply when the model's reply has no answer sentence


def number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def styled(row: dict, style: str) -> Case:
    gold, kind = row["answer"], row["question_type"]
    g = float(gold)
    m = margin(row)
    tag = row["q_id"]
    if style == "exact":
        return Case(row, SENTENCE.format(gold), g)
    if style == "words":
        if kind.startswith("count"):
            return Case(row, SENTENCE.format(WORDS[int(g)]), g)
        return Case(row, f"Reading the axis carefully. {SENTENCE.format('approximately ' + gold)}", g)
    if style == "percent":
        return Case(row, SENTENCE.format(f"{gold}%"), g)
    if style == "relaxed":
        value = number(g * 1.04)
        return Case(row, SENTENCE.format(value), float(value))
    if style == "near":
        value = number(g + 0.9 * m)
        return Case(row, SENTENCE.format(f"${value}"), float(value))
    if style == "wrong":
        value = number(g + 3 * (abs(g) + m) + 1)
        return Case(row, SENTENCE.format(value), float(value))
    if style == "freeform":
        return Case(row, f"I would say {gold} [{tag}]", g, judge=SENTENCE.format(gold))
    if style == "freeform_none":
        return Case(row, f"I cannot read this chart [{tag}]", NOT_PROVIDED, judge=SENTENCE.format("None"))
    if style == "judge_fail":
        return Case(row, f"Maybe {gold}? [{tag}]", NOT_PROVIDED, judge=Reply(text="judge down", status=500))
    if style == "empty":
        return Case(row, Reply(text=""), NOT_PROVIDED)
    if style == "failed":
        return Case(row, Reply(text="bad request", status=400), NOT_PROVIDED)
    raise AssertionError(style)


STYLES = ("exact", "relaxed", "near", "wrong", "words", "percent", "freeform", "freeform_none", "judge_fail", "empty")


def plan_cases(rows: list[dict]) -> list[Case]:
    """Figure 0 of each chart type is answered right in varied ways (so collective metrics are not all 0); the
    other figures cycle through every style."""
    cases, index = [], 0
    for row in rows:
        if row["variant"] == "base":
            if row["figure_id"].endswith("_000"):
                style = ("exact", "words", "percent", "freeform")[index % 4]
            else:
                style = STYLES[index % len(STYLES)]
            index += 1
        elif row["variant"] == "title_misleading":  # a model fooled by the title repeats the stated value
            before, after = TITLE_STATEMENTS[row["question_type"]].split("{}")
            title = json.loads(row["metadata"])["title"]
            stated = title[len(before) : len(title) - len(after)]
            cases.append(Case(row, SENTENCE.format(stated), float(stated)))
            continue
        elif row["variant"] == "vegalite":
            style = "wrong" if row["question_type"].endswith("_axis") else "exact"
        elif row["variant"] == "grid":
            style = "relaxed"
        elif row["variant"] == "marker_circle":  # "o" is matplotlib's default marker: the base image, same reply
            base = next(case for case in cases if case.row["q_id"] == row["q_id"].removesuffix("_marker_circle"))
            cases.append(Case(row, base.reply, base.said, base.judge))
            continue
        else:
            style = "exact"
        cases.append(styled(row, style))
    # the last base question of each chart type (its figure has no marker variant): the request-failure marker
    for kind in CHART_TASKS:
        last = max(
            i for i, case in enumerate(cases) if case.row["variant"] == "base" and case.row["chart_type"] == kind
        )
        assert cases[last].row["figure_id"].endswith("_001")
        cases[last] = styled(cases[last].row, "failed")
    return cases


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = build_plot_twist(
        tmp_path_factory.mktemp("plot_twist") / "set", plots_per_type=2, variant_plots=1, workers=1, progress=False
    ).out
    dataset = datasets.Dataset.from_parquet(str(out / "test.parquet")).cast_column(
        "image", datasets.Image(decode=False)
    )
    return out, dataset.to_list()


def image_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def request_key(request: ChatRequest) -> tuple[str, str]:
    (message,) = request.body["messages"]
    parts = message["content"]
    assert [part["type"] for part in parts] == ["image_url", "text"]
    data = base64.b64decode(parts[0]["image_url"]["url"].split(",", 1)[1])
    return image_hash(data), parts[1]["text"]


def prompt_for(row: dict, protocol: str = "api") -> str:
    """The published prompt, one space, the question: Fig. 2 for ``api`` (every variant); App. B.3 for the open
    protocols, with "only based on the figure" on the title variants."""
    if protocol == "api":
        return f"{API} {row['question']}"
    lead = OPEN_FIGURE_ONLY if row["variant"].startswith("title_") else OPEN
    return f"{lead} {row['question']}"


JUDGE_OUTPUT = re.compile(r'.*Model Answer: "(.*?)"\n        Extracted Answer:\n        $', re.DOTALL)  # the task


def servers(openai_server, cases: list[Case]):
    replies = {(image_hash(case.row["image"]["bytes"]), prompt_for(case.row)): case.reply for case in cases}
    judged = {case.reply: case.judge for case in cases if case.judge is not None}

    def model(request: ChatRequest) -> str | Reply:
        return replies[request_key(request)]

    def judge(request: ChatRequest) -> str | Reply:
        output = JUDGE_OUTPUT.search(request.text).group(1)
        return judged[output]

    return openai_server(model), openai_server(judge)


def env_for(lmms_env: dict, data: Path, model, judge=None) -> dict:
    env = {**lmms_env, "SCIFIG_PLOT_TWIST_DATA": str(data), "OPENAI_API_BASE": model.base_url, "OPENAI_API_KEY": "sk"}
    if judge is not None:
        env |= {"SCIFIG_JUDGE_BASE_URL": judge.base_url, "SCIFIG_JUDGE_MODEL": "fake-judge"}
        env |= {"SCIFIG_JUDGE_MAX_RETRIES": "0"}
    return env


def metrics_of(cases: list[Case], chartqa: bool = False) -> dict[str, float]:
    """The six metrics of one task (one repeat), by hand."""
    triples = [expected(case.said, case.row["answer"], margin(case.row, chartqa)) for case in cases]
    figures: dict[tuple[str, str], list[tuple[bool, bool, bool]]] = defaultdict(list)
    for case, triple in zip(cases, triples, strict=True):
        figures[(case.row["variant"], case.row["figure_id"])].append(triple)
    result = {}
    for index, name in enumerate(("standard", "relaxed", "range")):
        result[f"{name}_acc"] = sum(t[index] for t in triples) / len(triples)
        result[f"collective_{name}"] = sum(all(t[index] for t in f) for f in figures.values()) / len(figures)
    return result


def write_chartqa(rows: list[dict], path: Path) -> tuple[Path, list[dict]]:
    """A user file in the same schema: the base bar questions plus one text answer (no range margin there)."""
    picked = [dict(row) for row in rows if row["variant"] == "base" and row["chart_type"] == "bar"]
    colour = {**picked[0], "q_id": "colour", "question": "What colour are the bars?", "answer": "Blue"}
    picked.append(colour)
    records = [{key: row[key] for key in plot_twist_features()} for row in picked]
    datasets.Dataset.from_list(records, features=plot_twist_features()).to_parquet(str(path))
    return path, picked


def test_six_metrics_per_chart_type_groups_chartqa_and_robustness(
    tmp_path: Path, generated, openai_server, lmms_env, run_cli
) -> None:
    out, rows = generated
    cases = plan_cases(rows)
    chartqa_file, chartqa_rows = write_chartqa(rows, tmp_path / "chartqa.parquet")
    bar_cases = {case.row["q_id"]: case for case in cases if case.row["variant"] == "base"}
    chartqa_cases = [
        Case(row, SENTENCE.format("blue"), "blue") if row["q_id"] == "colour" else Case(row, **_reuse(bar_cases, row))
        for row in chartqa_rows
    ]
    model, judge = servers(openai_server, cases + chartqa_cases)
    env = env_for(lmms_env, out, model, judge) | {"SCIFIG_PLOT_TWIST_CHARTQA_DATA": str(chartqa_file)}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "plot_twist,plot_twist_chartqa,plot_twist_robustness", "--log_samples"]

    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    base = [case for case in cases if case.row["variant"] == "base"]
    for chart, task in CHART_TASKS.items():
        mine = [case for case in base if case.row["chart_type"] == chart]
        want = metrics_of(mine)
        got = {name: results["results"][task][f"{name},none"] for name in METRICS}
        assert got == pytest.approx(want), task
        assert 0 < want["collective_standard"] < 1, want  # the data exercises the collective metrics
    group = results["groups"]["plot_twist"]
    assert {name: group[f"{name},none"] for name in METRICS} == pytest.approx(metrics_of(base))
    breakdown = group["breakdown,none"]
    assert breakdown["overall"]["questions"] == 32 and breakdown["overall"]["figures"] == 6
    empty = sum(isinstance(c.reply, Reply) and c.reply.text == "" for c in base)
    assert empty > 0
    assert breakdown["flags"]["output_status"] == {"ok": 32 - 3 - empty, "request_failed": 3, "empty": empty}
    assert breakdown["flags"]["judge"]["judge_failed"] == sum(isinstance(c.judge, Reply) for c in base)
    for chart in CHART_TASKS:
        for kind, cell in breakdown["question_type"][chart].items():
            mine = [c for c in base if c.row["chart_type"] == chart and c.row["question_type"] == kind]
            assert cell["relaxed_acc"]["mean"] == round(metrics_of(mine)["relaxed_acc"], 4), (chart, kind)

    # ChartQA: the same replies scored without a range margin, plus a text answer
    want = metrics_of(chartqa_cases, chartqa=True)
    assert want["range_acc"] == want["relaxed_acc"]
    got = {name: results["results"]["plot_twist_chartqa"][f"{name},none"] for name in METRICS}
    assert got == pytest.approx(want)
    assert want["range_acc"] != metrics_of([c for c in chartqa_cases if c.row["q_id"] != "colour"])["range_acc"]

    # robustness: per-variant metrics and their deltas against the base
    summary = results["groups"]["plot_twist_robustness"]["breakdown,none"]
    by_variant = defaultdict(list)
    for case in cases:
        by_variant[case.row["variant"]].append(case)
    base_metrics = metrics_of(by_variant["base"])
    for variant, mine in by_variant.items():
        want = metrics_of(mine)
        assert summary["variant"][variant]["standard_acc"]["mean"] == round(want["standard_acc"], 4), variant
        assert summary["variant"][variant]["collective_range"]["mean"] == round(want["collective_range"], 4)
        if variant != "base":
            for name in METRICS:
                assert summary["delta_vs_base"][variant][name] == round(want[name] - base_metrics[name], 4)
    assert summary["delta_vs_base"]["title_misleading"]["relaxed_acc"] < 0

    # what the model and the judge were sent
    asked = {request_key(request) for request in model.requests}
    sent = {(image_hash(case.row["image"]["bytes"]), prompt_for(case.row)) for case in cases + chartqa_cases}
    assert asked == sent
    judged = [JUDGE_OUTPUT.search(request.text).group(1) for request in judge.requests]
    assert set(judged) == {case.reply for case in cases + chartqa_cases if case.judge is not None}
    # the authors' CogVLM/ChartLlama few-shot prompt reached the judge verbatim (the default protocol's examples)
    asked_judge = {request.text for request in judge.requests}
    for case in cases + chartqa_cases:
        if case.judge is not None:
            assert COGVLM_REFORMAT.format(question=case.row["question"], output=case.reply) in asked_judge
    assert breakdown["protocol"] == {"name": "api", "prompt": "api", "reformat": "cogvlm", "reformat_all": False}
    assert all(request.body.get("max_tokens") == 64 for request in judge.requests)
    samples = run.samples("plot_twist_bar")
    assert all(sample["breakdown"]["q_id"].startswith("bar_") for sample in samples)


def _reuse(by_q_id: dict[str, Case], row: dict) -> dict:
    case = by_q_id[row["q_id"]]
    return {"reply": case.reply, "said": case.said, "judge": case.judge}


def test_repeats_average_over_samples_with_std(tmp_path: Path, generated, openai_server, lmms_env, run_cli) -> None:
    """``--repeats 3`` with a model whose n-th answer to a question differs; the judge is off, so outputs without
    the answer sentence count as not provided."""
    out, rows = generated
    pie = [row for row in rows if row["variant"] == "base" and row["chart_type"] == "pie"]
    by_key = {(image_hash(row["image"]["bytes"]), prompt_for(row)): row for row in pie}

    def said_by(row: dict, attempt: int) -> float | None:
        g = float(row["answer"])
        return [g, g + 4, None][(attempt - 1 + pie.index(row)) % 3]  # right, within 5 (pie margin), no sentence

    def model(request: ChatRequest) -> str:
        row = by_key[request_key(request)]
        said = said_by(row, request.attempt)
        return f"It is {row['answer']}" if said is None else SENTENCE.format(number(said))

    server = openai_server(model)
    args = [
        "--model",
        "openai",
        "--model_args",
        "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=1",
    ]
    args += ["--tasks", "plot_twist_pie", "--repeats", "3", "--log_samples"]

    run = run_cli("lmms-eval", args, env_for(lmms_env, out, server), tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    assert server.count == 3 * len(pie)
    result = run.results()["results"]["plot_twist_pie"]
    per_repeat = []
    for repeat in (1, 2, 3):
        cases = [Case(row, "", said_by(row, repeat)) for row in pie]
        per_repeat.append(metrics_of(cases))
    for name in METRICS:
        values = [metrics[name] for metrics in per_repeat]
        assert result[f"{name},none"] == pytest.approx(statistics.mean(values)), name
        assert result["breakdown,none"]["overall"][name] == {
            "mean": round(statistics.mean(values), 4),
            "std": round(statistics.stdev(values), 4),
        }
    assert result["breakdown,none"]["repeats"] == 3
    assert result["breakdown,none"]["flags"]["judge"] == {"judge_off": len(pie), "not_used": 2 * len(pie)}
    sample = run.samples("plot_twist_pie")[0]
    assert len(sample["filtered_resps"]) == 3 and len(sample["breakdown"]["standard"]) == 3


def test_open_protocols_send_the_published_prompts_and_reformat_every_output(
    tmp_path: Path, generated, openai_server, lmms_env, run_cli
) -> None:
    """``plot_twist_open`` (App. B.3 prompt, CogVLM/ChartLlama reformatting), ``plot_twist_robustness_open_pali``
    (the same prompt, "only based on the figure" on the title variants, PaLI-3 reformatting) and
    ``plot_twist_chartqa_open``: every model output goes to the judge with the authors' few-shot prompt, verbatim;
    the judge's sentence is what is scored."""
    out, rows = generated
    chartqa_file, chartqa_rows = write_chartqa(rows, tmp_path / "chartqa.parquet")
    replies: dict[tuple[str, str], str] = {}
    said: dict[str, float | str] = {}  # model output -> what the judge's sentence states
    for index, row in enumerate(rows + chartqa_rows[-1:]):  # the ChartQA file's extra row: a text answer
        if row["q_id"] == "colour":
            replies[(image_hash(row["image"]["bytes"]), prompt_for(row, "open"))] = "They are blue [colour]"
            said["They are blue [colour]"] = "blue"
            continue
        gold = float(row["answer"])
        # some outputs already carry the sentence: the open protocols reformat them all the same
        reply = SENTENCE.format(row["answer"]) if index % 5 == 0 else f"I see {row['answer']} here [{row['q_id']}]"
        replies[(image_hash(row["image"]["bytes"]), prompt_for(row, "open"))] = reply
        said[reply] = gold if index % 3 else gold + 1000

    def model(request: ChatRequest) -> str:
        return replies[request_key(request)]

    def judge(request: ChatRequest) -> str:
        stated = said[JUDGE_OUTPUT.search(request.text).group(1)]
        return SENTENCE.format(stated if isinstance(stated, str) else number(stated))

    model_server, judge_server = openai_server(model), openai_server(judge)
    env = env_for(lmms_env, out, model_server, judge_server) | {"SCIFIG_PLOT_TWIST_CHARTQA_DATA": str(chartqa_file)}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "plot_twist_open,plot_twist_robustness_open_pali,plot_twist_chartqa_open", "--log_samples"]

    run = run_cli("lmms-eval", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()

    # the model saw App. B.3's prompt: "based on the Figure", "only based on the figure" on the title variants
    asked = {request_key(request) for request in model_server.requests}
    assert asked == {(image_hash(row["image"]["bytes"]), prompt_for(row, "open")) for row in rows + chartqa_rows}
    title = next(row for row in rows if row["variant"] == "title_misleading")
    assert f"Answer the question only based on the figure {title['question']}" in {t for _, t in asked}
    base = next(row for row in rows if row["variant"] == "base")
    assert f"Answer the question based on the Figure {base['question']}" in {t for _, t in asked}

    # the judge got the authors' prompts verbatim: CogVLM/ChartLlama examples for plot_twist_open and the ChartQA
    # task, PaLI-3 examples for the robustness run; every output, with or without the sentence
    judged = {request.text for request in judge_server.requests}
    reply_of = {row["q_id"]: replies[(image_hash(row["image"]["bytes"]), prompt_for(row, "open"))] for row in rows}
    reply_of["colour"] = "They are blue [colour]"
    want = {PALI_REFORMAT.format(question=row["question"], output=reply_of[row["q_id"]]) for row in rows}
    want |= {
        COGVLM_REFORMAT.format(question=row["question"], output=reply_of[row["q_id"]])
        for row in rows + chartqa_rows
        if row["variant"] == "base"
    }
    assert judged == want

    # scores come from the judge's sentences, by hand
    base_cases = [Case(row, "", said[reply_of[row["q_id"]]]) for row in rows if row["variant"] == "base"]
    group = results["groups"]["plot_twist_open"]
    assert {name: group[f"{name},none"] for name in METRICS} == pytest.approx(metrics_of(base_cases))
    assert 0 < group["standard_acc,none"] < 1
    assert group["breakdown,none"]["protocol"] == {
        "name": "open",
        "prompt": "open",
        "reformat": "cogvlm",
        "reformat_all": True,
    }
    assert group["breakdown,none"]["flags"]["answer_source"] == {"judge": 32}
    robust = results["results"]["plot_twist_robustness_open_pali"]
    all_cases = [Case(row, "", said[reply_of[row["q_id"]]]) for row in rows]
    assert {name: robust[f"{name},none"] for name in METRICS} == pytest.approx(metrics_of(all_cases))
    table = robust["breakdown,none"]
    assert table["protocol"]["name"] == "open_pali" and table["protocol"]["reformat"] == "pali"
    for variant in ("title_misleading", "grid"):
        mine = [case for case in all_cases if case.row["variant"] == variant]
        want_delta = metrics_of(mine)["standard_acc"] - metrics_of(base_cases)["standard_acc"]
        assert table["delta_vs_base"][variant]["standard_acc"] == round(want_delta, 4)
    chartqa = results["results"]["plot_twist_chartqa_open"]
    chartqa_cases = [Case(row, "", said[reply_of[row["q_id"]]]) for row in chartqa_rows]
    got = {name: chartqa[f"{name},none"] for name in METRICS}
    assert got == pytest.approx(metrics_of(chartqa_cases, chartqa=True))
    assert chartqa_cases[-1].said == "blue" and chartqa_cases[-1].row["answer"] == "Blue"
    assert chartqa["breakdown,none"]["protocol"]["name"] == "open"
