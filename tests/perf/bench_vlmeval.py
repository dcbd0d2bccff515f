"""What the VLMEvalKit adapters cost: importing VLMEvalKit, writing a GRAB TSV, and scoring its predictions.

What it measures, on ``--questions`` GRAB-schema rows (default 2,000) with RGB PNG images of ``--image-size``
(default 800x600), built in a temporary directory:

* ``import vlmeval``: wall time of the import in a fresh interpreter (what every ``scifig vlmeval`` run pays first);
* ``export``: :func:`scifig_tasks.vlmeval.tsv.write_tsv` — validation of the source rows, base64 of the stored image
  bytes, the TSV written — with its rows per second and the TSV size (about 4/3 of the image bytes);
* ``load``: VLMEvalKit's ``build_dataset("SciFig_GRAB")`` reading that TSV after ``register()``;
* ``evaluate``: ``SciFigGRAB.evaluate`` on a prediction TSV (every 10th reply wrong), rows per second, and the
  accuracy it reports next to the expected one (0.9).

How to read the figures: export and evaluate should grow linearly with the questions; evaluate should be far faster
than any model (it is exact matching); the accuracy must equal the expected value.

Run from the repository root: ``python -m tests.perf.bench_vlmeval`` (options ``--questions``,
``--image-size``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from tests.harness.grab_data import Row, write_parquet


def _import_time() -> float:
    code = "import time; t = time.perf_counter(); import vlmeval; print(time.perf_counter() - t)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(completed.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--image-size", default="800x600")
    args = parser.parse_args(argv)
    width, height = (int(value) for value in args.image_size.split("x"))

    print(f"import vlmeval (fresh interpreter): {_import_time():.1f} s")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        tasks = ("properties", "function", "series", "transform")
        rows = [Row(tasks[i % 4], str(i % 50)) for i in range(args.questions)]
        started = time.perf_counter()
        data = write_parquet(rows, root / "grab" / "GRAB.parquet", image_size=(width, height))
        print(f"built {args.questions} rows ({width}x{height}) in {time.perf_counter() - started:.1f} s")
        os.environ["SCIFIG_GRAB_DATA"] = str(data)
        os.environ["LMUData"] = str(root / "lmu")  # noqa: SIM112 -- VLMEvalKit's own spelling
        (root / "lmu").mkdir()

        from scifig_tasks.vlmeval import tsv

        started = time.perf_counter()
        path, count = tsv.write_tsv("SciFig_GRAB", root / "lmu")
        elapsed = time.perf_counter() - started
        size = path.stat().st_size / 2**20
        print(f"export: {count} rows in {elapsed:.2f} s ({count / elapsed:.0f} rows/s), TSV {size:.1f} MB")

        import vlmeval.dataset

        from scifig_tasks.vlmeval import register

        register()
        started = time.perf_counter()
        dataset = vlmeval.dataset.build_dataset("SciFig_GRAB")
        print(f"load: build_dataset in {time.perf_counter() - started:.2f} s")

        answers = list(dataset.data["answer"])
        predictions = [answer if i % 10 else f"x{answer}" for i, answer in enumerate(answers)]
        table = pd.DataFrame({"index": list(dataset.data["index"]), "prediction": predictions})
        prediction_file = root / "fake_SciFig_GRAB.tsv"
        table.to_csv(prediction_file, sep="\t", index=False)
        started = time.perf_counter()
        metrics = dataset.evaluate(str(prediction_file))
        elapsed = time.perf_counter() - started
        print(f"evaluate: {count} predictions in {elapsed:.2f} s ({count / elapsed:.0f} rows/s)")
        expected = sum(1 for i in range(count) if i % 10) / count
        print(f"accuracy {metrics['accuracy']:.4f} (expected {expected:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
