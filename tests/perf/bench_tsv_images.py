"""Writing GRAB's VLMEvalKit TSV against copying its PNG bytes, per row, in one run.

What it measures, on ``--graphs`` GRAB graphs built by the generator (``curation.grab.build.build_grab``, a balanced
subset of the plan) at ``--dpi`` (default 1000, the generator's default: 6000 x 5000 RGBA pixels for the
fixed-schema graphs), in a temporary directory:

* ``copy PNG bytes``: the floor. Each row's stored PNG bytes read from the parquet file (pyarrow), encoded in base64
  as they are and written to a file, one line per row;
* ``TSV, fresh build``: :func:`scifig_tasks.vlmeval.tsv.write_tsv` of ``grab`` (the command's
  ``scifig export-tsv --data grab`` and what ``scifig vlmeval`` writes when the file is missing) as it runs first
  after ``scifig curate grab``, in another process: the only records of the images are those the builder wrote when
  it encoded them (:mod:`scifig_tasks.core.checked_images`: an RGBA PNG made from a buffer whose alpha is 255
  everywhere, vouched for by its SHA-256), so no image is decoded; base64 of the stored bytes, the rows written one
  at a time;
* ``TSV, images not seen``: the same write with no record of the images (data from elsewhere, or a build whose
  records were removed): every image is decoded once, strictly, and its alpha channel read (an RGBA PNG goes to
  VLMEvalKit as it is only when that channel is opaque everywhere: VLMEvalKit drops it without compositing);
* ``TSV, images seen``: the same write where the images passed before (another dataset of the same source, e.g.
  ``grab_paper`` after ``grab``, a rewrite into another folder or for a changed file, a later process: the record in
  the datasets cache): base64 of the stored bytes only.

The data is loaded (and checked) once before the clock starts; each write times the whole of ``write_tsv`` (reading
the rows, the images, the file); the records a write starts from (the builder's alone, none, or all) are set before
the clock starts. Timing: ``--repeat`` rounds, the four interleaved within a round (their order turns each round),
each round's time divided by the rows; printed: the median per row over rounds, the range (min-max) and the ratio
to the copy's median. Then whether every cell of the fresh build's TSV, decoded as VLMEvalKit decodes it
(``vlmeval.smp.vlm.decode_base64_to_image``, imported when installed; else the same steps with Pillow), gives the
PNG's pixels, and the verdict against the bound: the first TSV of a fresh build, and a TSV whose images were seen,
within 2x of the copy.

``--profile`` prints where one write with the images not seen spends its time (cProfile, the 12 functions with the
most cumulative time).

A write also pays a fixed cost (the split's undecoded view, the pass over the rows' text for the columns, the
source record: about 50 ms), which the full set's 2,170 rows share; with few graphs it weighs on the per-row figures.

Run from the repository root: ``python -m tests.perf.bench_tsv_images`` (options ``--graphs`` (default 24),
``--dpi``, ``--repeat`` (default 3), ``--profile``). At the defaults it takes 3-5 minutes on the shared 2-core
machine, most of it building the set and decoding every image (the writes with the images not seen, and the pixel
check).
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BOUND = 2.0
"""The first TSV of a fresh build, and a TSV whose images were seen, cost at most this many times the copy of the PNG
bytes."""


def _copy(parquet: Path, out: Path) -> int:
    import pyarrow.parquet as pq

    cells = pq.read_table(parquet, columns=["decoded_image"]).column("decoded_image").to_pylist()
    with out.open("wb") as handle:
        for cell in cells:
            handle.write(base64.b64encode(cell["bytes"]) + b"\r\n")
    return len(cells)


def _forget_images(cache: Path) -> None:
    """No record of any image: this process's and the datasets cache's."""
    from scifig_tasks.core import checked_images

    checked_images.forget()
    shutil.rmtree(cache / checked_images.FOLDER, ignore_errors=True)


def _as_built(cache: Path, vouched: Path) -> None:
    """The records as a process other than the builder finds them just after a build: the builder's alone."""
    from scifig_tasks.core import checked_images

    _forget_images(cache)
    shutil.copytree(vouched, cache / checked_images.FOLDER)


def _vlmeval_decode() -> tuple[Callable[[str], object], str]:
    """VLMEvalKit's decoder of a TSV image cell, or the same steps with Pillow when VLMEvalKit is not installed."""
    try:
        from vlmeval.smp.vlm import decode_base64_to_image

        return decode_base64_to_image, "vlmeval.smp.vlm.decode_base64_to_image"
    except ImportError:
        from PIL import Image

        def decode(text: str) -> object:
            image = Image.open(io.BytesIO(base64.b64decode(text)))
            return image.convert("RGB") if image.mode in ("RGBA", "P", "LA") else image

        return decode, "Pillow, as VLMEvalKit decodes (not installed)"


def _same_pixels(tsv_path: Path, parquet: Path) -> tuple[bool, bool, str]:
    """Whether every cell decodes (as VLMEvalKit does) to the pixels of its PNG composited on white, and whether every
    cell holds the PNG's own bytes."""
    import pyarrow.parquet as pq

    from scifig_tasks.core.images import to_rgb
    from scifig_tasks.vlmeval.tsv import read_tsv

    decode, how = _vlmeval_decode()
    cells = pq.read_table(parquet, columns=["decoded_image"]).column("decoded_image").to_pylist()
    written = list(read_tsv(tsv_path)["image"])
    pixels = own_bytes = len(cells) == len(written)
    for cell, text in zip(cells, written, strict=False):
        own_bytes = own_bytes and base64.b64decode(text) == cell["bytes"]
        pixels = pixels and decode(text).convert("RGB").tobytes() == to_rgb(cell).tobytes()
    return pixels, own_bytes, how


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=24)
    parser.add_argument("--dpi", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-tsv-") as folder:
        root = Path(folder)
        cache = root / "hf-datasets"
        os.environ.update(
            {"HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        )  # before datasets is imported: its cache is read once
        from curation.grab.build import VOUCHER, build_grab

        started = time.perf_counter()
        built = build_grab(root / "grab", limit=args.graphs, dpi=args.dpi, workers=2, progress=False)
        parquet = root / "grab" / "GRAB.parquet"
        os.environ["SCIFIG_GRAB_DATA"] = str(parquet)
        size = parquet.stat().st_size / built.rows / 1000
        print(
            f"GRAB TSV against copying the PNG bytes: {built.rows} graphs at dpi {args.dpi} (parquet {size:.0f} kB a"
            f" row), built in {time.perf_counter() - started:.1f} s; {args.repeat} rounds; load average"
            f" {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        from scifig_tasks.core import checked_images
        from scifig_tasks.vlmeval import tsv

        vouched = root / "vouched"
        shutil.copytree(cache / checked_images.FOLDER, vouched)
        builder = sum(json.loads(path.read_text())["by"] == VOUCHER for path in vouched.glob("*.json"))
        print(f"  the builder vouched for {builder} of {built.rows} images", flush=True)
        tsv.write_tsv("grab", root / "warm-up")  # loads and checks the data once, imports what writing needs
        if args.profile:
            _forget_images(cache)
            profile = cProfile.Profile()
            profile.runcall(tsv.write_tsv, "grab", root / "profiled")
            print("\none write, images not seen (cProfile, cumulative seconds):")
            pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(12)

        # name -> (what the write starts from, set before the clock starts; the timed work)
        contenders: dict[str, tuple[Callable[[], None], Callable[[], int]]] = {
            "copy PNG bytes": (lambda: None, lambda: _copy(parquet, root / "copy.txt")),
            "TSV, fresh build": (
                lambda: _as_built(cache, vouched),
                lambda: tsv.write_tsv("grab", root / "fresh")[1],
            ),
            "TSV, images not seen": (lambda: _forget_images(cache), lambda: tsv.write_tsv("grab", root / "first")[1]),
            "TSV, images seen": (lambda: None, lambda: tsv.write_tsv("grab", root / "seen")[1]),
        }
        per_row: dict[str, list[float]] = {name: [] for name in contenders}
        order = list(contenders)
        for round_number in range(args.repeat):
            turned = order[round_number % len(order) :] + order[: round_number % len(order)]
            for name in turned:
                prepare, timed = contenders[name]
                prepare()
                start = time.perf_counter()
                rows = timed()
                per_row[name].append((time.perf_counter() - start) / rows)
            print(f"  round {round_number + 1}/{args.repeat} done", flush=True)

        copy = statistics.median(per_row["copy PNG bytes"])
        print(f"\n  {'':<22} {'ms/row':>9} {'(range)':>19} {'vs copy':>8}")
        for name, times in per_row.items():
            median = statistics.median(times)
            print(
                f"  {name:<22} {1000 * median:9.2f} ({1000 * min(times):7.2f}-{1000 * max(times):7.2f})"
                f" {median / copy:7.2f}x"
            )
        pixels, own_bytes, how = _same_pixels(root / "fresh" / "grab.tsv", parquet)
        print(
            f"\n  every image of the fresh build's TSV decodes ({how}) to its PNG's pixels:"
            f" {'yes' if pixels else 'NO'}; holds the PNG's own bytes: {'yes' if own_bytes else 'no'}"
        )
        ratios = {name: statistics.median(per_row[name]) / copy for name in contenders}
        fresh, seen = ratios["TSV, fresh build"], ratios["TSV, images seen"]
        verdict = "within" if max(fresh, seen) <= BOUND else "over"
        print(
            f"  verdict: fresh build {fresh:.2f}x the copy's time per row, images seen {seen:.2f}x ({verdict} the"
            f" {BOUND:g}x bound); images not seen {ratios['TSV, images not seen']:.2f}x (each image decoded once,"
            " strictly, and its alpha channel read)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
