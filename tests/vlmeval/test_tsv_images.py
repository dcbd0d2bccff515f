"""The images of a VLMEvalKit TSV: each decodes, as VLMEvalKit decodes it, to the pixels of its PNG (composited on
white where it has transparency); the stored bytes are written as they are once they passed, and bytes that passed
are not decoded again, in this process or a later one. The rows are written as pandas wrote them, byte for byte."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import datasets
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from scifig_tasks.core import checked_images, data
from scifig_tasks.core.images import to_rgb
from scifig_tasks.vlmeval import tsv
from tests.harness.grab_data import Row, records, write_records
from tests.harness.vlmeval import as_vlmeval_decodes


def png(mode: str, alpha: int = 255) -> bytes:
    """A figure with a line across it; RGBA with the background's alpha ``alpha`` (255: as matplotlib saves one)."""
    image = Image.new(mode, (60, 40), (255, 255, 255, alpha) if mode == "RGBA" else (255, 255, 255))
    ImageDraw.Draw(image).line([(0, 5), (59, 30)], fill=(0, 0, 255, 255) if mode == "RGBA" else (0, 0, 255), width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_tsv_images_decode_to_their_pixels_and_bytes_that_passed_are_not_decoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(data, "_LOADED", {})
    monkeypatch.setattr(checked_images, "_PASSED", {})
    pngs = [png("RGBA"), png("RGB"), png("RGBA", alpha=0)]  # opaque alpha, no alpha, a transparent background
    rows = records([Row("properties", "3"), Row("function", "4"), Row("series", "5")])
    for row, stored in zip(rows, pngs, strict=True):
        row["decoded_image"] = {"bytes": stored, "path": None}
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(write_records(rows, tmp_path / "grab" / "GRAB.parquet")))
    decoded: list[int] = []
    decode = tsv.decoded_pixels

    def counted(cell):
        decoded.append(1)
        return decode(cell)

    monkeypatch.setattr(tsv, "decoded_pixels", counted)

    path, count = tsv.write_tsv("grab", tmp_path / "a")

    assert count == 3 and len(decoded) == 3
    cells = list(tsv.read_tsv(path)["image"])
    for cell, stored in zip(cells, pngs, strict=True):
        assert as_vlmeval_decodes(cell) == to_rgb({"bytes": stored, "path": None}).tobytes()
    written = [base64.b64decode(cell) for cell in cells]
    assert written[:2] == pngs[:2]  # the PNG's own bytes, not a re-encoding
    assert written[2] != pngs[2] and Image.open(io.BytesIO(written[2])).mode == "RGB"  # composited on white
    passes = [json.loads(path.read_text()) for path in (tmp_path / "hf" / checked_images.FOLDER).glob("*.json")]
    assert [record["by"] for record in passes] == [checked_images.DECODED] * 2  # the passes, found by decoding

    # another dataset of the same images: only the converted image is decoded again
    decoded.clear()
    paper, _ = tsv.write_tsv("grab_paper", tmp_path / "a")
    assert len(decoded) == 1 and paper.read_bytes() == path.read_bytes()
    # a later process finds the passes in the datasets cache
    monkeypatch.setattr(checked_images, "_PASSED", {})
    decoded.clear()
    later, _ = tsv.write_tsv("grab", tmp_path / "b")
    assert len(decoded) == 1 and later.read_bytes() == path.read_bytes()
    # a record written under another rule or decoder is no pass
    monkeypatch.setattr(checked_images, "_PASSED", {})
    monkeypatch.setattr(checked_images, "RULE_VERSION", checked_images.RULE_VERSION + 1)
    decoded.clear()
    tsv.write_tsv("grab", tmp_path / "c")
    assert len(decoded) == 3


def test_rows_are_written_as_pandas_wrote_them() -> None:
    """The quoting of pandas' ``to_csv(sep="\\t", index=False, lineterminator="\\r\\n")`` (Python's csv writer),
    which wrote the TSV files before: tabs, quotes, carriage returns and line feeds quoted, a missing cell empty."""
    rows = [
        {"index": "0", "image": "iVBORw0KGgo=", "question": 'a "quoted"\tword', "answer": "2.50"},
        {"index": "1", "image": "iVBORw0KGgo=", "question": "line\rbreak\r\nand\nmore", "extra": "é ü"},
        {"index": "2", "image": "", "question": " ", "answer": ""},
    ]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    pd.DataFrame(rows, dtype=str).to_csv(buffer, sep="\t", index=False, lineterminator="\r\n")

    written = tsv.tsv_line(columns) + "".join(tsv.tsv_line([row.get(column) for column in columns]) for row in rows)

    assert written == buffer.getvalue()
    assert tsv.tsv_line([""]) == '""\r\n' and tsv.tsv_line([]) == "\r\n"
