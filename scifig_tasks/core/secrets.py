"""API keys and URL credentials never reach the screen, the logs or any file scifig writes.

Secrets (key-like variables, URL credentials, key-like command-line values) are replaced by labels; what goes to the
judge is also masked by shape. Manual: docs/judge.md, 'Keys and credentials'.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, TextIO
from urllib.parse import unquote
from xml.sax.saxutils import escape

from scifig_tasks.core.pickle_files import masked_pickle, removed_line
from scifig_tasks.core.run_files import replace_file

SECRET_NAME = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
MIN_SECRET_CHARS = 8
"""Shorter values are not masked: they would mask ordinary words."""
UNNAMED = "<secret>"
UNNAMED_URL = "<url credentials>"
URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#\"'<>,]*)@")
"""``scheme://USERINFO@``: the userinfo ends at the netloc's last ``@`` (as ``urllib.parse.urlsplit`` reads it)."""
ASSIGNED_KEY = re.compile(r"(?i)\b(\w*(?:key|token|secret|password))=([^\s,;&\"'<>]+)")
"""``NAME=VALUE`` for a key-like name (``api_key=``, ``key=``, ``hf_token=``): the value ends at a comma (an argument
list), whitespace or a quote."""
CREDENTIAL = "<credential>"
"""What :func:`mask_credentials` writes in place of a credential found by its shape."""
SCHEME_TOKEN = re.compile(r"(?i)\b(?:basic|bearer)\s+([A-Za-z0-9+/=._~-]+)")
"""The token of an HTTP ``Basic`` / ``Bearer`` credential, as an ``Authorization`` header holds it."""
AUTHORIZATION = re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?([^\s\"',;<>]+)")
"""An ``Authorization`` header (or argument) whose value is the token itself (no scheme)."""
KEY_SHAPED = re.compile(r"(?<![\w-])(?:sk-(?=[\w-]*\d)[\w-]{16,}|hf_[A-Za-z0-9]{30,})")
"""Keys recognised by their prefix: OpenAI-style ``sk-...`` (with a digit) and Hugging Face ``hf_...`` tokens."""


def url_credentials(value: str) -> list[str]:
    """The credentials written in the URLs of ``value``: the password, ``user:password`` (as written and
    percent-decoded) and ``base64(user:password)``; for a URL with a user and no password, the user (a token)."""
    found: list[str] = []
    for match in URL_USERINFO.finditer(value):
        user, colon, password = match.group(1).partition(":")
        for login, word in dict.fromkeys([(user, password), (unquote(user), unquote(password))]):
            found += [word, f"{login}:{word}"] if colon else [login]
            found.append(base64.b64encode(f"{login}:{word}".encode()).decode())
    return found


def assigned_keys(value: str) -> list[str]:
    """The values ``value`` assigns to key-like names (``api_key=...``, ``token=...`` in ``--model_args``)."""
    return [match.group(2) for match in ASSIGNED_KEY.finditer(value)]


def secrets_of(
    environ: Mapping[str, str], extra: Iterable[str] = (), command_line: Iterable[str] = ()
) -> dict[str, str]:
    """``secret -> label`` for the environment's secrets (named keys and URL credentials), the ``extra`` values
    (keys named elsewhere), the URL credentials and key assignments (:func:`assigned_keys`) in the ``command_line``
    values and the secrets :func:`declared` by the running command, longest first (so a secret that contains another
    is masked whole). A value found twice keeps the most precise label (a variable's name)."""
    command_line = list(command_line)
    found = dict(_declared)
    found |= {secret: UNNAMED_URL for value in command_line for secret in url_credentials(value)}
    found |= {secret: UNNAMED for value in command_line for secret in assigned_keys(value)}
    found |= {value: UNNAMED for value in extra}
    for name, value in sorted(environ.items()):
        found |= {secret: f"<{name} credentials>" for secret in url_credentials(value)}
    found |= {value: f"<{name}>" for name, value in sorted(environ.items()) if SECRET_NAME.search(name)}
    return {
        value: label
        for value, label in sorted(found.items(), key=lambda item: -len(item[0]))
        if len(value) >= MIN_SECRET_CHARS
    }


_declared: dict[str, str] = {}


@contextlib.contextmanager
def declared(secrets: Mapping[str, str]) -> Iterator[None]:
    """Within the block, :func:`secrets_of` also returns ``secrets`` (a command line's keys and URL credentials), so
    a writer that sees only the environment (the judge cache, a dataset's records) masks them too."""
    saved = dict(_declared)
    _declared.update(secrets)
    try:
        yield
    finally:
        _declared.clear()
        _declared.update(saved)


def mask(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every secret replaced by its label."""
    for secret, label in secrets.items():
        text = text.replace(secret, label)
    return text


def mask_credentials(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret replaced by its label (:func:`mask`), then every credential recognised by its shape
    (docs/judge.md, 'Keys and credentials') replaced by :data:`CREDENTIAL`; the text around each is kept as it is."""
    text = mask(text, secrets or {})
    text = URL_USERINFO.sub(lambda match: _masked_group(match, _userinfo_shaped), text)
    text = SCHEME_TOKEN.sub(lambda match: _masked_group(match, _token_shaped), text)
    text = AUTHORIZATION.sub(lambda match: _masked_group(match, _token_shaped), text)
    text = ASSIGNED_KEY.sub(lambda match: _masked_group(match, _long_enough, group=2), text)
    return KEY_SHAPED.sub(CREDENTIAL, text)


def _masked_group(match: re.Match[str], shaped: Callable[[str], bool], group: int = 1) -> str:
    """The text of ``match`` with its ``group`` replaced by :data:`CREDENTIAL` when ``shaped`` says it is one."""
    if not shaped(match.group(group)):
        return match.group(0)
    start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
    return match.group(0)[:start] + CREDENTIAL + match.group(0)[end:]


def _long_enough(value: str) -> bool:
    return len(value) >= MIN_SECRET_CHARS


def _userinfo_shaped(userinfo: str) -> bool:
    """A URL's userinfo is a credential when it holds a password, or is a user long enough to be a token."""
    return ":" in userinfo or _long_enough(userinfo)


def _token_shaped(token: str) -> bool:
    """A token is a credential when it is an HTTP Basic credential (base64 of ``user:password``) or a long run of
    letters and digits mixed (an ordinary word after "Basic" or "Bearer" has no digit)."""
    if not _long_enough(token):
        return False
    try:
        decoded = base64.b64decode(token, validate=True).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        decoded = ""
    if ":" in decoded and decoded.isprintable():
        return True
    return any(char.isdigit() for char in token) and any(char.isalpha() for char in token)


def mask_value(value: Any, secrets: Mapping[str, str]) -> Any:
    """``value`` with every string in it masked: a string, the keys and items of mappings, lists, tuples and sets,
    the cells, index and columns of a pandas ``DataFrame`` / ``Series``; anything else is returned as it is."""
    if not secrets:
        return value
    if isinstance(value, str):
        return mask(value, secrets)
    if isinstance(value, Mapping):
        return {mask_value(key, secrets): mask_value(item, secrets) for key, item in value.items()}
    if type(value) in (list, tuple, set):
        return type(value)(mask_value(item, secrets) for item in value)
    pandas = sys.modules.get("pandas")  # a pandas object exists only where pandas was imported
    if pandas is not None and isinstance(value, pandas.DataFrame | pandas.Series):
        value = value.map(lambda cell: mask_value(cell, secrets))
        value.index = value.index.map(lambda label: mask_value(label, secrets))
        if hasattr(value, "columns"):
            value.columns = value.columns.map(lambda label: mask_value(label, secrets))
        return value
    return value


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


def mask_file(path: Path, secrets: Mapping[str, str]) -> bool:
    """Mask the secrets in the file ``path`` in place (written anew only when it changes); return whether it changed.

    A zip container (``.xlsx``, whose strings are compressed) is masked member by member, the labels XML-escaped in
    ``.xml`` members; a pickle (``.pkl``, whose strings are length-prefixed) is never loaded: its strings are masked
    where they lie (:func:`scifig_tasks.core.pickle_files.masked_pickle`), and one holding a secret elsewhere (in its
    bytes) is removed, with one line on stderr; any other file byte for byte (UTF-8). A link's target is masked."""
    if not secrets:
        return False
    path = path.resolve()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [(info, archive.read(info)) for info in archive.infolist()]
        masked = [(info, _mask_bytes(data, secrets, xml=info.filename.endswith(".xml"))) for info, data in members]
        if masked == members:
            return False

        def write_zip(handle: BinaryIO) -> None:
            with zipfile.ZipFile(handle, "w") as archive:
                for info, data in masked:
                    archive.writestr(info, data)

        replace_file(path, write_zip)
        return True
    data = path.read_bytes()
    if not any(secret.encode() in data for secret in secrets):
        return False
    if path.suffix == ".pkl":
        masked_data = masked_pickle(data, lambda text: mask(text, secrets))
        if masked_data is None or any(secret.encode() in masked_data for secret in secrets):
            path.unlink()
            print(removed_line(path), file=sys.stderr)
            return True
        replace_file(path, lambda handle: handle.write(masked_data))
        return True
    masked = _mask_bytes(data, secrets)
    replace_file(path, lambda handle: handle.write(masked))  # a full disk leaves the file as it was, not cut
    return True


def _mask_bytes(data: bytes, secrets: Mapping[str, str], xml: bool = False) -> bytes:
    for secret, label in secrets.items():
        data = data.replace(secret.encode(), (escape(label) if xml else label).encode())
    return data


def mask_files(
    root: Path, secrets: Mapping[str, str], since: float | None = None, select: Callable[[Path], bool] | None = None
) -> list[Path]:
    """Mask the secrets in the files under ``root`` (modified at or after ``since``, chosen by ``select``) with
    :func:`mask_file`; return the files changed (a file reached through several links is masked once)."""
    changed, seen = [], set()
    for path in sorted(root.rglob("*")) if secrets and root.is_dir() else []:
        if not path.is_file() or path.resolve() in seen:
            continue
        if (since is not None and path.stat().st_mtime < since) or (select is not None and not select(path)):
            continue
        seen.add(path.resolve())
        if mask_file(path, secrets):
            changed.append(path)
    return changed


@contextlib.contextmanager
def masked_output(secrets: Mapping[str, str], output_path: str | Path | None = None) -> Iterator[None]:
    """Mask the secrets in ``sys.stdout`` / ``sys.stderr`` inside the block (where they are also :func:`declared`),
    then in the files written under ``output_path`` meanwhile."""
    if not secrets:
        yield
        return
    started = time.time() - 1.0  # file times may be rounded down
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout, secrets), MaskedStream(sys.stderr, secrets)
    try:
        with declared(secrets):
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = saved
        if output_path:
            mask_files(Path(output_path), secrets, since=started)
