"""MMSci (multiple choice, captioning image-only and with abstract) through VLMEvalKit's own runner (``scifig
vlmeval``, ``GPT4V`` against the local server) and through the real ``lmms-eval`` CLI, on the same data, replies and
judge: the accuracies, the breakdown and every captioning metric agree exactly; the multiple-choice numbers and the
judged captioning metrics are also derived by hand below.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
from pathlib import Path

import datasets
from PIL import Image

from scifig_tasks.benchmarks.mmsci.judged_metrics import FACTS_INSTRUCTION, GEVAL_RELEVANCE_CRITERIA, RATING_DEFINITION
from scifig_tasks.report.build import build_report
from tests.harness.mmsci_data import CAPTION_FEATURES, MCQ_FEATURES, Caption, Mcq, caption_row, mcq_row, tiny_bert
from tests.harness.mmsci_run import JUDGE_LETTERS, REFERENCES  # the same judge letters and reference captions
from tests.harness.openai_server import ChatRequest, Reply
from tests.harness.vlmeval import MODEL, run_vlmeval, vlmeval_scores

# (question, reply, letter the reply states or the judge gives; None: no letter)
MCQ: list[tuple[Mcq, str | Reply, str | None]] = [
    (Mcq("fig2cap", "A"), "A", "A"),
    (Mcq("fig2cap", "B"), "The final answer is **B**.", "B"),
    (Mcq("fig2cap", "C"), "A", "A"),
    (Mcq("subfig2cap", "A"), "Answer: A", "A"),
    (Mcq("subfig2cap", "B"), "B or C", "B"),  # the rules refuse, the judge says B
    (Mcq("subfig2cap", "C", "Biological sciences", "Genetics"), Reply(status=400), None),  # request failed
    (Mcq("subcap2fig", "A", "Biological sciences", "Genetics"), "sub-figure (a)", "A"),
    (Mcq("subcap2fig", "B", "Biological sciences", "Genetics"), "(b)", None),  # the judge finds no letter
    (Mcq("subcap2fig", "D", "Biological sciences", "Ecology"), "A", "A"),
    (Mcq("subcap2fig", "C", "Biological sciences", "Ecology"), "C", "C"),
]
CAPTION_REPLIES: list[str | Reply] = [
    "The figure shows spectra of the sample under pressure.",
    "Schematic of the device with electrodes and the current.",
    Reply(status=400),  # request failed: a caption with no words, never judged
]
N_FACTS = 4
ROW = re.compile(r"Row (\d+)")


def spaced_png(row: int) -> bytes:
    """A solid image whose red channel (60 * row + 10) survives VLMEvalKit's JPEG re-encoding to within +/- 29."""
    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), (60 * row + 10, 50, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def image_row(request: ChatRequest) -> int:
    for part in request.body["messages"][-1]["content"]:
        if isinstance(part, dict) and part.get("type") == "image_url":
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            return round((Image.open(io.BytesIO(data)).convert("RGB").getpixel((0, 0))[0] - 10) / 60)
    raise AssertionError("request without an image")


def model_policy(request: ChatRequest) -> str | Reply:
    if "detailed description" in request.text:
        return CAPTION_REPLIES[image_row(request)]
    return MCQ[int(ROW.search(request.text).group(1))][1]


JUDGE_OUTPUT = re.compile(r"Here is the output from a generative model:\n(.*)\nThe output contains", re.DOTALL)


def judge_policy(request: ChatRequest) -> str:
    text = request.text
    if text.startswith(FACTS_INSTRUCTION):
        return "\n".join(f"- description {index}" for index in range(N_FACTS))
    if text.startswith(RATING_DEFINITION):
        return "5"
    if text.startswith(GEVAL_RELEVANCE_CRITERIA):
        return "4"
    return JUDGE_LETTERS[JUDGE_OUTPUT.search(text).group(1)]


def write_data(directory: Path) -> Path:
    (directory / "mcq").mkdir(parents=True)
    (directory / "captioning").mkdir(parents=True)
    rows = [mcq_row(row, question) for row, (question, _, _) in enumerate(MCQ)]
    datasets.Dataset.from_list(rows, features=MCQ_FEATURES).to_parquet(str(directory / "mcq" / "test.parquet"))
    captions = []
    for row, reference in enumerate(REFERENCES):
        item = caption_row(row, Caption(reference, abstract=f"We report a stable material. Row {row}."))
        captions.append({**item, "image": {"bytes": spaced_png(row), "path": None}})
    target = directory / "captioning" / "test.parquet"
    datasets.Dataset.from_list(captions, features=CAPTION_FEATURES).to_parquet(str(target))
    return directory


DATASETS = {
    "mmsci": "SciFigMMSciMCQ",
    "mmsci_caption_image_only": "SciFigMMSciCaption",
    "mmsci_caption_with_abstract": "SciFigMMSciCaption",
}
CAPTION_TASKS = {
    "mmsci_caption_image_only": "mmsci_caption_image_only",
    "mmsci_caption_with_abstract": "mmsci_caption_with_abstract",
}
METRICS = ("bleu2", "bleu4", "cumulative_bleu_2", "cumulative_bleu_4", "rouge1", "rouge2", "rougeL", "meteor")
METRICS += ("bertscore_f1", "cider", "factscore")


def test_mmsci_in_vlmeval_matches_lmms_eval(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    data = write_data(tmp_path / "mmsci")
    common = {
        **lmms_env,
        "SCIFIG_MMSCI_DATA": str(data),
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        "SCIFIG_MMSCI_BERTSCORE_MODEL": str(tiny_bert(tmp_path / "tiny-bert")),
    }

    vlm_model, vlm_judge = openai_server(model_policy), openai_server(judge_policy)
    env = {**common, "SCIFIG_JUDGE_BASE_URL": vlm_judge.base_url, "SCIFIG_JUDGE_CACHE": str(tmp_path / "jc-vlm")}
    completed, out = run_vlmeval(tmp_path, vlm_model.base_url, env, DATASETS)
    # a matching question and a caption per prompt get a failed request: a failed run, its last line counts them
    assert completed.returncode == 1, (completed.stdout + completed.stderr)[-6000:]
    assert (
        completed.stderr.rstrip()
        .splitlines()[-1]
        .startswith(f"scifig vlmeval: FAILED: 3 of {len(vlm_model.requests)} model requests failed ")
    ), (completed.stdout + completed.stderr)[-6000:]

    lmms_model, lmms_judge = openai_server(model_policy), openai_server(judge_policy)
    env = {**common, "SCIFIG_JUDGE_BASE_URL": lmms_judge.base_url, "SCIFIG_JUDGE_CACHE": str(tmp_path / "jc-lmms")}
    env |= {"OPENAI_API_BASE": lmms_model.base_url, "OPENAI_API_KEY": "sk-test"}
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    lmms = run_cli("lmms-eval", [*args, "--tasks", "mmsci,mmsci_captioning"], env, tmp_path / "lmms-out")
    assert lmms.returncode == 0, lmms.output[-4000:]
    results = lmms.results()

    # the same prompts reached the model
    assert {r.text for r in vlm_model.requests} == {r.text for r in lmms_model.requests}

    # multiple choice: by hand, fig2cap 2/3, subfig2cap 2/3, subcap2fig 2/4; the paper's "Avg." is pooled over the
    # questions (6/10), not the settings' mean (0.6111); the authors' denominator drops the 2 unresolved: 6/8
    scores = vlmeval_scores(out, "mmsci")
    metrics = scores["metrics"]
    assert [metrics[f"setting={s}"] for s in ("fig2cap", "subfig2cap", "subcap2fig")] == [2 / 3, 2 / 3, 2 / 4]
    assert metrics["accuracy"] == 6 / 10
    assert math.isclose(metrics["setting_mean"], (2 / 3 + 2 / 3 + 2 / 4) / 3, abs_tol=1e-15)
    assert metrics["accuracy_paper_denominator"] == 6 / 8
    assert math.isclose(metrics["accuracy"], results["groups"]["mmsci"]["accuracy,none"], abs_tol=1e-12)
    assert (metrics["correct"], metrics["n"], metrics["unresolved"]) == (6, 10, 2)
    assert scores["breakdown"] == results["groups"]["mmsci"]["breakdown,none"]
    for setting in ("fig2cap", "subfig2cap", "subcap2fig"):
        assert metrics[f"setting={setting}"] == results["results"][f"mmsci_{setting}"]["accuracy,none"]

    # captioning: every metric equal to lmms-eval's; the judged ones by hand
    for name, task in CAPTION_TASKS.items():
        caption = vlmeval_scores(out, name)
        for metric in METRICS:
            value = caption["metrics"][metric]
            assert isinstance(value, float), (name, metric, value)
            assert value == results["results"][task][f"{metric},none"], (name, metric)
        # FActScore: 4 descriptions rated 5 -> exp(1 - 10 / 4) per judged caption; the failed request scores 0
        assert math.isclose(caption["metrics"]["factscore"], 2 * math.exp(1 - 10 / N_FACTS) / 3, rel_tol=1e-12)
        assert math.isclose(caption["metrics"]["geval_relevance"], (4 + 4 + 1) / 3, rel_tol=1e-12)
        assert caption["breakdown"]["outputs"] == {"ok": 2, "empty": 0, "request_failed": 1}
        lmms_report = results["results"][task]["caption_report,none"]
        assert json.loads(json.dumps(caption["breakdown"]["metrics"])) == lmms_report["metrics"]

    # the report reads both frameworks' real outputs: the MMSci tables show identical cells for the two rows
    report = build_report([out, tmp_path / "lmms-out"], tmp_path / "report")
    assert "MMSci" in report.sections
    markdown = report.markdown.read_text()
    lines = markdown[markdown.index("## MMSci") :].split("\n## ")[0].splitlines()
    vlmeval_rows = [line.split("|")[2:] for line in lines if line.startswith(f"| {MODEL} (VLMEvalKit) |")]
    lmms_rows = [line.split("|")[2:] for line in lines if line.startswith(f"| {MODEL} |")]
    # the settings table (strict), the authors' denominator, the resolution table, the captioning tables in two parts
    # (reference-based metrics, judged metrics), each x2 prompts
    assert len(vlmeval_rows) == 7, lines
    assert vlmeval_rows == lmms_rows
    categories = [line for line in lines if line.startswith("| Biological sciences |")]
    assert categories == ["| Biological sciences | 40.0 (11.8-76.9) | 40.0 (11.8-76.9) |"]  # 2/5, both frameworks
    # VLMEvalKit's failure text is flagged as a failed request, not as an unreadable answer
    failed = [line for line in markdown.splitlines() if "'Failed to obtain answer via API.'" in line]
    assert failed and all("| request_failed |" in line for line in failed), failed
