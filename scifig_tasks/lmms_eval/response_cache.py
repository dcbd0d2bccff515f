"""Resuming a stopped ``scifig eval``: lmms-eval's response cache, made safe for the scifig tasks and written as
replies arrive (:class:`ScifigResponseCache`, the class ``scifig eval`` gives lmms-eval).

Manual: docs/lmms-eval-integration.md, "The reply cache".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lmms_eval.caching.response_cache import (
    ResponseCache,
    _extract_content_hash,
    _resolve_cache_run_id,
    compute_cache_key,
    extract_gen_kwargs,
    is_deterministic,
)
from loguru import logger

from scifig_tasks.core import settings
from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.images import stored_bytes
from scifig_tasks.core.secrets import mask

RUN_ID = "scifig"
"""The run folder of every ``scifig eval`` (``runs/scifig/``), so that a rerun reopens what a stopped run wrote."""
RUN_ID_VARIABLE = "LMMS_CACHE_RUN_ID"
ENDPOINT_VARIABLE = "OPENAI_API_BASE"
FAILURE_MARKERS = ("[LMMS_EVAL_REQUEST_FAILED", "[LMMS_EVAL_BUDGET_EXCEEDED")
"""Replies lmms-eval's API models return instead of an answer: never stored."""
CACHED_TYPES = ("generate_until", "loglikelihood")
"""Request types keyed and chunked here; others (multi-round, agentic) keep lmms-eval's own handling."""


def chunk_size(lm: Any) -> int:
    """Requests sent to the model at once: its concurrency (``num_concurrent``), else its batch size, at least 1."""
    for name in ("num_concurrent", "batch_size"):
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            value = int(getattr(lm, name))
            if value >= 1:
                return value
    return 1


def _update(digest: Any, value: Any) -> None:
    """Feed ``value`` into ``digest`` unambiguously: texts, numbers, images (mode, size, pixels), bytes, mappings
    (sorted keys) and sequences; anything else by its type and ``repr``."""
    if value is None or isinstance(value, bool | int | float | str):
        digest.update(f"{type(value).__name__}:{len(str(value))}:{value}".encode())
    elif isinstance(value, bytes | bytearray):
        digest.update(f"bytes:{len(value)}:".encode() + bytes(value))
    elif hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size"):  # a PIL image
        pixels = value.tobytes()
        digest.update(f"image:{value.mode}:{value.size}:{len(pixels)}:".encode() + pixels)
    elif isinstance(value, Mapping):
        digest.update(f"map:{len(value)}:".encode())
        for key in sorted(value, key=str):
            _update(digest, str(key))
            _update(digest, value[key])
    elif isinstance(value, list | tuple):
        digest.update(f"seq:{len(value)}:".encode())
        for item in value:
            _update(digest, item)
    else:
        digest.update(f"{type(value).__qualname__}:{value!r}".encode())


KEY_VERSION = "scifig-reply-key/2"
"""The format of :func:`request_digest`, part of every key: 2 counts a stored image by its encoded bytes (1, the
unversioned format, by its decoded pixels)."""
STAND_IN_SIZE = (8, 4)
"""A stand-in image (:func:`stand_ins`): 32 grey-level pixels, the SHA-256 digest of the stored image's bytes."""


def _stored_bytes(value: Any) -> bytes | None:
    """The encoded bytes of a document value that is a stored image cell (exactly the keys ``bytes`` and ``path``:
    :func:`scifig_tasks.core.images.stored_bytes`); ``None`` for any other value, or a file that cannot be read (the
    hooks then see the cell itself)."""
    if not isinstance(value, Mapping) or set(value) != {"bytes", "path"}:
        return None
    try:
        return stored_bytes(value)
    except OSError:
        return None


def _stand_in(data: bytes, images: list[bytes]) -> Any:
    from PIL import Image

    stored = hashlib.sha256(data).digest()
    images.append(stored)
    return Image.frombytes("L", STAND_IN_SIZE, stored)


def stand_ins(doc: Any) -> tuple[Any, list[bytes]]:
    """``doc`` with every stored image cell (a value, or an item of a list value) replaced by its stand-in image, and
    the digests of those images' bytes in the document's order. Nothing is decoded."""
    images: list[bytes] = []
    if not isinstance(doc, Mapping):
        return doc, images
    shown: dict[str, Any] = {}
    for key, value in doc.items():
        if (data := _stored_bytes(value)) is not None:
            shown[key] = _stand_in(data, images)
        elif isinstance(value, list) and any(_stored_bytes(item) is not None for item in value):
            items = [(_stored_bytes(item), item) for item in value]
            shown[key] = [item if data is None else _stand_in(data, images) for data, item in items]
        else:
            shown[key] = value
    return shown, images


def request_digest(lm: Any, request: Any, copy: int, endpoint: str = "") -> str:
    """What the model is sent for ``request`` (the module's rule): its text arguments, what its callables
    (``doc_to_messages``, ``doc_to_visual``) build from the document, its stored images by their bytes
    (:func:`stand_ins`), the copy number among the request's ``repeats`` and the endpoint, under
    :data:`KEY_VERSION`. Raises ``LookupError`` when the document is not in ``lm.task_dict``."""
    digest = hashlib.sha256()
    _update(digest, KEY_VERSION)
    doc = shown = None
    for argument in request.args:
        if isinstance(argument, dict):  # the generation arguments: already in lmms-eval's key
            continue
        if callable(argument):
            if doc is None:
                doc = lm.task_dict[request.task_name][request.args[-1]][request.doc_id]
                shown, images = stand_ins(doc)
                _update(digest, images)
            try:
                built = argument(shown)
            except Exception:  # a hook that reads a stored cell itself, not through PIL: it gets the document
                built = argument(doc)
            _update(digest, built)
        else:
            _update(digest, argument)
    _update(digest, copy)
    _update(digest, endpoint)
    return digest.hexdigest()[:32]


def _copies(requests: Sequence[Any]) -> list[int]:
    """The copy number of each request: lmms-eval repeats one ``Instance`` ``repeats`` times in the list it runs."""
    seen: dict[int, int] = {}
    numbers = []
    for request in requests:
        numbers.append(seen.get(id(request), 0))
        seen[id(request)] = numbers[-1] + 1
    return numbers


PROGRESS_LABEL = "Model Responding"
"""The label of the model phase's bar (lmms-eval's models label theirs so)."""


def progress_bar(lm: Any, total: int) -> Any:
    """The one bar of a model phase of ``total`` requests, with tqdm's rate and time estimate; drawn on rank 0 only,
    as lmms-eval's models draw theirs."""
    from tqdm import tqdm

    return tqdm(total=total, desc=PROGRESS_LABEL, disable=getattr(lm, "rank", 0) != 0)


@contextlib.contextmanager
def model_bars_silenced(lm: Any, reqtype: str) -> Iterator[None]:
    """Within the block the bar the model's ``reqtype`` method draws for each call draws nothing: the ``tqdm`` class
    the method's module imported (``from tqdm import tqdm``, as every lmms-eval model does) is replaced there by a
    subclass whose bars are disabled, and put back afterwards. A module that names tqdm otherwise is left as it is
    (its bars are drawn). Listed with the run patch of ``ResponseCache`` (:mod:`scifig_tasks.lmms_eval.patches`)."""
    import sys

    from tqdm import tqdm

    owner = next((cls for cls in type(lm).__mro__ if reqtype in vars(cls)), None)
    module = sys.modules.get(owner.__module__) if owner is not None else None
    drawn = getattr(module, "tqdm", None)
    if module is None or not (isinstance(drawn, type) and issubclass(drawn, tqdm)):
        yield
        return

    class Silent(drawn):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    module.tqdm = Silent  # type: ignore[union-attr]
    try:
        yield
    finally:
        if getattr(module, "tqdm", None) is Silent:
            module.tqdm = drawn  # type: ignore[union-attr]


CACHE_REMEDY = "run with --no-cache, or give --use_cache another folder"
"""What a run can do about a cache it cannot use, besides repairing it."""


class ReplyCacheError(CommandError):
    """A reply cache that cannot be used: one line, ``the model-reply cache PATH PROBLEM — TODO`` (exit status 1),
    also as the exception's text (lmms-eval reports the exceptions of a run by their text)."""

    def __init__(self, path: Path | str, problem: str, todo: str) -> None:
        super().__init__(f"the model-reply cache {path} {' '.join(problem.split())}", todo, status=1)

    def __str__(self) -> str:
        return f"{self.what} — {self.todo}"


def _damaged(path: Path, reason: str) -> ReplyCacheError:
    return ReplyCacheError(
        path, f"is damaged ({reason})", f"move it aside (its replies are asked again) or {CACHE_REMEDY}"
    )


def _read_only(path: Path, exc: OSError) -> ReplyCacheError:
    return ReplyCacheError(
        path, f"cannot be written ({type(exc).__name__}: {exc.strerror or exc})", f"make it writable, or {CACHE_REMEDY}"
    )


def _check_folder_writable(folder: Path) -> None:
    """Raise :class:`ReplyCacheError` when no file can be created in ``folder`` (lmms-eval writes its SQLite files,
    their journals and its log there)."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".scifig-write-check"):
            pass
    except OSError as exc:
        raise _read_only(folder, exc) from exc


def _check_database(path: Path) -> None:
    """Raise :class:`ReplyCacheError` when the SQLite file ``path`` cannot be written or fails SQLite's
    ``quick_check`` (truncated, overwritten), or holds no ``responses`` table although it is not empty."""
    try:
        with open(path, "r+b"):
            pass
    except OSError as exc:
        raise _read_only(path, exc) from exc
    try:
        connection = sqlite3.connect(path, timeout=30)
        try:
            verdict = [row[0] for row in connection.execute("PRAGMA quick_check").fetchall()]
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise _damaged(path, f"{type(exc).__name__}: {exc}") from exc
    if verdict != ["ok"]:
        raise _damaged(path, f"SQLite quick_check: {verdict[0] if verdict else 'no answer'}")
    if "responses" not in tables and path.stat().st_size > 0:
        raise _damaged(path, "no responses table")


def check_cache_folder(cache_root: Path, run_id: str) -> None:
    """Raise :class:`ReplyCacheError` unless lmms-eval can use the cache ``cache_root`` for run ``run_id``: its
    folders (the cache's, ``runs/`` and the run's) can be written, and its SQLite files (``cache.db``, the run's and
    the unmerged runs' ``rank_*.db``, merged at the end) can be written and are whole. Missing ones are created
    later."""
    runs = cache_root / "runs"
    for folder in (cache_root, runs, runs / run_id):
        if folder.is_dir():
            _check_folder_writable(folder)
    databases = [cache_root / "cache.db"]
    if runs.is_dir():
        for run in sorted(runs.iterdir()):
            if run.is_dir() and (run.name == run_id or not (run / ".merged").exists()):
                databases += sorted(run.glob("rank_*.db"))
    for database in databases:
        if database.exists():
            _check_database(database)


class ScifigResponseCache(ResponseCache):
    """lmms-eval's :class:`ResponseCache` with the rules of this module (replies stored as they arrive, keys that
    hold what the model is sent, no failures stored, nothing secret in clear)."""

    _secrets: Mapping[str, str] = {}
    _endpoint: str = ""

    @classmethod
    def create(cls, cache_root: str, **kwargs: Any) -> ScifigResponseCache:
        """lmms-eval's ``create``, once the cache was found usable (:func:`check_cache_folder`, before any model
        request); the secrets to mask and the endpoint are read from the environment."""
        root = Path(os.path.abspath(cache_root))  # lmms-eval's reading of --use_cache: a folder, or a file in it
        root = root.parent if cache_root.endswith(".db") else root
        check_cache_folder(root, _resolve_cache_run_id(int(kwargs.get("world_size", 1))))
        try:
            cache = super().create(cache_root, **kwargs)
        except OSError as exc:
            raise _read_only(Path(exc.filename or root), exc) from exc
        except sqlite3.Error as exc:
            raise ReplyCacheError(root, f"cannot be opened ({type(exc).__name__}: {exc})", CACHE_REMEDY) from exc
        assert isinstance(cache, ScifigResponseCache)
        cache._secrets = settings.process_secrets()
        cache._endpoint = os.environ.get(ENDPOINT_VARIABLE, "")
        return cache

    def _open_local_handles(self) -> None:
        """lmms-eval's, with the model's fingerprint (``model|model arguments``) written as a hash only."""
        clear = self.model_fingerprint
        model = clear.split("|", 1)[0]
        self.model_fingerprint = f"{model}|sha256:{hashlib.sha256(clear.encode()).hexdigest()[:16]}" if clear else ""
        try:
            super()._open_local_handles()
        finally:
            self.model_fingerprint = clear

    def _extract_cacheable(self, response: Any) -> Any:  # type: ignore[override]
        """The reply as lmms-eval stores it, with every secret masked."""
        return self._masked(ResponseCache._extract_cacheable(response))

    def _masked(self, value: Any) -> Any:
        """A reply with every secret of its text masked: a string, or a ``GenerationResult`` (its ``text``); any
        other reply as it is."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return mask(value, self._secrets)
        text = getattr(value, "text", None)
        if dataclasses.is_dataclass(value) and isinstance(text, str):
            return dataclasses.replace(value, text=mask(text, self._secrets))
        return value

    @staticmethod
    def _is_valid_response(response: Any, request_type: str) -> bool:
        """lmms-eval's rule (no empty reply), and no failure marker."""
        text = getattr(response, "text", response)
        if isinstance(text, str) and text.lstrip().startswith(FAILURE_MARKERS):
            return False
        return ResponseCache._is_valid_response(response, request_type)

    def _key(self, lm: Any, reqtype: str, request: Any, copy: int) -> str:
        content = _extract_content_hash(request) + ":" + request_digest(lm, request, copy, self._endpoint)
        return compute_cache_key(
            request_type=reqtype,
            task_name=request.task_name,
            doc_id=request.doc_id,
            gen_kwargs=extract_gen_kwargs(request),
            idx=request.idx,
            content_hash=content,
            task_fingerprint=self._task_fingerprints.get(request.task_name, ""),
            model_fingerprint_hash=self._model_fingerprint_hash,
            eval_version=self._eval_version,
        )

    def execute(self, lm: Any, reqtype: str, requests: list[Any]) -> list[Any]:
        """Replies to ``requests`` in order: cached ones looked up, the others asked chunk by chunk
        (:func:`chunk_size`), each chunk's valid deterministic replies stored before the next chunk is sent."""
        if reqtype not in CACHED_TYPES:
            return super().execute(lm, reqtype, requests)
        results: list[Any] = [None] * len(requests)
        keys = [
            self._key(lm, reqtype, request, copy) if is_deterministic(reqtype, extract_gen_kwargs(request)) else ""
            for request, copy in zip(requests, _copies(requests), strict=True)
        ]
        hits_before = self._hits
        with progress_bar(lm, len(requests)) as bar:
            for start in self._chunks(len(requests), chunk_size(lm)):
                missing = []
                for index in start:
                    cached = self._lookup(keys[index]) if keys[index] else None
                    if cached is not None:
                        results[index] = cached
                        self._hits += 1
                    else:
                        missing.append(index)
                        self._misses += bool(keys[index])
                        self._skipped += not keys[index]
                bar.update(len(start) - len(missing))
                if missing:
                    with model_bars_silenced(lm, reqtype):
                        replies = getattr(lm, reqtype)([requests[index] for index in missing])
                    for index, reply in zip(missing, replies, strict=True):
                        results[index] = self._masked(reply)  # scored as it is stored: a resumed run reads the same
                        self._record(reqtype, requests[index], keys[index], reply)
                    bar.update(len(missing))
        if self._hits > hits_before:
            logger.info(f"ResponseCache: {self._hits - hits_before}/{len(requests)} replies from the cache")
        return results

    @staticmethod
    def _chunks(total: int, size: int) -> Iterator[range]:
        for start in range(0, total, size):
            yield range(start, min(start + size, total))

    def _record(self, reqtype: str, request: Any, key: str, reply: Any) -> None:
        """Log ``reply`` (with its key only when it is stored) and store it when it is deterministic and valid."""
        stored = bool(key) and self._is_valid_response(reply, reqtype)
        cacheable = self._extract_cacheable(reply)
        gen_kwargs = extract_gen_kwargs(request)
        self._log_to_audit(
            reqtype,
            request.task_name,
            request.doc_id,
            request.idx,
            gen_kwargs,
            cacheable,
            cache_key=key if stored else "",
            deterministic=bool(key),
            task_fingerprint=self._task_fingerprints.get(request.task_name, ""),
            model_fingerprint_hash=self._model_fingerprint_hash,
        )
        if stored:
            self._store(key, reqtype, request.task_name, request.doc_id, request.idx, gen_kwargs, cacheable)
            if self._use_scratch:  # lmms-eval's crash-safety copy when the cache folder is on a network file system
                self._entries_since_checkpoint += 1
                if self._entries_since_checkpoint >= self._checkpoint_interval:
                    self._checkpoint_to_run_dir()


RESPONSE_CACHE = "lmms_eval.evaluator.ResponseCache"
"""The run patch (:mod:`scifig_tasks.lmms_eval.patches`): ``simple_evaluate`` builds ``ResponseCache.create(...)``
itself and takes no cache class."""


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """Within the block, lmms-eval's evaluator builds a :class:`ScifigResponseCache` for ``--use_cache`` and writes
    into the run folder :data:`RUN_ID` (unless ``LMMS_CACHE_RUN_ID`` is set)."""
    from scifig_tasks.lmms_eval.patches import during_run

    saved_run = os.environ.get(RUN_ID_VARIABLE)
    os.environ.setdefault(RUN_ID_VARIABLE, RUN_ID)
    try:
        with during_run({RESPONSE_CACHE: lambda original: ScifigResponseCache}):
            yield
    finally:
        if saved_run is None:
            os.environ.pop(RUN_ID_VARIABLE, None)
