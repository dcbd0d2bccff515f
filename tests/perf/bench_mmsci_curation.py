"""Throughput of ``scifig curate mmsci`` on synthetic articles (5 figures each, PNGs of ``--size`` pixels).

Prints, for ``--articles`` articles in ``--subjects`` subjects: the wall time and CPU time of a full build (reading
and verifying every image, splits, questions, captioning, parquet writing, fine-tuning data, card), articles and
figures per second, the peak RSS of this process and the output sizes. At the paper's scale (about 140,000
articles with 740,000 figures) multiply by the figures ratio; the build is single-process and its time is dominated
by reading images (each is read to verify it, then again to store its bytes).

Run from the repository root: ``python -m tests.perf.bench_mmsci_curation [--articles 2000]``.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from curation.mmsci.build import build_mmsci
from tests.harness import mmsci_articles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=2000)
    parser.add_argument("--subjects", type=int, default=10)
    parser.add_argument("--size", type=int, default=256, help="image side in pixels")
    args = parser.parse_args()
    per_subject = max(1, args.articles // args.subjects)
    subjects = {("Category", f"Subject {n}"): per_subject for n in range(args.subjects)}
    original = mmsci_articles.png
    mmsci_articles.png = lambda seed, size=args.size: original(seed, size)  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        source = mmsci_articles.write_articles(Path(tmp) / "in", subjects)
        articles = per_subject * args.subjects
        figures = articles * mmsci_articles.FIGURES
        start, cpu = time.perf_counter(), time.process_time()
        summary = build_mmsci(source, Path(tmp) / "out", seed=0)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        size = sum(path.stat().st_size for path in (Path(tmp) / "out").rglob("*") if path.is_file())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    questions = sum(entry["questions"] for split in summary["mcq"].values() for entry in split.values())
    print(f"articles {articles}, figures {figures}, image {args.size}x{args.size} px")
    rate = f"{articles / wall:.0f} articles/s, {figures / wall:.0f} figures/s"
    print(f"build: {wall:.2f} s wall, {cpu:.2f} s CPU; {rate}")
    print(f"output: {questions} questions, {summary['sft']['records']} sft records, {size / 2**20:.1f} MB")
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
