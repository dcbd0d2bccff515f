"""``samples.html``, the per-sample viewer of ``scifig report``: runs of two models produced by the real ``lmms-eval``
CLI against the local server on GRAB, SciFIBench, Plot Twist and MMSci data built here, rendered in headless
Chromium (thumbnails drawn, filters applied through the page's URL, models side by side); the page without the
documents; and the page's size for many samples with large, distinct chart images (25 MB per 2,000 samples).

Every expected count below follows by hand from the reply rules (each rule answers right or wrong by question).
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image, ImageDraw

from curation.plot_twist.build import build_plot_twist
from scifig_tasks.report.runs import load_runs
from scifig_tasks.report.sample_figures import SHOWN_AS_STORED_PX
from scifig_tasks.report.samples import write_samples_page
from tests.harness import mmsci_data
from tests.harness.grab_data import Row, write_parquet
from tests.harness.lmms import offline_env, run
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer
from tests.harness.scifibench_data import Question, build, write_splits

MODELS = ("model-a", "model-b")
GRAB_ROWS = [
    Row(task, str(pid + 1), category=("Extrema", "Range")[pid % 2])
    for pid, task in enumerate(
        ["properties", "properties", "function", "function", "series", "series", "transform", "transform"]
    )
]
F2C = [Question("f2c", "ABCDE"[qid % 5], ("cs.CV", "cs.LG")[qid % 2]) for qid in range(4)]  # IDs 0-3
C2F = [Question("c2f", "ABCDE"[qid % 5], "cs.AI") for qid in (10, 11)]  # IDs 10-11
MMSCI = [mmsci_data.Mcq("fig2cap", "B"), mmsci_data.Mcq("subfig2cap", "C"), mmsci_data.Mcq("subcap2fig", "D")]
CAPTIONS = [mmsci_data.Caption("the figure shows measured spectra under pressure")] * 2
CAPTION_REPLY = "the figure shows spectra"
TASKS = "grab,scifibench_cs_figure2caption,scifibench_cs_caption2figure,plot_twist_bar,mmsci,mmsci_caption_image_only"
ROWS = 8 + 4 + 2 + 5 + 3 + 2  # GRAB, SciFIBench F->C and C->F, the 5 questions on one bar chart, MMSci, captions
IMAGE_ELEMENTS = 8 + 4 + 2 * 5 + 5 + 3 + 2
DISTINCT_IMAGES = IMAGE_ELEMENTS - 4  # the bar chart's five questions share one figure


def image_of(request: ChatRequest) -> Image.Image:
    for message in request.body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                return Image.open(io.BytesIO(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])))
    raise AssertionError("request without an image")


def policy_for(model: str, bar_rows: list[dict]):
    """model-a: wrong on GRAB pid 0 ("-1"), SciFIBench ID 1 (next letter) and the bar count (one too many), else
    right; model-b: empty GRAB output for odd pids, no letter for even SciFIBench IDs (unresolved), Plot Twist gold
    plus 1000, MMSci always "A", empty captions."""
    gold = {row["question"]: row["answer"] for row in bar_rows}

    def policy(request: ChatRequest) -> str:
        text = request.text
        if "Only provide the answer, no reasoning steps" in text:
            pid = int(re.search(r"\[q(\d+)\]", text).group(1))
            if model == "model-a":
                return "-1" if pid == 0 else GRAB_ROWS[pid].answer
            return "" if pid % 2 else GRAB_ROWS[pid].answer
        if "The answer is ANS" in text:
            question = next(q for q in gold if q in text)
            if model == "model-b":
                said = f"{float(gold[question]) + 1000:g}"
            else:
                said = str(int(gold[question]) + 1) if "How many bars" in question else gold[question]
            return f"The answer is {said}. I hope the answer is correct."
        if "Please write a detailed description" in text:
            return CAPTION_REPLY if model == "model-a" else ""
        red = image_of(request).convert("RGB").getpixel((0, 0))[0]
        if "Which of the captions best" in text or "Which of the images best" in text:
            answer = "ABCDE"[red % 5]
            if model == "model-a":
                return f"Answer: {'ABCDE'[(red + 1) % 5] if red == 1 else answer}"
            return "I am not sure." if red % 2 == 0 else f"Answer: {answer}"
        return f"Answer: {MMSCI[red].answer}" if model == "model-a" else "Answer: A"

    return policy


@dataclass
class Built:
    work: Path
    env: dict[str, str]
    out: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    work = tmp_path_factory.mktemp("samples")
    grab = write_parquet(GRAB_ROWS, work / "grab" / "GRAB.parquet", image_size=(120, 90))
    scifibench = write_splits(
        {"CS_Figure2Caption": build(F2C, first_id=0), "CS_Caption2Figure": build(C2F, first_id=10)},
        work / "scifibench",
    )
    mmsci = mmsci_data.write(work / "mmsci", MMSCI, CAPTIONS)
    plot_twist = build_plot_twist(work / "plot_twist", plots_per_type=1, variants=["none"], workers=1, progress=False)
    rows = datasets.Dataset.from_parquet(str(plot_twist.out / "test.parquet")).to_list()
    bar_rows = [row for row in rows if row["chart_type"] == "bar" and row["variant"] == "base"]
    assert len(bar_rows) == 5
    data_env = {
        "SCIFIG_GRAB_DATA": str(grab),
        "SCIFIG_SCIFIBENCH_DATA": str(scifibench),
        "SCIFIG_PLOT_TWIST_DATA": str(plot_twist.out),
        "SCIFIG_MMSCI_DATA": str(mmsci),
    }
    for model in MODELS:
        server = FakeOpenAIServer(policy_for(model, bar_rows)).start()
        try:
            env = offline_env(work / model) | data_env
            env |= {"OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "sk-test"}
            args = ["--model", "openai", "--model_args", f"model_version={model},max_retries=1,retry_backoff_s=0"]
            result = run("lmms-eval", [*args, "--tasks", TASKS, "--log_samples"], env, work / "results" / model)
        finally:
            server.stop()
        assert result.returncode == 0, result.output[-4000:]
        assert not server.errors, server.errors
        assert len(list(result.output_path.rglob("*_samples_*.jsonl"))) == 11, result.output[-4000:]
    env = offline_env(work / "report-env") | data_env
    out = scifig_report([work / "results"], work / "report", env)
    return Built(work, env, out)


def scifig_report(results: list[Path], out: Path, env: dict[str, str]) -> Path:
    command = [str(Path(sys.executable).parent / "scifig"), "report", *map(str, results), "--out", str(out)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert completed.returncode == 0, completed.stdout + completed.stderr[-4000:]
    return out


def page_json(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def chromium_dom(url: str, profile: Path) -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed (bash .ci/setup installs it)"
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=10000",
        "--dump-dom",
        url,
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert completed.returncode == 0 and "</html>" in completed.stdout, completed.stderr[-3000:]
    return completed.stdout


def count_of(dom: str) -> dict[str, str]:
    found = re.search(r'<p id="count"([^>]*)>([^<]*)</p>', dom)
    assert found, "no row count in the page"
    attributes = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', found.group(1)))
    return attributes | {"text": found.group(2)}


def visible_rows(dom: str) -> list[str]:
    rows = re.findall(r'<tr class="sample"( hidden="")?>(.*?)</tr>', dom, re.S)
    return [body for hidden, body in rows if not hidden]


# ---- tests -----------------------------------------------------------------------------------------------------------


def test_page_loads_with_thumbnails_and_both_models_side_by_side(built: Built, tmp_path: Path) -> None:
    page = built.out / "samples.html"
    assert 'href="samples.html"' in (built.out / "report.html").read_text()
    assert "[samples.html](samples.html)" in (built.out / "report.md").read_text()
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # opens from disk, nothing fetched
    data = page_json(page)
    assert data["models"] == list(MODELS)
    assert len(data["rows"]) == ROWS and data["notes"] == []
    # each distinct image is written once beside the page; these small ones are their own thumbnails (the browser
    # scales them), and each links to its image at full size
    assert len(data["images"]) == len(data["full"]) == len(set(data["full"])) == DISTINCT_IMAGES
    assert data["images"] == data["full"]
    for full in data["full"]:
        assert re.fullmatch(r"sample-figures/[0-9a-f]{24}\.(png|jpg)", full)
        with Image.open(built.out / full) as image:
            assert image.width * image.height <= SHOWN_AS_STORED_PX

    dom = chromium_dom(page.as_uri(), tmp_path / "profile")
    count = count_of(dom)
    assert count["text"] == f"{ROWS} of {ROWS} documents shown"
    assert dom.count('<a href="sample-figures/') == IMAGE_ELEMENTS
    assert count["images-drawn"] == str(IMAGE_ELEMENTS) and count["images-broken"] == "0"  # naturalWidth > 0
    assert dom.count('<img src="sample-figures/') == IMAGE_ELEMENTS
    assert re.search(r'<th class="model" data-model="0">model-a</th><th class="model" data-model="1">model-b</th>', dom)
    rows = visible_rows(dom)
    # GRAB pid 1 (grab_properties, doc 1): model-a right, model-b empty
    (pid1,) = [row for row in rows if "doc 1: pid 1<" in row]
    cells = re.findall(r'<td class="cell" data-model="(\d)">(.*?)</td>', pid1, re.S)
    assert [model for model, _ in cells] == ["0", "1"]
    assert '<div class="ok">correct</div>' in cells[0][1] and "answer: 2" in cells[0][1]
    assert '<div class="bad">wrong</div>' in cells[1][1] and "(empty)" in cells[1][1]
    assert "decided by: refused: empty output" in cells[1][1]  # the rule that gave the verdict, named


def test_filters_from_the_page_address(built: Built, tmp_path: Path) -> None:
    page = built.out / "samples.html"
    expected = {
        "task=grab_functions&correct=wrong": 1,  # pid 3: model-b's empty output
        "model=model-a&correct=wrong": 3,  # GRAB pid 0, SciFIBench ID 1, the bar count
        "method=unresolved": 3,  # model-b on SciFIBench IDs 0, 2 and 10
        "task=scifibench_cs_figure2caption&category=cs.LG": 2,  # IDs 1 and 3
        "model=model-b&correct=correct&task=mmsci_fig2cap": 0,  # model-b answers A, fig2cap's answer is B
        "correct=n%2Fa": 2,  # the captions: corpus-level metrics only
    }
    for number, (query, shown) in enumerate(expected.items()):
        dom = chromium_dom(f"{page.as_uri()}#{query}", tmp_path / f"profile{number}")
        assert count_of(dom)["shown"] == str(shown), query
        assert len(visible_rows(dom)) == shown, query
    dom = chromium_dom(f"{page.as_uri()}#model=model-b&method=unresolved", tmp_path / "model-b")
    rows = visible_rows(dom)
    assert len(rows) == 3 and all("decided by: refused: no answer stated" in row for row in rows)
    assert re.search(r'<th class="model" data-model="0" hidden="">model-a</th>', dom)  # model-a's column hidden
    assert all('<td class="cell" data-model="0" hidden="">' in row for row in rows)


def test_plot_twist_and_captioning_cells(built: Built) -> None:
    data = page_json(built.out / "samples.html")
    bars = [row for row in data["rows"] if row["t"] == "plot_twist_bar"]
    assert len(bars) == 5 and len({row["i"][0] for row in bars}) == 1  # one shared thumbnail
    (count,) = [row for row in bars if row["k"] == "count_bars"]
    assert count["c"]["0"]["a"] == str(int(count["e"]) + 1) and count["c"]["0"]["c"] is False
    assert count["c"]["0"]["m"] == "rule"
    assert count["c"]["1"]["d"] == "standard ✗, relaxed ✗, range ✗"
    captions = [row for row in data["rows"] if row["t"] == "mmsci_caption_image_only"]
    assert [row["e"] for row in captions] == ["the figure shows measured spectra under pressure"] * 2
    assert [row["c"]["0"]["o"] for row in captions] == [CAPTION_REPLY] * 2
    assert {row["c"]["1"]["r"] for row in captions} == {"empty output"}
    assert any(line.startswith("mmsci_caption_image_only / model-b: bleu4 0.0000") for line in data["metrics"])


def test_without_the_documents_the_samples_are_listed_and_the_page_says_why(built: Built, tmp_path: Path) -> None:
    results = tmp_path / "results"
    for source in (built.work / "results" / "model-a").rglob("*"):
        if source.name.endswith("_results.json") or "_samples_grab_" in source.name:
            target = results / source.relative_to(built.work / "results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    env = offline_env(tmp_path / "env")  # no SCIFIG_*_DATA, no hub access
    out = scifig_report([results], tmp_path / "report", env)
    data = page_json(out / "samples.html")
    assert len(data["rows"]) == 8 and data["images"] == []
    (note,) = data["notes"]
    assert note.startswith(
        "No images for grab_functions, grab_properties, grab_series, grab_transforms: documents could not be loaded "
        "(DataError: Hugging Face Hub dataset jonathan-roberts1/GRAB "
    )
    assert ": GRAB data could not be loaded (" in note  # the loader's own reason, then what to set
    assert (
        "set SCIFIG_GRAB_DATA=DIR to local data (`scifig curate grab --out DIR` builds it), or run "
        "`scifig demo` to try scifig offline" in note
    )
    dom = chromium_dom((out / "samples.html").as_uri(), tmp_path / "profile")
    assert count_of(dom)["shown"] == "8" and dom.count('<span class="na">no image</span>') == 8
    assert dom.count('<p class="note">No images for') == 1


def test_documents_of_other_data_are_not_shown_as_the_evaluated_ones(built: Built, tmp_path: Path) -> None:
    """GRAB data whose rows come in another order: grab_functions' documents 0-1 are now pids 0-1, not the logged
    pids 2-3, so no thumbnail of another question may appear."""
    results = tmp_path / "results"
    for source in (built.work / "results" / "model-a").rglob("*"):
        if source.name.endswith("_results.json") or source.name.endswith("_samples_grab_functions.jsonl"):
            target = results / source.relative_to(built.work / "results")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    reordered = [GRAB_ROWS[i] for i in (2, 3, 0, 1, 4, 5, 6, 7)]
    env = built.env | {"SCIFIG_GRAB_DATA": str(write_parquet(reordered, tmp_path / "other" / "GRAB.parquet"))}
    data = page_json(scifig_report([results], tmp_path / "report", env) / "samples.html")
    assert len(data["rows"]) == 2 and data["images"] == []
    assert data["notes"] == [
        "No images for grab_functions: the documents found are not the ones evaluated: document 0 has pid 0, the "
        "sample log 2."
    ]


# ---- size ------------------------------------------------------------------------------------------------------------

SIZE_SAMPLES = 200
PAGE_LIMIT = 25 * 1024 * 1024 * SIZE_SAMPLES // 2000
"""The page's budget, 25 MB for 2,000 samples, for :data:`SIZE_SAMPLES`: the page grows with its rows (each image is
a file beside it, never in it), so the budget per sample is the same at any count, and 200 samples -- four pages of
:data:`~scifig_tasks.report.samples.PAGE_ROWS` -- take a tenth of the time 2,000 did (drawing and writing the images).
Measured: about 1 kB a sample at 200 and at 2,000, against a budget of 13 kB."""


def base_charts() -> list[bytes]:
    """Twelve matplotlib figures (1200x900): heatmaps, noisy line plots with grids, colour-mapped scatter plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts = []
    for k in range(12):
        rng = np.random.default_rng(k)
        figure, axes = plt.subplots(figsize=(10, 7.5), dpi=120)
        if k % 3 == 0:
            axes.imshow(rng.normal(size=(90, 120)).cumsum(axis=1), cmap="viridis")
        elif k % 3 == 1:
            x = np.linspace(0, 10, 600)
            for j in range(4):
                axes.plot(x, np.sin(x * (j + 1) + k) + rng.normal(0, 0.1, x.size), label=f"series {j}")
            axes.legend()
            axes.grid(True)
        else:
            axes.scatter(rng.normal(size=1500), rng.normal(size=1500), c=rng.random(1500), s=8, cmap="plasma")
        axes.set_title(f"Figure {k}")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        plt.close(figure)
        charts.append(buffer.getvalue())
    return charts


class ChartDocs:
    """GRAB-schema documents whose distinct images (a base chart with the document's own markers) are drawn when
    a document is read, so 2,000 large images never sit in memory together."""

    def __init__(self, count: int) -> None:
        self.count, self.sizes = count, []
        self.charts = [Image.open(io.BytesIO(chart)).convert("RGB") for chart in base_charts()]

    column_names = ("pid", "question", "decoded_image")

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int | str) -> dict | list:
        if index == "pid":  # a column, as datasets.Dataset gives it
            return list(range(self.count))
        image = self.charts[index % len(self.charts)].copy()
        draw, rng = ImageDraw.Draw(image), np.random.default_rng(index)
        for _ in range(60):
            x, y = (int(v) for v in rng.integers(120, 1000, 2))
            draw.ellipse([x, y, x + 8, y + 8], fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
        draw.text((130, 40), f"sample {index}", fill=(0, 0, 0))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=1)
        self.sizes.append(buffer.tell())
        return {"pid": index, "question": f"[q{index}]", "decoded_image": {"bytes": buffer.getvalue(), "path": None}}


@pytest.mark.slow
def test_page_for_many_samples_with_large_distinct_images_stays_under_25_mb_per_2000(tmp_path: Path) -> None:
    """Sample logs in the lmms-eval format (one model, one GRAB task, :data:`SIZE_SAMPLES` documents, each with its
    own image of a few hundred kB; outputs up to 3,000 characters), then the page."""
    folder = tmp_path / "results" / "model"
    folder.mkdir(parents=True)
    results = {"results": {"grab_functions": {"accuracy,none": 0.5}}, "model_name": "model", "date": "1"}
    (folder / "1_results.json").write_text(json.dumps(results))
    with (folder / "1_samples_grab_functions.jsonl").open("w") as handle:
        for index in range(SIZE_SAMPLES):
            record = {"pid": index, "task": "function", "category": "Extrema", "complexity": 0, "correct": index % 2}
            record |= {"output_status": "ok", "judge": "not_used", "extracted": None}
            output = f"{index} " + "reasoning " * (300 if index % 10 == 0 else 3)
            prompt = f"[q{index}] What is the value of the y-intercept of the function? Give your answer as an integer."
            sample = {"doc_id": index, "target": str(index), "filtered_resps": [output], "doc_hash": "x"}
            handle.write(json.dumps(sample | {"accuracy": float(index % 2), "breakdown": record, "input": prompt}))
            handle.write("\n")
    docs = ChartDocs(SIZE_SAMPLES)
    page = write_samples_page(
        load_runs([tmp_path / "results"]), tmp_path / "out", lambda tasks: {"grab_functions": docs}
    )
    sizes = sorted(docs.sizes)
    assert len(sizes) == SIZE_SAMPLES and sizes[len(sizes) // 2] > 150_000  # realistic, large source images
    data = page_json(page)
    assert len(data["rows"]) == SIZE_SAMPLES and len(set(data["images"])) == SIZE_SAMPLES  # every image distinct
    assert page.stat().st_size < PAGE_LIMIT, page.stat().st_size
    assert all((page.parent / name).is_file() for name in data["images"])  # each image is a file beside the page
