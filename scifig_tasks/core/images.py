"""Image handling shared by the task adapters: lazy opening and faithful, cheap transfer of the stored bytes.

A cheap structural check at load, pixels decoded once and strictly when a model's request is built, stored bytes sent
as they are. Manual: docs/data.md, 'Images: checked cheaply, decoded once'.
"""

from __future__ import annotations

import io
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from PIL import Image, ImageFile

from scifig_tasks.core.errors import DataError

MAX_PIXELS = 2 * 89_478_485
"""The most pixels an image may declare: PIL's own refusal bound at its default setting (twice
``Image.MAX_IMAGE_PIXELS``), applied whatever a framework sets that global to. A GRAB figure at the generator's
1000 dpi has about 31 million."""


def open_image(cell: Any) -> Image.Image:
    """A PIL image from a dataset cell: an undecoded ``{"bytes", "path"}`` dict or an already decoded image."""
    if isinstance(cell, Image.Image):
        return cell
    if isinstance(cell, Mapping):
        if cell.get("bytes"):
            return Image.open(io.BytesIO(cell["bytes"]))
        if cell.get("path"):
            return Image.open(cell["path"])
    raise TypeError(f"not an image cell: {type(cell).__name__}")


def stored_bytes(cell: Any) -> bytes | None:
    """The encoded bytes of a stored image cell (a mapping ``{"bytes", "path"}``): its ``bytes`` when they are
    non-empty, else, when ``bytes`` is ``None``, the bytes of the file its ``path`` names, read as the path stands;
    ``None`` for anything else (a decoded image, a cell with neither). Nothing is decoded. Raises ``OSError`` when the
    named file cannot be read."""
    if not isinstance(cell, Mapping):
        return None
    data = cell.get("bytes")
    if isinstance(data, bytes | bytearray | memoryview) and len(data):
        return bytes(data)
    path = cell.get("path")
    if data is None and isinstance(path, str) and path:
        return Path(path).read_bytes()
    return None


def image_file(path: str, folders: Sequence[Path]) -> Path:
    """The file an image cell's ``path`` names, allowed only inside ``folders`` (the data's own folder, first).

    Rule: a relative path is relative to the first folder (not to the working directory); the path, symlinks
    followed, must lie inside one of ``folders`` and be a file. Raises ``ValueError`` saying where the path leads
    otherwise; with no folders no path is read."""
    if not folders:
        raise ValueError(f"image path {path!r}: this data has no folder image files may be read from (store the bytes)")
    candidate = Path(path)
    resolved = (candidate if candidate.is_absolute() else folders[0] / candidate).resolve()
    if not any(resolved.is_relative_to(folder.resolve()) for folder in folders):
        where = f"folder {folders[0]}" if len(folders) == 1 else f"folders {', '.join(map(str, folders))}"
        raise ValueError(
            f"image path {path!r} resolves to {resolved}, outside the data's {where}: image files are read only "
            "from there (store the image bytes in the cell, or move the file into the folder)"
        )
    if not resolved.is_file():
        raise ValueError(f"image path {path!r}: no such file {resolved}")
    return resolved


_STRICT = threading.RLock()


@contextmanager
def strict_decoding() -> Iterator[None]:
    """Inside the block PIL raises on truncated or broken image data, whatever ``LOAD_TRUNCATED_IMAGES`` says.

    The setting is a process-wide global and requests are built in several threads at once, so the blocks run one at
    a time: without that, one thread could restore the lenient setting while another decodes, or leave the global
    strict for good. (Another thread's own decoding during a block is strict too: only ever stricter.)"""
    with _STRICT:
        previous = ImageFile.LOAD_TRUNCATED_IMAGES
        ImageFile.LOAD_TRUNCATED_IMAGES = False
        try:
            yield
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = previous


def check_structure(cell: Any) -> None:
    """The load-time check of an image cell, without decoding a pixel: the header opens, the declared size is at most
    :data:`MAX_PIXELS`, and the file's structure verifies (for PNG every chunk checksum, the pixel data's
    included).

    Raises ``ValueError`` for a size out of bounds, else what PIL raises for damaged data."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the bound below decides
        with open_image(cell) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ValueError(
                    f"declared size {width}x{height} ({width * height:,} pixels) is over the {MAX_PIXELS:,}-pixel "
                    "limit (a decompression bomb, or a figure to downscale before evaluating)"
                )
            image.verify()


def decode_strictly(cell: Any) -> Image.Image:
    """The pixels of ``cell``, decoded now and strictly (see :func:`strict_decoding`); raises what PIL raises for
    damaged data."""
    with strict_decoding(), warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # checked at load by check_structure
        image = open_image(cell)
        image.load()
    return image


def decode_once(cell: Any) -> None:
    """The whole check of an image cell: :func:`check_structure`, then its pixels decoded once, strictly, and dropped
    at once. Raises what those raise."""
    check_structure(cell)
    decode_strictly(cell).close()


def unreadable(error: Exception) -> str:
    """The problem text of an image that fails a check, the same at load time and when a request is built."""
    return f"image bytes are not a readable image ({type(error).__name__}: {error})"


_SOURCES: list[tuple[str, weakref.ref[Any], tuple[str, ...]]] = []


def remember_source(origin: str, dataset: Any, columns: Sequence[str]) -> None:
    """Note that ``dataset`` (rows of ``origin`` with images in ``columns``) was loaded in this process, so a
    request-time decoding failure can name the file, row and column (the dataset is referenced weakly)."""
    if columns:
        _SOURCES.append((origin, weakref.ref(dataset), tuple(columns)))


def _locate(data: bytes) -> tuple[str, int, str, int | None] | None:
    """Where the image ``data`` sits among the remembered sources: origin, row, column and position in a list cell;
    ``None`` when no source holds it. Runs only after a failure, so it may scan."""
    for origin, reference, columns in reversed(_SOURCES):
        dataset = reference()
        if dataset is None:
            continue
        stored = dataset.select_columns(list(columns)).with_format("arrow")  # cells as stored, nothing decoded
        for offset in range(0, len(dataset), 256):
            batch = stored[offset : offset + 256]
            for column in columns:
                for index, value in enumerate(batch.column(column).to_pylist()):
                    cells = value if isinstance(value, list) else [value]
                    for position, cell in enumerate(cells):
                        if isinstance(cell, Mapping) and cell.get("bytes") == data:
                            return origin, offset + index, column, position if isinstance(value, list) else None
    return None


def decoded_pixels(cell: Any) -> Image.Image:
    """:func:`decode_strictly`, with a failure raised as the :class:`DataError` the data check gives for the cell."""
    try:
        return decode_strictly(cell)
    except Exception as exc:  # PIL raises many types for damaged data
        problem = unreadable(exc)
        data = cell.get("bytes") if isinstance(cell, Mapping) else None
        found = _locate(data) if data else None
        if found is None:
            raise DataError("an image not among the data loaded in this process", None, None, problem) from exc
        origin, row, column, position = found
        prefix = "" if position is None else f"image {position}: "
        raise DataError(origin, row, column, prefix + problem) from exc


def to_rgb(cell: Any) -> Image.Image:
    """RGB pixels of an image cell, decoded strictly (a damaged one raises the located :class:`DataError`);
    transparency is composited on white (matplotlib's figure background)."""
    image = decoded_pixels(cell)
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def for_upload(cell: Any) -> Image.Image:
    """The image of ``cell`` for an API request: saving it in its stored format writes the stored bytes. The pixels
    are decoded once, strictly, and dropped (a damaged image raises the located :class:`DataError`); the image
    returned opens lazily, so a request holds no decoded pixels."""
    if isinstance(cell, Image.Image):
        return cell
    decoded_pixels(cell).close()
    image = open_image(cell)
    data = cell.get("bytes") if isinstance(cell, Mapping) else None
    if not data or image.format is None:
        return image
    stored_format, save = image.format.upper(), image.save

    def save_stored(fp: Any, format: str | None = None, **params: Any) -> None:
        if format is not None and format.upper() == stored_format and not params and hasattr(fp, "write"):
            fp.write(data)
        else:
            save(fp, format=format, **params)

    image.save = save_stored  # type: ignore[method-assign]
    return image
