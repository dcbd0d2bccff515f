"""The judge's on-disk reply cache.

* Judgements are cached on disk, keyed by sha256 of (base URL, model, prompt, system message, max_tokens,
  temperature), so a rerun makes no repeated calls. Only replies the caller's ``accept`` check reads are cached, and
  a cached entry it rejects (one written by an older release) is asked again. The cache directory is
  ``SCIFIG_JUDGE_CACHE``, else ``$XDG_CACHE_HOME/scifig/judge``, else ``~/.cache/scifig/judge``.
* An entry is written atomically (a temporary file, then a rename); an entry that cannot be read is a miss, one that
  cannot be written a WARNING line. The client masks secrets before an entry is stored (see the package docstring).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from scifig_tasks.core.judge.config import JudgeConfig

logger = logging.getLogger("scifig.judge")


class ReplyCache:
    """The cache entries of a :class:`~scifig_tasks.core.judge.client.JudgeClient`, under its ``config.cache_dir``
    (a mixin)."""

    config: JudgeConfig

    def _cache_path(self, entry: dict[str, Any]) -> Path:
        key = hashlib.sha256(json.dumps(entry, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        return self.config.cache_dir / key[:2] / key[2:4] / f"{key}.json"

    @staticmethod
    def _cache_get(path: Path, entry: dict[str, Any]) -> str | None:
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(cached, dict) or any(cached.get(k) != v for k, v in entry.items()):
            return None
        text = cached.get("text")
        return text if isinstance(text, str) else None

    @staticmethod
    def _cache_put(path: Path, record: dict[str, Any]) -> None:
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
