"""Damaged image bytes for data-validation tests: files whose structure (and PIL's ``verify()``) is fine but whose
compressed pixel data is broken, so only decoding them finds the fault."""

from __future__ import annotations

import struct
import zlib


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, position = [], 8
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        kind = png[position + 4 : position + 8]
        chunks.append((kind, png[position + 8 : position + 8 + length]))
        position += 12 + length
    return chunks


def _assemble(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = b"\x89PNG\r\n\x1a\n"
    for kind, data in chunks:
        out += struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return out


def broken_stream(png: bytes) -> bytes:
    """``png`` with its pixel data (``IDAT``) replaced by bytes that are not a deflate stream; every chunk checksum
    is recomputed, so the header and the chunk structure still verify."""
    garbage = b"\x78\x9c" + bytes(range(7, 250, 3))
    return _assemble([(kind, garbage if kind == b"IDAT" else data) for kind, data in _chunks(png)])


def truncated_stream(png: bytes) -> bytes:
    """``png`` with its pixel data cut in half (checksums recomputed): the image ends early."""
    return _assemble([(kind, data[: len(data) // 2] if kind == b"IDAT" else data) for kind, data in _chunks(png)])


def declared_size(png: bytes, width: int, height: int) -> bytes:
    """``png`` whose header declares ``width`` x ``height`` pixels (checksums recomputed, pixel data unchanged)."""
    chunks = _chunks(png)
    header = dict(chunks)[b"IHDR"]
    resized = struct.pack(">II", width, height) + header[8:]
    return _assemble([(kind, resized if kind == b"IHDR" else data) for kind, data in chunks])


def bad_checksum(png: bytes) -> bytes:
    """``png`` with one byte of its pixel data changed and the chunk checksum left as it was."""
    position = png.index(b"IDAT") + 4
    return png[:position] + bytes([png[position] ^ 0xFF]) + png[position + 1 :]
