"""A reply cache that cannot be used stops ``scifig eval`` in one line naming its file, before any reply is read
from it or any score written: a truncated or overwritten ``cache.db`` (lmms-eval skipped it with a warning and failed
at the end with ``DatabaseError``, naming nothing) or one that cannot be written (lmms-eval failed at the end with
``attempt to write a readonly database``)."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from lmms_eval.caching.response_cache import _SCHEMA_SQL

from scifig_tasks.commands.eval import CACHE_FOLDER
from scifig_tasks.lmms_eval.response_cache import RUN_ID, check_cache_folder
from tests.harness import warm_start
from tests.harness.grab_data import sample
from tests.harness.lmms import CLI_TIMEOUT_S, _executable

READ_ONLY = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
"""Run as root, a command ignores file modes: without these capabilities it obeys them (util-linux's setpriv)."""


def write_cache(path: Path, replies: int = 400) -> Path:
    """A real reply cache (lmms-eval's schema) of several pages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.executescript(_SCHEMA_SQL)
    connection.executemany(
        "INSERT INTO responses (cache_key, request_type, task_name, doc_id, idx, gen_kwargs, response, created_at) "
        "VALUES (?, 'generate_until', 'grab_properties', ?, 0, '{}', ?, 0)",
        [(f"key{i}", i, f'"reply {i} ' + "x" * 200 + '"') for i in range(replies)],
    )
    connection.commit()
    connection.close()
    return path


def truncated(path: Path) -> list[str]:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return []


def garbage(path: Path) -> list[str]:
    path.write_bytes(random.Random(0).randbytes(path.stat().st_size))
    return []


def read_only(path: Path) -> list[str]:
    path.chmod(0o444)
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only file cannot be made")
    return READ_ONLY


@pytest.mark.parametrize(
    ("damage", "problem"),
    [(truncated, "is damaged"), (garbage, "is damaged"), (read_only, "cannot be written")],
    ids=["truncated", "garbage", "read-only"],
)
def test_an_unusable_reply_cache_is_named_in_one_line(
    tmp_path: Path, lmms_env: dict[str, str], damage: Callable[[Path], list[str]], problem: str
) -> None:
    out = tmp_path / "out"
    database = write_cache(out / CACHE_FOLDER / "scifig_chance" / "cache.db")
    prefix = damage(database)
    before = database.read_bytes()
    env = {**lmms_env, **sample(tmp_path / "grab")}
    command = [*prefix, _executable("scifig"), "eval", "--model", "scifig_chance", "--tasks", "grab", "--limit", "1"]
    done = warm_start.run([*command, "--output_path", str(out)], env, timeout=CLI_TIMEOUT_S)
    last = ([line for line in done.stderr.splitlines() if line.strip()] or [""])[-1]
    assert done.returncode != 0, done.stderr[-3000:]
    assert last.startswith("scifig eval: ") and f"the model-reply cache {database} {problem}" in last, last
    assert "--no-cache" in last and "--use_cache another folder" in last, last
    assert not list(out.rglob("*_results.json"))  # nothing scored
    assert database.read_bytes() == before  # the file is left as it was, for the user to look at


def test_a_whole_cache_and_an_empty_file_pass_the_checks(tmp_path: Path) -> None:
    """The checks refuse only what is wrong: a whole cache, and an empty file (SQLite's empty database), pass."""
    for database in (write_cache(tmp_path / "whole" / "cache.db"), tmp_path / "empty" / "cache.db"):
        database.parent.mkdir(parents=True, exist_ok=True)
        database.touch()
        write_cache(database.parent / "runs" / RUN_ID / "rank_0.db")
        check_cache_folder(database.parent, RUN_ID)
