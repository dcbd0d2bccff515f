"""Image helpers shared by the task adapters."""

from __future__ import annotations

from PIL import Image


def to_rgb(image: Image.Image) -> Image.Image:
    """RGB copy of ``image``; transparency is composited on white (matplotlib's figure background)."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")
