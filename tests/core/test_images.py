"""Image cells: decoded on demand, and uploaded to API models as their stored bytes (same pixels, no re-encode)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from lmms_eval.models.model_utils.media_encoder import encode_image_to_base64
from PIL import Image, ImageFile

from scifig_tasks.core import images
from scifig_tasks.core.errors import DataError
from scifig_tasks.core.image_cells import image_problem
from scifig_tasks.core.images import for_upload, stored_bytes, to_rgb
from tests.harness.bad_images import broken_stream, truncated_stream


def png_bytes(mode: str, colour: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, (40, 30), colour).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def test_lmms_eval_png_encoding_sends_the_stored_bytes() -> None:
    data = png_bytes("RGBA", (10, 20, 30, 255))
    image = for_upload({"bytes": data, "path": None})

    encoded = encode_image_to_base64(image, image_format="PNG")

    assert base64.b64decode(encoded) == data
    assert Image.open(io.BytesIO(base64.b64decode(encoded))).getpixel((0, 0)) == (10, 20, 30, 255)


def test_other_formats_and_options_are_encoded_by_pil() -> None:
    data = png_bytes("RGB", (200, 100, 0))
    image = for_upload({"bytes": data, "path": None})

    jpeg = base64.b64decode(encode_image_to_base64(image, image_format="JPEG", convert_rgb=True, quality=90))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=9)

    assert jpeg[:2] == b"\xff\xd8"
    assert buffer.getvalue() != data and Image.open(buffer).getpixel((0, 0)) == (200, 100, 0)


def test_to_rgb_composites_transparency_on_white() -> None:
    cell = {"bytes": png_bytes("RGBA", (0, 0, 0, 0)), "path": None}
    assert to_rgb(cell).getpixel((0, 0)) == (255, 255, 255)
    assert to_rgb({"bytes": png_bytes("RGB", (1, 2, 3)), "path": None}).getpixel((5, 5)) == (1, 2, 3)


@pytest.mark.parametrize("lenient", [False, True], ids=["pil-default", "lmms-eval-lenient"])
@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (broken_stream, "image bytes are not a readable image (OSError: broken data stream when reading image file)"),
        (truncated_stream, "image bytes are not a readable image (OSError: image file is truncated"),
    ],
    ids=["broken", "truncated"],
)
def test_damaged_pixel_data_is_found_by_decoding(damage, expected: str, lenient: bool, monkeypatch) -> None:
    # lmms-eval sets LOAD_TRUNCATED_IMAGES = True at import: PIL would then pad the image with grey
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", lenient)
    damaged = damage(png_bytes("RGB", (9, 9, 9)))
    with Image.open(io.BytesIO(damaged)) as image:
        image.verify()  # the header and every chunk checksum are fine
    assert image_problem({"bytes": png_bytes("RGB", (9, 9, 9)), "path": None}) is None

    problem = image_problem({"bytes": damaged, "path": None})

    assert problem is not None and problem.startswith(expected), problem
    assert ImageFile.LOAD_TRUNCATED_IMAGES is lenient  # the setting is restored


@pytest.mark.parametrize("decode", [to_rgb, for_upload], ids=["pixel-model", "api-model"])
def test_a_request_image_whose_pixels_are_broken_is_refused_strictly(decode, monkeypatch) -> None:
    """Under lmms-eval's lenient setting PIL would pad the image with grey: the request decodes strictly and raises;
    bytes from no loaded source are named as such."""
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    # the damaged bytes belong to no loaded dataset: nothing for the error's file/row lookup to scan (the datasets
    # earlier tests left loaded would make each refusal a scan of all of them)
    monkeypatch.setattr(images, "_SOURCES", [])
    damaged = {"bytes": truncated_stream(png_bytes("RGB", (9, 9, 9))), "path": None}

    with pytest.raises(DataError) as caught:
        decode(damaged)

    assert caught.value.origin == "an image not among the data loaded in this process"
    assert caught.value.problem.startswith("image bytes are not a readable image (OSError: image file is truncated")
    assert decode({"bytes": png_bytes("RGB", (9, 9, 9)), "path": None}).size == (40, 30)


def test_strict_decoding_in_many_threads_refuses_every_damaged_image_and_restores_the_setting(monkeypatch) -> None:
    """Requests are built in several threads: each strict decode stays strict, and lmms-eval's lenient setting is
    what remains afterwards."""
    import threading

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    # the damaged bytes belong to no loaded dataset: nothing for the error's file/row lookup to scan (the datasets
    # earlier tests left loaded would make each refusal a scan of all of them)
    monkeypatch.setattr(images, "_SOURCES", [])
    damaged = {"bytes": truncated_stream(png_bytes("RGB", (9, 9, 9))), "path": None}
    fine = {"bytes": png_bytes("RGB", (9, 9, 9)), "path": None}
    accepted: list[int] = []

    def build_requests() -> None:
        for _ in range(200):
            with pytest.raises(DataError):
                to_rgb(damaged)
            to_rgb(fine)

    def recording_failures() -> None:
        try:
            build_requests()
        except BaseException:  # pytest.raises failing inside a thread: a damaged image decoded leniently
            accepted.append(1)

    threads = [threading.Thread(target=recording_failures) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert accepted == []
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True


def test_stored_bytes_are_the_cells_bytes_else_its_files(tmp_path: Path) -> None:
    data = png_bytes("RGB", (4, 5, 6))
    file = tmp_path / "figure.png"
    file.write_bytes(data)
    assert stored_bytes({"bytes": data, "path": "elsewhere.png"}) == data
    assert stored_bytes({"bytes": bytearray(data), "path": None}) == data
    assert stored_bytes({"bytes": None, "path": str(file)}) == data
    # no bytes to give: a decoded image, an empty cell, empty bytes (the path is then not read), not a cell
    with Image.open(io.BytesIO(data)) as image:
        assert stored_bytes(image) is None
    assert stored_bytes({"bytes": None, "path": None}) is None
    assert stored_bytes({"bytes": b"", "path": str(file)}) is None
    assert stored_bytes("figure.png") is None
    with pytest.raises(OSError):
        stored_bytes({"bytes": None, "path": str(tmp_path / "missing.png")})
