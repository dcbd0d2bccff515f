"""Pickles are never loaded: loading one runs whatever code it names, so a pickle scifig was handed (a work dir, a run
copied from elsewhere) could run anything. scifig reads a pickle's opcodes only (:mod:`pickletools`, which builds no
object): to tell one that holds plain data (VLMEvalKit's resume checkpoints: replies by index) from one that would run
code, and to mask a secret in its strings where they lie.

Manual: docs/vlmeval.md, "Pickles".
"""

from __future__ import annotations

import pickletools
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

NOT_LOADED = "scifig does not load pickles (loading one runs any code it holds)"
"""Why a pickle is refused, in the words every refusal uses."""
PREDICTIONS_TODO = (
    "re-score a TSV, xlsx or JSON copy (scifig vlmeval writes TSV), or run the model again; convert the pickle "
    "yourself only if you trust where it came from"
)
"""What to do about a prediction file that is only a pickle."""
WORK_DIR_TODO = "move such pickles out of the work dir, or give another --work-dir"
"""What to do about a work dir holding a pickle that would run code."""

CODE_OPCODES = frozenset(
    {
        "GLOBAL",  # imports a module and takes a name from it
        "STACK_GLOBAL",
        "INST",
        "OBJ",
        "REDUCE",  # calls what is on the stack
        "NEWOBJ",
        "NEWOBJ_EX",
        "BUILD",  # calls __setstate__
        "EXT1",  # the copyreg extension registry: imports like GLOBAL
        "EXT2",
        "EXT4",
        "PERSID",  # hands an id to the unpickler's persistent_load
        "BINPERSID",
    }
)
"""The opcodes through which loading a pickle can import or call anything; a pickle without them holds only
strings, bytes, numbers, None, booleans, lists, tuples, dicts, sets and frozensets."""
TEXT_OPCODES = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
"""The opcodes that push a ``str``."""


def _opcodes(data: bytes) -> Iterator[tuple[pickletools.OpcodeInfo, object, int, int]]:
    """``(opcode, argument, start, end)`` of each opcode of the pickle ``data`` up to its ``STOP``, read without
    building any object; a damaged pickle raises ``ValueError``."""
    previous: tuple[pickletools.OpcodeInfo, object, int] | None = None
    for opcode, argument, start in pickletools.genops(data):
        if previous is not None:
            yield (*previous, start)
        previous = (opcode, argument, start)  # type: ignore[assignment]
    if previous is None:
        raise ValueError("empty")
    yield (*previous, previous[2] + 1)  # STOP is one byte


def code_in_pickle(data: bytes) -> str | None:
    """What in the pickle ``data`` would import or call something when it is loaded (``"it names pathlib
    Path.write_text"``), or ``None`` when loading it can only build plain data (:data:`CODE_OPCODES`). Data that is not
    a readable pickle counts as code: it cannot be shown harmless."""
    strings: list[str] = []
    try:
        for opcode, argument, _, _ in _opcodes(data):
            if opcode.name in TEXT_OPCODES:
                strings = [*strings[-1:], str(argument)]
            elif opcode.name in ("GLOBAL", "INST"):
                return f"it names {argument}"
            elif opcode.name == "STACK_GLOBAL" and len(strings) == 2:
                return f"it names {strings[0]} {strings[1]}"
            elif opcode.name in CODE_OPCODES:
                return f"it calls Python code ({opcode.name})"
            elif opcode.name not in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT", "FRAME"):
                strings = []
    except Exception:  # pickletools raises ValueError and others on damaged data
        return "it is not a readable pickle"
    return None


def _text_opcode(text: str) -> bytes:
    """``text`` as one ``BINUNICODE`` opcode (``BINUNICODE8`` past 4 GiB), as the pickle module writes a ``str``."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) > 0xFFFFFFFF:
        return b"\x8d" + struct.pack("<Q", len(encoded)) + encoded
    return b"X" + struct.pack("<I", len(encoded)) + encoded


def masked_pickle(data: bytes, mask: Callable[[str], str]) -> bytes | None:
    """The pickle ``data`` with every ``str`` it holds replaced by ``mask(str)``, every other opcode kept byte for
    byte (frames dropped: they only group opcodes and are optional), so it loads as before with its strings masked;
    ``None`` when ``data`` is not a readable pickle. Nothing is loaded: a pickle that would run code stays one, with
    its strings masked."""
    out = bytearray()
    try:
        for opcode, argument, start, end in _opcodes(data):
            if opcode.name == "FRAME":
                continue
            out += _text_opcode(mask(str(argument))) if opcode.name in TEXT_OPCODES else data[start:end]
    except Exception:  # pickletools raises ValueError and others on damaged data
        return None
    return bytes(out)


def removed_line(path: Path) -> str:
    """What masking says about a pickle it removed: a secret outside its strings cannot be masked without loading
    it."""
    return (
        f"{path}: removed: a pickle holding a secret outside its strings, which cannot be masked without loading it, "
        f"and {NOT_LOADED}; a stopped run resumed with --reuse asks those questions again"
    )


def code_pickles(root: Path) -> list[tuple[Path, str]]:
    """``(file, what)`` for every ``*.pkl`` under ``root`` that would import or call something when loaded
    (:func:`code_in_pickle`), in path order."""
    found = []
    for path in sorted(root.rglob("*.pkl")) if root.is_dir() else []:
        if path.is_file():
            what = code_in_pickle(path.read_bytes())
            if what is not None:
                found.append((path, what))
    return found
