"""``samples.html`` of many documents: one page of rows at a time, the page number in the address with the filters,
and the figures written once beside the page (small ones shown as stored, a large one through a thumbnail file).

Two models' GRAB sample logs over 120 documents, written here; the documents come from a loader given to
``write_samples_page`` (no lmms-eval), rendered in headless Chromium.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from scifig_tasks.report.runs import load_runs
from scifig_tasks.report.sample_figures import THUMBNAIL_PX
from scifig_tasks.report.samples import PAGE_ROWS, write_samples_page
from tests.report.test_report_samples import chromium_dom, count_of, page_json, visible_rows

DOCUMENTS = 120
LARGE = 0
"""The document whose figure has more pixels than a page shows as stored."""


def correct(model: str, doc: int) -> bool:
    return doc % 2 == 0 if model == "model-a" else doc % 5 == 0


def figure(doc: int) -> bytes:
    size = (1800, 1200) if doc == LARGE else (48, 32)
    image = Image.new("RGB", size, (doc, 255 - doc, (7 * doc) % 256))
    ImageDraw.Draw(image).line([(0, 0), size], fill=(0, 0, 0), width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, bytes]]:
    root = tmp_path_factory.mktemp("pages")
    for model in ("model-a", "model-b"):
        folder = root / "results" / model
        folder.mkdir(parents=True)
        results = {"results": {"grab_functions": {"accuracy,none": 0.5}}, "model_name": model, "date": "1"}
        (folder / "1_results.json").write_text(json.dumps(results))
        lines = []
        for doc in range(DOCUMENTS):
            right = correct(model, doc)
            record = {"pid": doc, "task": "function", "category": "Extrema", "correct": int(right)}
            record |= {"output_status": "ok", "judge": "not_used", "extracted": None}
            output = str(doc) if right else "-1"
            sample = {"doc_id": doc, "target": str(doc), "filtered_resps": [output], "input": f"[q{doc}]"}
            lines.append(json.dumps(sample | {"accuracy": float(right), "breakdown": record}))
        (folder / "1_samples_grab_functions.jsonl").write_text("\n".join(lines) + "\n")
    figures = {doc: figure(doc) for doc in range(DOCUMENTS)}
    docs = [{"pid": doc, "decoded_image": {"bytes": figures[doc], "path": None}} for doc in range(DOCUMENTS)]
    written = write_samples_page(load_runs([root / "results"]), root / "out", lambda tasks: {"grab_functions": docs})
    return written, figures


def test_figures_are_written_once_and_a_large_one_gets_a_thumbnail(page: tuple[Path, dict[int, bytes]]) -> None:
    written, figures = page
    data = page_json(written)
    rows = {int(row["l"].split(":")[0].removeprefix("doc ")): row for row in data["rows"]}
    for doc, stored in figures.items():
        (index,) = rows[doc]["i"]
        assert (written.parent / data["full"][index]).read_bytes() == stored  # the stored bytes, as they are
        if doc != LARGE:
            assert data["images"][index] == data["full"][index]
    (index,) = rows[LARGE]["i"]
    assert re.fullmatch(r"sample-figures/[0-9a-f]{24}\.thumb\.(jpg|png)", data["images"][index])
    with Image.open(written.parent / data["images"][index]) as thumb:
        assert max(thumb.size) == THUMBNAIL_PX
    files = sorted((written.parent / "sample-figures").iterdir())
    assert len(files) == DOCUMENTS + 1
    before = {path.name: path.stat().st_mtime_ns for path in files}
    html = written.read_text(encoding="utf-8")
    again = write_samples_page(
        load_runs([written.parent.parent / "results"]),
        written.parent,
        lambda tasks: {
            "grab_functions": [{"pid": d, "decoded_image": {"bytes": b, "path": None}} for d, b in figures.items()]
        },
    )
    assert again.read_text(encoding="utf-8") == html  # the same page, its figures' files kept as they were
    assert {path.name: path.stat().st_mtime_ns for path in (written.parent / "sample-figures").iterdir()} == before


def test_pages_keep_the_filters_and_show_documents_past_the_first_page(
    page: tuple[Path, dict[int, bytes]], tmp_path: Path
) -> None:
    written, _ = page
    wrong_b = [doc for doc in range(DOCUMENTS) if not correct("model-b", doc)]  # 96 documents
    dom = chromium_dom(f"{written.as_uri()}#model=model-b&correct=wrong&page=2", tmp_path / "profile")
    count = count_of(dom)
    assert count["shown"] == str(len(wrong_b)) and count["total"] == str(DOCUMENTS)
    rows = visible_rows(dom)
    shown = [int(re.search(r'<div class="meta">doc (\d+):', row).group(1)) for row in rows]
    assert shown == wrong_b[PAGE_ROWS:]  # the second page: documents 51-96 of those matching
    assert all('<td class="cell" data-model="0" hidden="">' in row for row in rows)  # model-a's column hidden
    assert f"documents 51–{len(wrong_b)} of {len(wrong_b)} (page 2 of 2)" in dom
    assert dom.count('<img src="sample-figures/') == len(rows)
