"""Image handling shared by the task adapters: lazy opening and faithful, cheap transfer of the stored bytes.

Task datasets keep their image columns undecoded (``{"bytes", "path"}``): a row costs nothing until a model needs
its pixels. Two ways out:

* :func:`to_rgb` / :func:`open_image` for models that take pixels (decoded on demand);
* :func:`for_upload` for chat/API models: the image opens lazily, and when the framework serialises it in its own
  stored format (lmms-eval's API models call ``image.save(buffer, format="PNG")``) the stored file bytes are written
  as they are — the same pixels, without decoding and re-encoding a large figure on the request path. Any other
  format, option or pixel access falls back to PIL's normal behaviour.

Data validation decodes every image once, strictly (:func:`strict_decoding`): lmms-eval sets PIL's
``ImageFile.LOAD_TRUNCATED_IMAGES`` at import, under which PIL pads a truncated or broken image with grey instead of
raising, so a damaged figure would reach the model as a partly blank picture.

An image cell may name a file instead of holding bytes (``{"bytes": None, "path": P}``). Such a file is read only
when it lies inside the data's own folder (:func:`image_file`): otherwise a data file could make scifig read any
local file and send it to a model endpoint.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from PIL import Image, ImageFile


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


@contextmanager
def strict_decoding() -> Iterator[None]:
    """Inside the block PIL raises on truncated or broken image data, whatever ``LOAD_TRUNCATED_IMAGES`` says."""
    previous = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        yield
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = previous


def decode_once(cell: Any) -> None:
    """Verify the stored file (chunk checksums) and decode its pixels once, strictly; the pixels are dropped at once.

    Raises what PIL raises for damaged data (``OSError``, ``SyntaxError``, ``ValueError``, ...)."""
    with strict_decoding():
        with open_image(cell) as image:
            image.verify()
        with open_image(cell) as image:
            image.load()


def to_rgb(cell: Any) -> Image.Image:
    """RGB pixels of an image cell; transparency is composited on white (matplotlib's figure background)."""
    image = open_image(cell)
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def for_upload(cell: Any) -> Image.Image:
    """The image of ``cell`` for an API request: saving it in its stored format writes the stored bytes."""
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
