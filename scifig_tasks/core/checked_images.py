"""Stored image bytes known to be usable as they are in a VLMEvalKit TSV, remembered by their SHA-256.

The rule (:func:`usable_as_stored`): VLMEvalKit decodes a TSV image with ``decode_base64_to_image``, which converts
RGBA, grey-alpha and palette images to RGB by dropping the alpha channel without compositing. So stored bytes go to
VLMEvalKit as they are only when they decode strictly (damaged pixel data stops the export) and dropping their alpha
gives what compositing on white gives: RGB, grey or palette pixels without transparency, or an alpha channel that is
opaque everywhere. Every other image is converted by the TSV writer (``scifig_tasks.vlmeval.tsv``).

A pass depends on the bytes alone (by their SHA-256), on this rule (:data:`RULE_VERSION`) and on the decoder (Pillow's
version), so it is kept for the process and in the datasets cache (``scifig_tsv_images/`` under
``datasets.config.HF_DATASETS_CACHE``, one JSON record per digest): the datasets of one source share their images, and
a TSV rewritten for another folder, a changed source file or in a later process holds mostly the same images. A pass
is recorded either by the TSV writer once it decoded the bytes (``by``: :data:`DECODED`) or by a builder that encoded
the bytes itself from pixels it holds and checked them under the same rule (e.g. ``scifig curate grab``: an RGBA PNG
whose alpha is 255 everywhere); the record names who vouched. Only passes are kept: damaged data and converted images
are decoded each time they are written, and bytes that change no longer match their record.

This module imports no VLMEvalKit and nothing heavy at import time (``datasets`` only where a record is read or
written), so a dataset builder can record passes cheaply.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import PIL

if TYPE_CHECKING:
    from PIL import Image

RULE_VERSION = 1
"""Bumped whenever :func:`usable_as_stored` changes, so recorded passes are no longer trusted."""

FOLDER = "scifig_tsv_images"
"""The folder of the pass records, under the datasets cache."""

DECODED = "decoded"
"""Who vouched for a pass the TSV writer recorded after decoding the bytes strictly."""

EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "GIF": "gif", "BMP": "bmp", "TIFF": "tif", "WEBP": "webp"}
"""Pillow's format name -> the file extension written for stored bytes of that format (no other format is written
as stored)."""

_PASSED: dict[str, str] = {}
"""SHA-256 of stored bytes that passed, seen in this process -> the file extension written."""


def usable_as_stored(image: Image.Image) -> bool:
    """Whether a decoded image's stored file can go to VLMEvalKit as it is: RGB, grey or palette pixels without
    transparency, or RGBA / grey-alpha pixels whose alpha is opaque everywhere (VLMEvalKit's ``convert("RGB")`` then
    gives what compositing on white gives). Any other image — transparency, 16-bit, CMYK — is converted."""
    if image.mode in ("RGB", "L"):
        return True
    if image.mode == "P":
        return "transparency" not in image.info
    return image.mode in ("RGBA", "LA") and image.getchannel("A").getextrema() == (255, 255)


def _record(digest: str) -> Path:
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / FOLDER / f"{digest}.json"


def _keyed_by() -> dict[str, Any]:
    """What a pass holds under: this rule and this decoder."""
    return {"rule": RULE_VERSION, "pillow": PIL.__version__}


def passed(digest: str) -> str | None:
    """The file extension of stored bytes (by their SHA-256, hex) that passed before, in this process or recorded by
    another under the same rule and decoder; None when they were not seen (an unreadable record is no record)."""
    known = _PASSED.get(digest)
    if known is not None:
        return known
    try:
        record = json.loads(_record(digest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    extension = record.get("extension") if isinstance(record, dict) else None
    if extension not in EXTENSIONS.values() or {key: record.get(key) for key in _keyed_by()} != _keyed_by():
        return None
    _PASSED[digest] = extension
    return extension


def remember_passed(digest: str, extension: str, *, by: str = DECODED) -> None:
    """Keep a pass of the stored bytes whose SHA-256 (hex) is ``digest``, written with ``extension``, for this process
    and later ones, naming who vouched for it (``by``). A cache folder that cannot be written only costs a decode."""
    if extension not in EXTENSIONS.values():
        raise ValueError(f"{extension!r} is not an extension written as stored ({', '.join(EXTENSIONS.values())})")
    _PASSED[digest] = extension
    path = _record(digest)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".partial", delete=False, encoding="utf-8") as f:
            json.dump({"extension": extension, **_keyed_by(), "by": by}, f)
        os.replace(f.name, path)
    except OSError:
        return


def forget() -> None:
    """Forget this process's passes (the records in the datasets cache stay)."""
    _PASSED.clear()
