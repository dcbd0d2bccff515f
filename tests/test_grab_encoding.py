"""GRAB's PNG encoder: lossless (the pixels, mode, size and dpi of matplotlib's ``savefig``), the PNG filters chosen
per row as documented in ``curation.grab.render``, and a valid chunk layout."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from curation.grab.plan import cached_plan, select
from curation.grab.render import draw_figure, encode_png, filtered_rows, render_png

DPI = 30
WHITE = (255, 255, 255, 255)
RED = (214, 39, 40, 255)
GREY = (176, 176, 176, 255)


def decode(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + data)
        out.append((kind, data))
        at += 12 + length
    return out


@pytest.mark.parametrize("index", [0, 1, 2, 4, 5])  # properties x 2 (random styles), function, series, transform
def test_generated_graphs_decode_to_savefigs_pixels(index: int) -> None:
    item = select(cached_plan(0), None, 6)[index]
    canvas = draw_figure(item.params, DPI)
    reference = io.BytesIO()
    canvas.figure.savefig(reference, format="png", dpi=DPI, metadata={"Software": None})  # matplotlib's default path
    expected, got = decode(reference.getvalue()), decode(render_png(item.params, DPI))
    assert (got.format, got.mode, got.size) == (expected.format, expected.mode, expected.size)
    assert got.mode == "RGBA" and got.info == expected.info and "dpi" in got.info and "Software" not in got.info
    assert np.array_equal(np.asarray(got), np.asarray(expected))


def test_a_literal_image_round_trips_with_the_literal_header() -> None:
    pixels = np.array(
        [[WHITE, RED, (0, 0, 0, 0)], [(1, 2, 3, 4), (250, 251, 252, 253), (0, 0, 0, 255)]], dtype=np.uint8
    )
    png = encode_png(pixels, 100)
    layout = chunks(png)
    assert [kind for kind, _ in layout] == [b"IHDR", b"pHYs", b"IDAT", b"IEND"]
    assert layout[0][1] == b"\x00\x00\x00\x03\x00\x00\x00\x02\x08\x06\x00\x00\x00"  # 3 x 2, 8 bits, RGBA
    assert layout[1][1] == b"\x00\x00\x0f\x61\x00\x00\x0f\x61\x01"  # 100 dpi = 3937 px/m, unit metre
    image = decode(png)
    assert image.mode == "RGBA" and image.size == (3, 2)
    assert image.getpixel((1, 0)) == RED and image.getpixel((2, 0)) == (0, 0, 0, 0)
    assert image.getpixel((0, 1)) == (1, 2, 3, 4) and image.getpixel((1, 1)) == (250, 251, 252, 253)
    assert image.info["dpi"] == pytest.approx((100, 100), abs=0.01)


def test_rows_use_up_or_sub_whichever_changes_fewer_pixels() -> None:
    line = [WHITE, RED, WHITE, WHITE]  # a vertical red line at x = 1
    rows = [line, line, [GREY] * 4, line, line]  # and a horizontal grey one at y = 2
    filtered = filtered_rows(np.array(rows, dtype=np.uint8))
    assert filtered.shape == (5, 17)
    # Row 0: Up would keep 4 non-zero pixels, Sub 3 (first pixel, red, white after red). Rows 1 and 4 repeat the row
    # above (Up: 0). Row 2 is uniform (Sub: only its first pixel); row 3 differs from row 2 everywhere.
    assert filtered[:, 0].tolist() == [1, 2, 1, 1, 2]
    assert filtered[0, 1:].tolist() == [255, 255, 255, 255, 215, 40, 41, 0, 41, 216, 215, 0, 0, 0, 0, 0]
    assert filtered[1, 1:].tolist() == [0] * 16 and filtered[4, 1:].tolist() == [0] * 16
    assert filtered[2, 1:].tolist() == [176, 176, 176, 255] + [0] * 12
    png = encode_png(np.array(rows, dtype=np.uint8), 72)
    assert np.array_equal(np.asarray(decode(png)), np.array(rows, dtype=np.uint8))


def test_sub_is_tried_only_where_over_a_32nd_of_the_pixels_differ_from_above() -> None:
    pixels = np.full((3, 64, 4), 255, dtype=np.uint8)
    pixels[0, :2] = GREY  # row 1 differs from row 0 in 2 pixels (2/64 = 1/32: not over), Sub would change only 1
    pixels[2, :3] = GREY  # row 2 differs from row 1 in 3 pixels (over 1/32), Sub changes 2
    assert filtered_rows(pixels)[:, 0].tolist() == [1, 2, 1]
    assert np.array_equal(np.asarray(decode(encode_png(pixels, 72))), pixels)


def test_large_images_span_several_idat_chunks_and_stay_exact() -> None:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(300, 200, 4), dtype=np.uint8)  # noise: ~240 kB compressed
    png = encode_png(pixels, 1000)
    idat = [data for kind, data in chunks(png) if kind == b"IDAT"]
    assert len(idat) == 4 and [len(data) for data in idat[:3]] == [65536] * 3
    assert np.array_equal(np.asarray(decode(png)), pixels)


def test_rejects_a_buffer_that_is_not_rgba() -> None:
    with pytest.raises(ValueError, match="RGBA"):
        encode_png(np.zeros((2, 2, 3), dtype=np.uint8), 100)
