"""A GRAB set just built by ``scifig curate grab`` is written to a VLMEvalKit TSV without decoding its images: the
builder vouches for the PNGs it encoded from opaque RGBA buffers (``scifig_tasks.core.checked_images``), in the datasets
cache, so a later process decodes none of them; a rendering with any transparency is not vouched for and is decoded
(and composited on white) as before. Every TSV image decodes, as VLMEvalKit decodes it, to its PNG's pixels."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest

from curation.grab import build, render
from curation.grab.plan import PlanItem, plan_grab
from curation.grab.questions import QUESTION_TYPES
from scifig_tasks.core import checked_images, data
from scifig_tasks.core.images import to_rgb
from scifig_tasks.vlmeval import tsv
from tests.harness.vlmeval import as_vlmeval_decodes

DPI = 20
LIMIT = 3
TRANSPARENT = 1
"""The graph (plan order) drawn with one transparent pixel."""
TYPES = ("properties/function_domain", "function/variance")
"""Two question types planned in a few milliseconds (the full composition takes seconds): a styled properties graph
and a fixed-schema function graph."""


def small_plan(seed: int = 0) -> tuple[PlanItem, ...]:
    return tuple(plan_grab(seed, [qtype for qtype in QUESTION_TYPES if qtype.key in TYPES]))


def test_a_built_grab_set_is_written_to_a_tsv_without_decoding_its_opaque_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hf"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))
    monkeypatch.setattr(checked_images, "_PASSED", {})
    drawn: list[int] = []
    draw = render.draw_figure

    def one_transparent_pixel(params: dict[str, Any], dpi: int) -> Any:
        canvas = draw(params, dpi)
        if len(drawn) == TRANSPARENT:
            np.asarray(canvas.buffer_rgba())[0, 0, 3] = 0
        drawn.append(1)
        return canvas

    monkeypatch.setattr(render, "draw_figure", one_transparent_pixel)
    monkeypatch.setattr(build, "cached_plan", small_plan)
    built = build.build_grab(tmp_path / "grab", limit=LIMIT, workers=1, dpi=DPI, progress=False)
    parquet = built.out / f"{build.SPLIT}.parquet"
    stored = [cell["bytes"] for cell in pq.read_table(parquet, columns=["decoded_image"])["decoded_image"].to_pylist()]
    assert built.rows == LIMIT and len(drawn) == LIMIT

    records = {path.stem: json.loads(path.read_text()) for path in (cache / checked_images.FOLDER).glob("*.json")}
    digests = [hashlib.sha256(png).hexdigest() for png in stored]
    assert sorted(records) == sorted(digest for position, digest in enumerate(digests) if position != TRANSPARENT)
    assert all(record["by"] == build.VOUCHER and record["extension"] == "png" for record in records.values())

    # the TSV is written by another process: only the datasets cache's records are known there
    monkeypatch.setattr(checked_images, "_PASSED", {})
    monkeypatch.setattr(data, "_LOADED", {})
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(parquet))
    decoded: list[Any] = []
    decode = tsv.decoded_pixels
    monkeypatch.setattr(tsv, "decoded_pixels", lambda cell: decoded.append(cell) or decode(cell))

    path, count = tsv.write_tsv("grab", tmp_path / "tsv")

    assert count == LIMIT
    assert [cell["bytes"] for cell in decoded] == [stored[TRANSPARENT]]  # the transparent one alone
    written = list(tsv.read_tsv(path)["image"])
    for position, (cell, png) in enumerate(zip(written, stored, strict=True)):
        assert as_vlmeval_decodes(cell) == to_rgb({"bytes": png, "path": None}).tobytes()
        assert (base64.b64decode(cell) == png) is (position != TRANSPARENT)  # composited on white where transparent
