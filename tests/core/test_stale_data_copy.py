"""Stale or damaged local copies never change what a run reads: a parquet file rewritten to the same size with its
modification time set back gets a new Arrow copy and a new check (the checks' memo and the copy are keyed on the
content), a damaged Arrow copy is built again with one line on stderr, and only a damaged user file is blamed.

Through the real command line: ``scifig export-tsv`` loads the data as ``scifig eval`` does
(:func:`scifig_tasks.core.data.load_benchmark`) and writes the answers it read, in about two seconds a run.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pandas as pd

from tests.harness import warm_start
from tests.harness.grab_data import Row, write_parquet
from tests.harness.lmms import CLI_TIMEOUT_S, _executable

COPY = re.compile(r"[0-9a-f]{40}\.arrow")


def rows(first_answer: str) -> list[Row]:
    return [Row("properties", first_answer), Row("function", "4"), Row("series", "5"), Row("transform", "6")]


def export(env: dict[str, str], out: Path) -> tuple[int, list[str], list[str]]:
    """``scifig export-tsv --data grab``: exit status, stderr lines and the answers of the TSV it wrote."""
    command = [_executable("scifig"), "export-tsv", "--data", "grab", "--out", str(out)]
    done = warm_start.run(command, env, timeout=CLI_TIMEOUT_S)
    tsv = out / "grab.tsv"
    answers = pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False)["answer"].tolist() if tsv.exists() else []
    tsv.unlink(missing_ok=True)
    return done.returncode, [line for line in done.stderr.splitlines() if line.strip()], answers


def rewritten_in_place(path: Path, first_answer: str) -> None:
    """Rewrite ``path`` with another first answer, keeping its size and setting its modification time back."""
    before = path.stat()
    write_parquet(rows(first_answer), path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_damaged_copies_are_rebuilt_and_a_same_size_rewrite_is_read(tmp_path: Path, lmms_env: dict[str, str]) -> None:
    data = write_parquet(rows("123"), tmp_path / "grab" / "GRAB.parquet")
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(data)}
    out = tmp_path / "tsv"
    status, errors, answers = export(env, out)
    assert status == 0 and answers[0] == "123", errors
    (copy,) = [path for path in (tmp_path / "hf-datasets" / "scifig_parquet").iterdir() if COPY.fullmatch(path.name)]

    # a damaged Arrow copy (truncated, then garbage of the same size) is built again, in one line; the file is fine
    for damage in (lambda b: b[: len(b) // 2], lambda b: random.Random(0).randbytes(len(b))):
        copy.write_bytes(damage(copy.read_bytes()))
        status, errors, answers = export(env, out)
        assert status == 0 and answers[0] == "123", errors
        said = [line for line in errors if str(copy) in line]
        assert len(said) == 1 and "building it again" in said[0] and str(data) in said[0], errors
        assert not any("cannot be read as parquet" in line for line in errors)

    # same size, same modification time, other content: the new answer is read (and refused by the checks)
    rewritten_in_place(data, "nan")
    status, errors, answers = export(env, out)
    assert status != 0 and answers == [], errors
    assert str(data) in errors[-1] and "row 0 (0-based), column 'answer': 'nan'" in errors[-1], errors
    rewritten_in_place(data, "125")  # a good answer of the same size: read, not the first version's 123
    status, errors, answers = export(env, out)
    assert status == 0 and answers[0] == "125", errors

    # the user's own damaged file is blamed, as before
    data.write_bytes(random.Random(1).randbytes(data.stat().st_size))
    status, errors, answers = export(env, out)
    assert status != 0 and str(data) in errors[-1] and "cannot be read as parquet" in errors[-1], errors
