"""The gold split from a verifier's accepted ids (SciFIBench paper §3.3, step 9: gold = the hardest questions,
category-balanced, human-verified; we produce the pool and the sheet, the user verifies).
Manual: curation/scifibench/README.md, "Output", **Verification** (accepted-ids file format, ``scifibench-accept``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curation.scifibench.card import write_card
from curation.scifibench.questions import TASKS
from curation.scifibench.splits import hardest_balanced
from curation.scifibench.writer import write_table
from scifig_tasks.core.errors import DataError

SUMMARY = "curation.json"
_ALIASES = {"f2c": "Figure2Caption", "c2f": "Caption2Figure", "figure2caption": "Figure2Caption"}
_ALIASES["caption2figure"] = "Caption2Figure"


def load_summary(out: Path) -> dict[str, Any]:
    path = out / SUMMARY
    if not path.exists():
        raise DataError(str(out), None, None, f"has no {SUMMARY}: run `scifig curate scifibench --out {out}` first")
    return json.loads(path.read_text())


def _task(token: str, split_names: dict[str, str]) -> str | None:
    for task, split in split_names.items():
        if token in (task, split):
            return task
    return _ALIASES.get(token.lower())


def read_accepted(path: Path, candidates: dict[str, set[int]], split_names: dict[str, str]) -> dict[str, set[int]]:
    """The accepted ids per task of an accepted-ids file, checked against the candidate ids."""
    if not path.exists():
        raise DataError(str(path), None, None, "does not exist")
    accepted: dict[str, set[int]] = {task: set() for task in TASKS}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].replace(",", " ").strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise DataError(str(path), None, None, f"line {number}: expected '<task> <ID>', got {raw!r}")
        task = _task(parts[0], split_names)
        if task is None:
            known = ", ".join([*TASKS, *split_names.values()])
            raise DataError(str(path), None, None, f"line {number}: unknown task {parts[0]!r} (expected {known})")
        try:
            question = int(parts[1])
        except ValueError:
            raise DataError(str(path), None, None, f"line {number}: ID {parts[1]!r} is not an integer") from None
        if question not in candidates[task]:
            raise DataError(str(path), None, None, f"line {number}: ID {question} is not a {task} gold candidate")
        accepted[task].add(question)
    return accepted


def _gold_rows(table: pa.Table, accepted: set[int], gold_size: int) -> list[int]:
    ids = table.column("ID").to_pylist()
    difficulties = table.column("difficulty").to_pylist()
    categories = table.column("Category").to_pylist()
    ordered = sorted((row for row, q in enumerate(ids) if q in accepted), key=lambda r: (difficulties[r], ids[r]))
    return hardest_balanced(ordered, gold_size, lambda row: categories[row])


def _with_tier(table: pa.Table, tier: str) -> pa.Table:
    return table.set_column(table.schema.get_field_index("tier"), "tier", pa.array([tier] * table.num_rows))


def accept(out: Path, accepted_path: Path, gold_size: int | None = None) -> dict[str, Any]:
    """Write the gold split of ``out`` from the accepted ids in ``accepted_path``; returns the updated summary."""
    summary = load_summary(out)
    split_names: dict[str, str] = summary["split_names"]
    gold_size = gold_size or summary["settings"]["gold_size"]
    tables = {}
    for task in TASKS:
        path = out / "gold_candidates" / f"{split_names[task]}.parquet"
        if not path.exists():
            raise DataError(str(path), None, None, "missing: the candidate pool of this curation is incomplete")
        tables[task] = pq.read_table(path)
    candidates = {task: set(table.column("ID").to_pylist()) for task, table in tables.items()}
    accepted = read_accepted(accepted_path, candidates, split_names)
    gold: dict[str, Any] = {"questions": {}, "accepted": {}, "categories": {}, "files": {}}
    random: dict[str, Any] = {"questions": {}, "categories": {}, "files": {}}
    for task in TASKS:
        split = split_names[task]
        for tier in ("gold", "gold_random_negatives"):
            (out / tier / f"{split}.parquet").unlink(missing_ok=True)
        rows = _gold_rows(tables[task], accepted[task], gold_size)
        gold["accepted"][task] = len(accepted[task])
        if len(rows) < gold_size:
            print(
                f"scifibench-accept: {task}: {len(rows)} gold questions ({len(accepted[task])} accepted; "
                f"target {gold_size})",
                file=sys.stderr,
            )
        if not rows:
            continue
        chosen = _with_tier(tables[task].take(rows), "gold")
        write_table(out / "gold" / f"{split}.parquet", chosen)
        ids = chosen.column("ID").to_pylist()
        gold["questions"][task] = len(ids)
        gold["categories"][task] = dict(sorted(Counter(chosen.column("Category").to_pylist()).items()))
        gold["files"][split] = f"gold/{split}.parquet"
        variants = out / "random_negatives" / f"{split}.parquet"
        if variants.exists():
            pool = pq.read_table(variants, filters=[("tier", "=", "gold_candidates")])
            pool = pool.filter(pc.is_in(pool.column("ID"), value_set=pa.array(ids, pa.int64())))
            position = {question: row for row, question in enumerate(pool.column("ID").to_pylist())}
            variant = _with_tier(pool.take([position[question] for question in ids]), "gold")
            write_table(out / "gold_random_negatives" / f"{split}.parquet", variant)
            random["questions"][task] = len(ids)
            random["categories"][task] = gold["categories"][task]
            random["files"][split] = f"gold_random_negatives/{split}.parquet"
    summary["tiers"]["gold"] = gold
    summary["tiers"]["gold_random_negatives"] = random
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=False))
    write_card(out, summary)
    return summary
