"""The sample viewer's figures: each distinct image written once beside the page, named by its content, with a
thumbnail file for a large one (:class:`FigureFiles`), and the page's list of them (:class:`Thumbnails`); data URIs
when the page has no folder.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scifig_tasks.core.images import check_structure, open_image, stored_bytes, to_rgb

THUMBNAIL_PX = 160
FULL_SIZE_DIR = "sample-figures"
"""Folder beside ``samples.html`` holding each distinct image at full size, named by its content's hash (and the
thumbnails of the images too large to show as they are)."""
SHOWN_AS_STORED_PX = 2_000_000
"""An image of at most this many pixels that a browser shows as stored is its own thumbnail (the browser scales it);
a larger one gets a thumbnail file of :data:`THUMBNAIL_PX`."""
BROWSER_FORMATS = {b"\x89PNG\r\n\x1a\n": "png", b"\xff\xd8\xff": "jpg", b"GIF87a": "gif", b"GIF89a": "gif"}
"""Leading bytes of image files a browser shows as they are (WebP: ``RIFF....WEBP``)."""
JPEG_QUALITY = 70
FEW_COLOURS = 256
"""A thumbnail with at most this many colours is also tried as PNG."""


def thumbnail_image(cell: Any, size: int = THUMBNAIL_PX) -> tuple[str, bytes]:
    """The image scaled to ``size`` pixels on its long side, as ``(format, bytes)``: JPEG, or PNG when that is smaller
    (flat drawings of a few colours). The full-size pixels are dropped before returning."""
    with open_image(cell) as image:
        image.draft("RGB", (size, size))  # JPEG: decode at a reduced scale
        rgb = to_rgb(image)
        try:
            rgb.thumbnail((size, size))
            jpeg, png = io.BytesIO(), io.BytesIO()
            rgb.save(jpeg, format="JPEG", quality=JPEG_QUALITY, optimize=True)
            if rgb.getcolors(FEW_COLOURS) is not None:
                rgb.save(png, format="PNG", optimize=True)
        finally:
            if rgb is not image:
                rgb.close()
    if 0 < png.tell() < jpeg.tell():
        return "png", png.getvalue()
    return "jpeg", jpeg.getvalue()


def thumbnail(cell: Any, size: int = THUMBNAIL_PX) -> str:
    """:func:`thumbnail_image` as a data URI (the page without a folder for its figures)."""
    kind, data = thumbnail_image(cell, size)
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"


def browser_extension(data: bytes) -> str | None:
    """The file extension of image bytes a browser shows as they are, ``None`` for other formats."""
    for magic, extension in BROWSER_FORMATS.items():
        if data.startswith(magic):
            return extension
    return "webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def _write_once(
    target: Path, write: Callable[[Path], None], present: set[str] | None = None, data: bytes | None = None
) -> str:
    """``target``'s name, written unless a file of that name, named by its content, is there already: ``data`` (the
    file's whole bytes, when known) straight into ``target``, an existing file of another size written again (one a
    stopped report left short); else by ``write`` to a partial file, then renamed. ``present``: the names already in
    the folder, when the caller listed it once (no lookup of the file, no folder made, per image: creating files is
    most of the viewer's time for thousands of figures); the name is added to it."""
    exists = target.name in present if present is not None else target.is_file()
    if exists and data is not None and target.stat().st_size != len(data):
        exists = False
    if not exists:
        if present is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        if data is not None:
            target.write_bytes(data)
        else:
            partial = target.with_name(f"{target.name}.{os.getpid()}.partial")  # its own, beside another process
            write(partial)
            partial.replace(target)
    if present is not None:
        present.add(target.name)
    return target.name


def write_full_size(
    cell: Any,
    data: bytes | None,
    folder: Path,
    digest: str | None,
    present: set[str] | None = None,
) -> str:
    """Write the image of ``cell`` at full size into ``folder`` (its stored bytes when a browser shows them, else
    PNG) and return the file's name; an existing file of the same content is kept (``present``: see
    :func:`_write_once`)."""
    extension = browser_extension(data) if data is not None else None
    name = f"{(digest or hashlib.sha256(repr(cell).encode()).hexdigest())[:24]}.{extension or 'png'}"

    def write(partial: Path) -> None:
        with open_image(cell) as image:
            rgb = image if image.mode in ("RGB", "RGBA", "L", "LA", "P") else to_rgb(image)
            rgb.save(partial, format="PNG")
            if rgb is not image:
                rgb.close()

    return _write_once(folder / name, write, present, data if extension is not None else None)


def write_thumbnail(cell: Any, full: str, folder: Path, present: set[str] | None = None) -> str:
    """The thumbnail file of the full-size image file ``full`` in ``folder``: kept when there, else made
    (:func:`thumbnail_image`) and written as ``<full's stem>.thumb.jpg`` (``.png``); ``present``: see
    :func:`_write_once`."""
    stem = Path(full).stem
    for existing in (folder / f"{stem}.thumb.jpg", folder / f"{stem}.thumb.png"):
        if existing.name in present if present is not None else existing.is_file():
            return existing.name
    kind, data = thumbnail_image(cell)
    target = folder / f"{stem}.thumb.{'jpg' if kind == 'jpeg' else 'png'}"
    return _write_once(target, lambda path: path.write_bytes(data), present)


Made = tuple[str | None, str, str] | None
"""One image cell made ready for the page (:meth:`FigureFiles.make`): its content's SHA-256 (``None`` for a decoded
image), what a row shows and the full-size file (relative to the page; empty without a folder); ``None`` when the
image could not be (damaged)."""


class FigureFiles:
    """Each distinct stored image made once (by content): without a folder, a thumbnail data URI; with a folder
    (:data:`FULL_SIZE_DIR`), its file at full size there and what the page shows in a row: the full-size file itself
    when a browser shows it and it has at most :data:`SHOWN_AS_STORED_PX` pixels, else a thumbnail file beside it.
    Files are named by their content, so a page written again into the same folder reuses them, and two processes
    making the images of one page write the same names with the same bytes. The page's image is checked as the data
    check does (:func:`scifig_tasks.core.images.check_structure`: header, size, chunk checksums) without decoding its
    pixels."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._made: dict[str, tuple[str, str]] = {}
        self._present: set[str] | None = None
        """The names in ``folder``: listed once, when the first image is written (a page written again into the
        same folder reuses its files)."""

    def make(self, cell: Any) -> Made:
        data = stored_bytes(cell)
        digest = hashlib.sha256(data).hexdigest() if data is not None else None
        if digest is not None and digest in self._made:
            return (digest, *self._made[digest])
        try:
            if self.folder is None:
                uri, full = thumbnail(cell), ""
            else:
                if self._present is None:
                    self.folder.mkdir(parents=True, exist_ok=True)
                    self._present = {entry.name for entry in os.scandir(self.folder)}
                uri, full = self._files(cell, data, digest, self.folder, self._present)
        except Exception:  # noqa: BLE001 - a damaged image is counted and shown as missing
            return None
        if digest is not None:
            self._made[digest] = (uri, full)
        return digest, uri, full

    @staticmethod
    def _files(cell: Any, data: bytes | None, digest: str | None, folder: Path, present: set[str]) -> tuple[str, str]:
        check_structure(cell)
        with open_image(cell) as image:
            width, height = image.size
        full = write_full_size(cell, data, folder, digest, present)
        as_stored = data is not None and browser_extension(data) is not None
        small = as_stored and width * height <= SHOWN_AS_STORED_PX
        shown = full if small else write_thumbnail(cell, full, folder, present)
        return f"{folder.name}/{shown}", f"{folder.name}/{full}"


class Thumbnails:
    """The page's images in the order its rows name them: each distinct image (by content) once, ``uris[i]`` what a
    row shows and ``full[i]`` the full-size file (:class:`FigureFiles`), and the count of images that could not be
    made; :meth:`keep` takes the images as :class:`FigureFiles` made them, in the page's order, wherever they were
    made."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.full: list[str] = []
        self._index: dict[str, int] = {}
        self.failed = 0

    def keep(self, made: Made) -> int | None:
        """The index of the image ``made``: a new one, or the one of the same content kept before; ``None`` (and one
        more failed) for an image that could not be made."""
        if made is None:
            self.failed += 1
            return None
        digest, uri, full = made
        if digest is not None and digest in self._index:
            return self._index[digest]
        self.uris.append(uri)
        self.full.append(full)
        if digest is not None:
            self._index[digest] = len(self.uris) - 1
        return len(self.uris) - 1
