"""GRAB's PNG encoder: lossless (the pixels, mode, size and dpi of matplotlib's ``savefig``), each row stored with
the PNG filter Up or Sub as documented in ``curation.grab.render``, files no larger than the former encoder's, the
same bytes on every call, and a valid chunk layout with ``pHYs``."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from curation.grab.plan import cached_plan, select
from curation.grab.render import draw_figure, encode_png, filtered_rows, release_figure, render_png

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


def filters_of(png: bytes, height: int, width: int) -> list[int]:
    """The PNG filter type of every row (the first byte of each decompressed scanline)."""
    data = zlib.decompress(b"".join(data for kind, data in chunks(png) if kind == b"IDAT"))
    return np.frombuffer(data, dtype=np.uint8).reshape(height, 1 + 4 * width)[:, 0].tolist()


def test_each_row_is_stored_with_up_or_sub_whichever_changes_fewer_pixels() -> None:
    line = [WHITE, RED, WHITE, WHITE]  # a vertical red line at x = 1
    rows = np.array([line, line, [GREY] * 4, line, line], dtype=np.uint8)  # and a horizontal grey one at y = 2
    png = encode_png(rows, 72)
    # Pixels changed by Up / Sub: row 0 (above it: zeros) 4 / 3, row 1 0 / -, the grey row 4 / 1, the line below
    # it 4 / 3, row 4 0 / - (rows that Up leaves almost unchanged are not tried with Sub).
    assert filters_of(png, 5, 4) == [1, 2, 1, 1, 2]
    assert np.array_equal(np.asarray(decode(png)), rows)


def test_large_images_span_several_idat_chunks_and_stay_exact() -> None:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(300, 200, 4), dtype=np.uint8)  # noise: ~240 kB compressed
    png = encode_png(pixels, 1000)
    layout = [kind for kind, _ in chunks(png)]
    assert layout[:2] == [b"IHDR", b"pHYs"] and layout[-1] == b"IEND"
    assert set(layout[2:-1]) == {b"IDAT"} and len(layout[2:-1]) > 1
    assert filters_of(png, 300, 200) == [2] * 300  # noise: Sub changes as many pixels as Up, so Up stays
    assert np.array_equal(np.asarray(decode(png)), pixels)
    assert decode(png).info["dpi"] == pytest.approx((1000, 1000), abs=0.01)


def test_rejects_a_buffer_that_is_not_rgba() -> None:
    with pytest.raises(ValueError, match="RGBA"):
        encode_png(np.zeros((2, 2, 3), dtype=np.uint8), 100)


@pytest.fixture(scope="module")
def graph_pixels() -> tuple[np.ndarray, float]:
    """A fixed-schema GRAB graph's Agg RGBA buffer at dpi 100 (600 x 500 px), copied, and its dpi."""
    canvas = draw_figure(select(cached_plan(0), None, 6)[2].params, 100)
    try:
        return np.array(canvas.buffer_rgba()), canvas.figure.dpi
    finally:
        release_figure(canvas)


def test_a_graph_is_no_larger_than_the_former_encoders(
    graph_pixels: tuple[np.ndarray, float],
) -> None:
    rgba, dpi = graph_pixels
    png = encode_png(rgba, dpi)
    former = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8, zlib.Z_RLE)  # Up or Sub, zlib Z_RLE
    former_idat = len(former.compress(filtered_rows(rgba)) + former.flush())
    idat = sum(len(data) for kind, data in chunks(png) if kind == b"IDAT")
    assert idat <= 1.03 * former_idat  # 0.64x here; libpng with filter Up on every row (the encoder before): 2.7x
    assert np.array_equal(np.asarray(decode(png)), rgba)


def test_the_same_buffer_gives_the_same_bytes_whatever_was_encoded_before(
    graph_pixels: tuple[np.ndarray, float],
) -> None:
    rgba, dpi = graph_pixels
    first = encode_png(rgba, dpi)
    encode_png(np.random.default_rng(1).integers(0, 256, size=rgba.shape, dtype=np.uint8), dpi)
    assert encode_png(rgba.copy(), dpi) == first
