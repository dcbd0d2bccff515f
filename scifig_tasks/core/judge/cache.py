"""The judge's on-disk reply cache: one JSON file per answer, keyed by sha256 of the request.

The caller masks secrets before an entry is stored. See docs/judge.md (the cache key, the folder, what is cached).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger("scifig.judge")


class ReplyCache:
    """The entries under ``directory``: ``<aa>/<bb>/<sha256>.json``, each the request fields and the reply ``text``.

    An entry is written atomically (a temporary file, then a rename); one that cannot be read, or whose fields are
    not the request's, is a miss; one that cannot be written is a WARNING line.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, entry: dict[str, Any]) -> Path:
        """Where the reply to the request ``entry`` (its fields as sent, before masking) is stored."""
        key = hashlib.sha256(json.dumps(entry, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        return self.directory / key[:2] / key[2:4] / f"{key}.json"

    @staticmethod
    def get(path: Path, entry: dict[str, Any]) -> str | None:
        """The cached reply at ``path`` when its fields are ``entry``'s; None otherwise."""
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(cached, dict) or any(cached.get(k) != v for k, v in entry.items()):
            return None
        text = cached.get("text")
        return text if isinstance(text, str) else None

    @staticmethod
    def put(path: Path, record: dict[str, Any]) -> None:
        """Store ``record`` (the request fields and ``text``) at ``path``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(record, handle, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            logger.warning("could not write judge cache entry %s: %s", path, exc)
