"""What a fine-tuning input holds, when it is not what its format expects, and when it is data a benchmark evaluates
(training on it contaminates every later evaluation on that data).
Manual: finetune/README.md, "Data" (what an input holds and when it is evaluation data).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from scifig_tasks.core import registry
from scifig_tasks.core.run_files import RESULTS_SUFFIX, SCORES_SUFFIX

EXPECTED = {
    "sft": "an SFT jsonl file (DIR/sft/train.jsonl of `scifig curate mmsci`)",
    "scifibench": "curated SciFIBench parquet with silver or bronze rows (the silver/ or bronze/ folder of "
    "`scifig curate scifibench --out DIR`)",
    "grab": "GRAB generator output (a folder with GRAB.parquet, from `scifig curate grab --out DIR`)",
}
"""What each format reads, in words."""

TRAINING_TIERS = ("silver", "bronze")
"""The SciFIBench tiers converted by default; ``gold`` is the test set."""


def _counted(counter: collections.Counter[str]) -> str:
    """``gold`` for one value, ``3 gold, 1 silver`` for several."""
    if len(counter) == 1:
        return next(iter(counter))
    return ", ".join(f"{count} {value}" for value, count in counter.most_common())


def _names(files: Iterable[Path], most: int = 4) -> str:
    names = sorted({file.name for file in files})
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def evaluation_splits(folder: Path) -> list[tuple[str, list[Path]]]:
    """The registered data sources whose ``<split>.parquet`` files ``folder`` holds: (source name, files)."""
    found = []
    for source in registry.sources().values():
        files = [
            folder / f"{name}.parquet"
            for split in source.splits
            for name in source.split_names(split)
            if (folder / f"{name}.parquet").is_file()
        ]
        if files:
            found.append((source.name, files))
    return found


def held(path: Path) -> str:
    """What ``path`` holds, in words."""
    path = Path(path)
    if not path.exists():
        return "nothing: it does not exist"
    if path.is_file():
        return f"a {path.suffix or 'plain'} file"
    runs = list(itertools.islice(path.rglob(f"*{RESULTS_SUFFIX}"), 50))
    if runs:
        return f"an lmms-eval run ({_names(runs)}): results and samples are not training data"
    if any(True for _ in path.rglob(f"*{SCORES_SUFFIX}")):
        return "a VLMEvalKit work dir: predictions and scores are not training data"
    if (path / "curation.json").is_file():
        tiers = sorted(folder.name for folder in path.iterdir() if folder.is_dir() and any(folder.glob("*.parquet")))
        return f"a `scifig curate` output whose data is in its sub-folders ({', '.join(tiers) or 'none yet'})"
    splits = evaluation_splits(path)
    if splits:
        name, files = splits[0]
        return f"{name} data in the layout the tasks evaluate ({_names(files)})"
    files = [file for file in path.iterdir() if file.is_file()]
    return f"the files {_names(files)}" if files else "no file"


def nothing_converted(data_format: str, path: Path, files: Sequence[Path] = ()) -> str:
    """Why ``path`` gave no example: what its rows are (SciFIBench tiers), or that it has none."""
    if data_format == "scifibench" and files:
        counts: dict[str, collections.Counter[str]] = {"tier": collections.Counter()}
        counts["negatives"] = collections.Counter()
        for file in files:
            for column, counter in counts.items():
                if column in pq.ParquetFile(file).schema_arrow.names:
                    counter.update(str(value) for value in pq.read_table(file, columns=[column])[column].to_pylist())
        rows = sum(counts["tier"].values())
        if rows:
            tiers, negatives = (_counted(counts[column]) for column in ("tier", "negatives"))
            gold = ", the test set, which is never converted" if "gold" in counts["tier"] else ""
            return (
                f"{path}: no example converted: its {rows} rows are of tier {tiers}{gold} (negatives: {negatives}); "
                f"fine-tuning reads the {' and '.join(TRAINING_TIERS)} tiers with nearest negatives: expected "
                f"{EXPECTED[data_format]}"
            )
    return f"{path}: no example converted: it holds no rows; expected {EXPECTED[data_format]}"


def evaluated(files: Iterable[Path], environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per input file that is data a benchmark evaluates (the rule: finetune/README.md, "Data")."""
    targets: dict[Path, str] = {}
    hub: dict[str, str] = {}
    for key, source in registry.sources().items():
        tasks = registry.of_source(key).name
        local = source.local_path(environ)
        if local is not None:
            why = f"the {source.name} data the {tasks} tasks evaluate ({source.env_var} points at it)"
            targets[local.expanduser().resolve()] = why
            for split in source.splits:
                for name in source.split_names(split):
                    targets[(local / f"{name}.parquet").expanduser().resolve()] = why
        if source.hub_path:
            hub[f"datasets--{source.hub_path.replace('/', '--')}"] = f"the published {source.name} data ({tasks})"
    warnings = []
    for file in files:
        resolved = Path(file).expanduser().resolve()
        why = targets.get(resolved) or next((text for part, text in hub.items() if part in resolved.parts), None)
        if why is not None:
            warnings.append(
                f"{file} is {why}: training on it contaminates every later evaluation on it; "
                "train on a separate set (another seed or source)"
            )
    return warnings
