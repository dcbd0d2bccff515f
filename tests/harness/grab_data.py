"""Small GRAB-schema datasets built in tests: unique question texts (so a reply policy can key on them), tiny PNGs.

Each row gets a distinct ``[qN]`` tag in its question so the local server can answer per question; the rest of the
question keeps GRAB's wording and precision sentences.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw
from tqdm import tqdm

from scifig_tasks.benchmarks.grab.source import grab_features

INTEGER = " Give your answer as an integer."
ONE_DP = " Give your answer to 1 decimal place."
LIST_QUESTION = (
    "What are the x-values of the two stationary points of the function? Write your answer in the form "
    "[x_coordinate1, x_coordinate2], where x_coordinate1 < x_coordinate2. Give your answer as an integer."
)
"""A GRAB list-format question (the stationary points), as the published set words it."""
EQUATION_QUESTION = (
    "What is the equation of the function? Write your answer in the form y = <m>x + <c>. "
    "Each variable is as an integer."
)
"""A GRAB equation-format question, as the published set words it."""


@dataclass(frozen=True)
class Row:
    task: str
    answer: str
    stem: str = "What is the value of the y-intercept of the function?"
    precision_sentence: str = INTEGER
    category: str = "Intercepts and Gradients"
    complexity: int = 0


def png(seed: int, size: tuple[int, int] = (64, 48)) -> bytes:
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    draw.line([(0, seed % size[1]), (size[0] - 1, (seed * 7) % size[1])], fill=(0, 0, 255), width=2)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def question_text(pid: int, row: Row) -> str:
    return f"[q{pid}] {row.stem}{row.precision_sentence}"


def build(rows: Sequence[Row], image_size: tuple[int, int] = (64, 48), progress: str | None = None) -> datasets.Dataset:
    """GRAB-schema rows with one drawn PNG each; ``progress`` labels a progress bar (for large sets)."""
    numbered = enumerate(tqdm(rows, desc=progress, unit="img", disable=progress is None))
    records = [
        {
            "pid": pid,
            "question": question_text(pid, row),
            "decoded_image": {"bytes": png(pid, image_size), "path": None},
            "image": f"images/{pid}.png",
            "answer": row.answer,
            "task": row.task,
            "category": row.category,
            "complexity": row.complexity,
        }
        for pid, row in numbered
    ]
    return datasets.Dataset.from_list(records, features=grab_features())


def write_parquet(rows: Sequence[Row], path: Path, image_size: tuple[int, int] = (64, 48)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    build(rows, image_size).to_parquet(str(path))
    return path


def records(rows: Sequence[Row], image_size: tuple[int, int] = (64, 48)) -> list[dict]:
    """The rows as plain dicts, each image an undecoded ``{"bytes", "path"}`` cell (to edit before writing)."""
    return build(rows, image_size).cast_column("decoded_image", datasets.Image(decode=False)).to_list()


def write_records(rows: Sequence[dict], path: Path) -> Path:
    """Write GRAB-schema dicts (from :func:`records`, possibly edited) as a parquet file; an image cell with no bytes
    keeps its ``path`` as written (pyarrow writes it: ``datasets`` would look for the file, relative to the working
    directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(datasets.Dataset.from_list(list(rows), features=grab_features()).data.table, str(path))
    return path


def with_invalid_utf8(path: Path, row: int, column: str, raw: bytes) -> Path:
    """Rewrite the parquet file at ``path`` so that string ``column`` holds the bytes ``raw`` (not UTF-8) at ``row``;
    pyarrow writes string data without checking it, as other writers may."""
    table = pq.read_table(str(path))
    values = [value.encode() if isinstance(value, str) else value for value in table.column(column).to_pylist()]
    values[row] = raw
    index = table.schema.get_field_index(column)
    table = table.set_column(index, table.schema.field(index), pa.array(values, type=pa.binary()).view(pa.string()))
    pq.write_table(table, str(path))
    return path


def sample(root: Path) -> dict[str, str]:
    """A small GRAB set (two questions per task) under ``root``: the settings that point at it."""
    rows = [Row("properties", "3"), Row("function", "4"), Row("series", "5"), Row("transform", "6")] * 2
    return {"SCIFIG_GRAB_DATA": str(write_parquet(rows, root / "GRAB.parquet"))}
