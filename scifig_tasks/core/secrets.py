"""API keys never reach the screen, the logs or the files a run writes (``scifig eval``, ``scifig vlmeval``).

Rule: a secret is the value (8 characters or more) of every environment variable whose name ends in ``KEY``,
``TOKEN``, ``SECRET`` or ``PASSWORD`` (``OPENAI_API_KEY``, ``HF_TOKEN``), plus any key a command line or config
file names. It is replaced by ``<NAME>`` (the variable's name; ``<secret>`` for one without a name) in everything
printed through ``sys.stdout`` / ``sys.stderr`` and every log record while a run lasts, and afterwards in the files
the run wrote. Output that bypasses Python's streams (native code, child processes) is not filtered.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

SECRET_NAME = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
MIN_SECRET_CHARS = 8
"""Shorter values are not masked: they would mask ordinary words."""
UNNAMED = "<secret>"


def secrets_of(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """``secret -> <NAME>`` for the environment's secrets and the ``extra`` values, longest first (so a secret that
    contains another is masked whole)."""
    found = {value: UNNAMED for value in extra}
    found |= {value: f"<{name}>" for name, value in sorted(environ.items()) if SECRET_NAME.search(name)}
    return {
        value: label
        for value, label in sorted(found.items(), key=lambda item: -len(item[0]))
        if len(value) >= MIN_SECRET_CHARS
    }


def mask(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every secret replaced by its label."""
    for secret, label in secrets.items():
        text = text.replace(secret, label)
    return text


class MaskedStream:
    """A text stream writing through to ``stream`` with every secret masked (everything else is delegated)."""

    def __init__(self, stream: TextIO, secrets: Mapping[str, str]) -> None:
        self._stream, self._secrets = stream, secrets

    def write(self, text: str) -> int:
        self._stream.write(mask(text, self._secrets))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def mask_log_records(secrets: Mapping[str, str]) -> None:
    """Mask the secrets in every log record created from now on (all loggers, all handlers)."""
    if not secrets:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: leave it to logging's own error handling
            return record
        masked = mask(message, secrets)
        if masked != message:
            record.msg, record.args = masked, None
        return record

    logging.setLogRecordFactory(factory)


def mask_files(
    root: Path, secrets: Mapping[str, str], since: float | None = None, select: Callable[[Path], bool] | None = None
) -> list[Path]:
    """Mask the secrets in the files under ``root`` (modified at or after ``since``, chosen by ``select``); return the
    files changed."""
    changed = []
    for path in sorted(root.rglob("*")) if secrets and root.is_dir() else []:
        if not path.is_file() or (since is not None and path.stat().st_mtime < since):
            continue
        if select is not None and not select(path):
            continue
        data = original = path.read_bytes()
        for secret, label in secrets.items():
            data = data.replace(secret.encode(), label.encode())
        if data != original:
            path.write_bytes(data)
            changed.append(path)
    return changed


@contextlib.contextmanager
def masked_output(secrets: Mapping[str, str], output_path: str | Path | None = None) -> Iterator[None]:
    """Mask the secrets in ``sys.stdout`` / ``sys.stderr`` inside the block, then in the files written under
    ``output_path`` meanwhile."""
    if not secrets:
        yield
        return
    started = time.time() - 1.0  # file times may be rounded down
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout, secrets), MaskedStream(sys.stderr, secrets)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved
        if output_path:
            mask_files(Path(output_path), secrets, since=started)
