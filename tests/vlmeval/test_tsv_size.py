"""``scifig export-tsv`` writes the data's own image bytes (a figure with an opaque alpha channel included, as
matplotlib saves them) and shows a progress bar named after the dataset while it writes the rows."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from scifig_tasks.core.images import to_rgb
from scifig_tasks.vlmeval.tsv import read_tsv
from tests.harness.grab_data import Row, records, write_records
from tests.harness.lmms import offline_env
from tests.harness.paths import REPO


def opaque_rgba_png(seed: int) -> bytes:
    """A figure as matplotlib saves it: RGBA pixels, alpha 255 everywhere."""
    image = Image.new("RGBA", (120, 90), (255, 255, 255, 255))
    ImageDraw.Draw(image).line([(0, seed % 90), (119, (seed * 7) % 90)], fill=(0, 0, 255, 255), width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


@pytest.mark.slow
@pytest.mark.cli
def test_export_tsv_writes_the_stored_bytes_with_a_progress_bar(tmp_path: Path) -> None:
    rows = records([Row("properties", "3"), Row("function", "4"), Row("series", "5")])
    for pid, row in enumerate(rows):
        row["decoded_image"] = {"bytes": opaque_rgba_png(pid), "path": None}
    data = write_records(rows, tmp_path / "grab" / "GRAB.parquet")
    command = [sys.executable, "-m", "scifig_tasks.commands.main", "export-tsv", "--data", "grab"]
    completed = subprocess.run(
        [*command, "--out", str(tmp_path / "tsv")],
        env={**offline_env(tmp_path), "SCIFIG_GRAB_DATA": str(data)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "grab TSV: 100%" in completed.stderr and "3/3" in completed.stderr  # the bar, on stderr
    written = [base64.b64decode(cell) for cell in read_tsv(tmp_path / "tsv" / "grab.tsv")["image"]]
    stored = [row["decoded_image"]["bytes"] for row in rows]
    assert sum(map(len, written)) <= sum(map(len, stored))
    assert written == stored  # the data's own bytes, not a re-encoding
    for data_bytes in written:  # what VLMEvalKit reads (convert("RGB")) is what compositing on white gives
        cell = {"bytes": data_bytes, "path": None}
        assert Image.open(io.BytesIO(data_bytes)).convert("RGB").tobytes() == to_rgb(cell).tobytes()
