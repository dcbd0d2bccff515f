"""Full-size synthetic data of each built-in benchmark for ``tests/perf/bench_report.py``: as many questions as each
benchmark's description publishes (its ``report.published`` sizes), with a distinct drawn figure per image, in the
local layout its data setting reads; the settings that point at it.

Sizes: GRAB 2,170 questions (the generator, :func:`tests.perf.bench_report.grab_data`); SciFIBench four splits of
500 (``SPLIT_QUESTIONS``; Caption→Figure questions carry five images); Plot Twist the paper's 139 charts and every
robustness variant (``scifig curate plot-twist``'s defaults) with the ChartQA subset built from its bar questions;
CharXiv the whole validation set (1,000 charts: 4,000 descriptive and 1,000 reasoning questions, the authors' files
of ``tests/fixtures/charxiv``); MMSci, whose description publishes no size, :data:`MMSCI_QUESTIONS` questions per
setting and :data:`MMSCI_CAPTIONS` figures to caption, over the paper's five categories and many subjects.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw

IMAGE_SIZE = (640, 480)
"""Every drawn figure's size: a chart as a paper shows it (the sample viewer writes each distinct one once)."""
MMSCI_QUESTIONS = 1000
MMSCI_CAPTIONS = 1000
SCIFIBENCH_CATEGORIES = {
    "CS": ("cs.CV", "cs.LG", "cs.CL", "cs.AI", "cs.RO", "cs.NI", "cs.IT", "cs.DS", "cs.CR", "cs.SY", "cs.HC", "cs.DC"),
    "General": ("physics.optics", "math.OC", "q-bio.NC", "eess.SP", "stat.ML", "astro-ph.GA", "cond-mat", "q-fin.ST"),
}
MMSCI_CATEGORIES = {
    "Physical sciences": ("Materials science", "Physics", "Chemistry", "Optics and photonics", "Nanoscience"),
    "Biological sciences": ("Cell biology", "Neuroscience", "Microbiology", "Genetics", "Immunology", "Ecology"),
    "Earth and environmental sciences": ("Climate sciences", "Geology", "Ocean sciences", "Environmental sciences"),
    "Health sciences": ("Cancer", "Cardiology", "Diseases", "Medical research"),
    "Scientific community and society": ("Energy", "Engineering", "Mathematics and computing"),
}


def figure_bytes(seed: int, kind: str = "PNG", size: tuple[int, int] = IMAGE_SIZE) -> bytes:
    """A chart-like drawing distinct for each ``seed`` (axes, a few lines and bars in colour), encoded as ``kind``."""
    rng = random.Random(seed)
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    width, height = size
    draw.line([(40, 20), (40, height - 40), (width - 20, height - 40)], fill="black", width=2)
    for bar in range(rng.randint(3, 8)):
        top = rng.randint(60, height - 60)
        left = 60 + bar * 60
        draw.rectangle([left, top, left + 40, height - 41], fill=tuple(rng.randint(0, 255) for _ in range(3)))
    for _ in range(rng.randint(1, 3)):
        points = [(x, rng.randint(30, height - 50)) for x in range(50, width - 20, 40)]
        draw.line(points, fill=tuple(rng.randint(0, 200) for _ in range(3)), width=2)
    draw.text((width // 2 - 40, height - 30), f"figure {seed}", fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format=kind, **({"quality": 85} if kind == "JPEG" else {}))
    return buffer.getvalue()


def scifibench(root: Path) -> dict[str, str]:
    """The four published splits, :data:`SPLIT_QUESTIONS` questions each, in the Hub's columns."""
    import datasets

    from scifig_tasks.benchmarks.scifibench.description import SPLIT_QUESTIONS
    from tests.harness.scifibench_data import FEATURES, SAMPLE_SPLITS, c2f_caption, options_for, write_splits

    splits = {}
    for number, (split, kind) in enumerate(SAMPLE_SPLITS.items()):
        categories = SCIFIBENCH_CATEGORIES[split.split("_")[0]]
        rows = []
        for offset in range(SPLIT_QUESTIONS):
            qid = number * SPLIT_QUESTIONS + offset
            if kind == "f2c":
                text, options, count = "Which caption best matches the image?", options_for(qid), 1
            else:
                text = f"Caption: {c2f_caption(qid)} Which image best matches the caption?"
                options, count = [f"{chr(65 + i)}) image{i}" for i in range(5)], 5
            images = [{"bytes": figure_bytes(qid * 5 + position), "path": None} for position in range(count)]
            answer, category = "ABCDE"[qid % 5], categories[qid % len(categories)]
            rows.append(
                {"ID": qid, "Question": text, "Options": options, "Answer": answer, "Category": category}
                | {"Images": images}
            )
        splits[split] = datasets.Dataset.from_list(rows, features=FEATURES)
    return {"SCIFIG_SCIFIBENCH_DATA": str(write_splits(splits, root))}


def plot_twist(root: Path) -> dict[str, str]:
    """``scifig curate plot-twist``'s default set (the paper's charts, every robustness variant) and the ChartQA
    subset the parity test builds from its bar questions."""
    import pyarrow.parquet as pq

    from curation.plot_twist.build import build_plot_twist
    from tests.lmms_eval.test_plot_twist_lmms_cli import write_chartqa

    built = build_plot_twist(root / "charts", progress=False)
    rows = pq.read_table(str(built.out / "test.parquet")).to_pylist()
    chartqa, _ = write_chartqa(rows, root / "chartqa.parquet")
    return {"SCIFIG_PLOT_TWIST_DATA": str(built.out), "SCIFIG_PLOT_TWIST_CHARTQA_DATA": str(chartqa)}


def mmsci(root: Path) -> dict[str, str]:
    """:data:`MMSCI_QUESTIONS` questions per setting and :data:`MMSCI_CAPTIONS` figures to caption (test split), a
    few of each in the dev split."""
    import datasets

    from scifig_tasks.benchmarks.mmsci import rules
    from tests.harness import mmsci_data

    subjects = [(category, subject) for category, names in MMSCI_CATEGORIES.items() for subject in names]
    for split, questions, captions in (("test", MMSCI_QUESTIONS, MMSCI_CAPTIONS), ("dev", 3, 3)):
        rows = []
        for setting in rules.SETTINGS:
            for _ in range(questions):
                row = len(rows)
                category, subject = subjects[row % len(subjects)]
                question = mmsci_data.Mcq(setting, rules.LETTERS[row % 4], category, subject)
                rows.append(mmsci_data.mcq_row(row, question) | {"image": {"bytes": figure_bytes(row), "path": None}})
        (root / "mcq").mkdir(parents=True, exist_ok=True)
        target = root / "mcq" / f"{split}.parquet"
        datasets.Dataset.from_list(rows, features=mmsci_data.MCQ_FEATURES).to_parquet(str(target))
        rows = []
        for row in range(captions):
            category, subject = subjects[row % len(subjects)]
            words = " ".join(mmsci_data.TINY_VOCAB[5 + (row * step) % 26] for step in range(1, 24))
            item = mmsci_data.Caption(f"Figure {row}: {words}.", f"We report sample {row}. {words}.", category, subject)
            image = {"bytes": figure_bytes(100_000 + row), "path": None}
            rows.append(mmsci_data.caption_row(row, item) | {"image": image})
        (root / "captioning").mkdir(parents=True, exist_ok=True)
        target = root / "captioning" / f"{split}.parquet"
        datasets.Dataset.from_list(rows, features=mmsci_data.CAPTION_FEATURES).to_parquet(str(target))
    return {"SCIFIG_MMSCI_DATA": str(root)}


def charxiv_full(root: Path) -> dict[str, str]:
    """The authors' validation files, every chart, each with a drawn JPEG."""
    from scifig_tasks.benchmarks.charxiv.source import CHARXIV_DESCRIPTIVE
    from tests.harness.charxiv_full_data import authors_file, write_layout

    folder = write_layout(root)
    for key in authors_file("descriptive"):
        (folder / "images" / f"{key}.jpg").write_bytes(figure_bytes(int(key), "JPEG"))
    return {CHARXIV_DESCRIPTIVE.env_var: str(folder)}


BUILDERS: dict[str, Callable[[Path], dict[str, str]]] = {
    "scifibench": scifibench,
    "plot_twist": plot_twist,
    "mmsci": mmsci,
    "charxiv_full": charxiv_full,
}
"""Benchmark -> its full-size data builder (GRAB's is its generator, in ``bench_report.grab_data``)."""


def built(name: str, root: Path) -> dict[str, str]:
    """The settings of ``name``'s full-size data under ``root``, built there once (``settings.json`` says so)."""
    saved = root / "settings.json"
    if saved.is_file():
        return json.loads(saved.read_text())
    settings = BUILDERS[name](root)
    saved.write_text(json.dumps(settings))
    return settings
