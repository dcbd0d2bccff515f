"""How long MMSci's reference-based captioning metrics take on a set the size of a captioning task.

Builds ``--samples`` seeded pairs of ~120-word captions (a reference and a partly paraphrased prediction) and times
each metric of :mod:`scifig_tasks.benchmarks.mmsci.captioning_metrics` once: per-caption BLEU-2/4 and ROUGE, METEOR 1.5
and
CIDEr (the pycocoevalcap jars: PTB tokenisation, then METEOR's java process, which loads its tables first), BERTScore
with a tiny random BERT (the default roberta-large is not available offline; its cost scales with model size).
The judged metrics are not timed here: their cost is the judge's (``bench_api_throughput``).

Run: ``python -m tests.perf.bench_mmsci_captioning [--samples 1400]``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from scifig_tasks.benchmarks.mmsci import captioning_metrics as captioning
from tests.harness.mmsci_data import TINY_VOCAB, tiny_bert

WORDS = [word for word in TINY_VOCAB if not word.startswith("[")] + [
    "nanoparticles",
    "absorption",
    "temperature",
    "dependence",
    "microscopy",
    "fluorescence",
    "transport",
    "lattice",
    "mutant",
    "expression",
]


def pairs(count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    predictions, references = [], []
    for _ in range(count):
        reference = [rng.choice(WORDS) for _ in range(120)]
        prediction = [word if rng.random() < 0.6 else rng.choice(WORDS) for word in reference[: rng.randint(60, 120)]]
        references.append(" ".join(reference) + ".")
        predictions.append(" ".join(prediction) + ".")
    return predictions, references


def timed(label: str, action) -> None:
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    values = result.values() if isinstance(result, dict) else [result]
    shown = ", ".join(f"{value.value:.4f}" if value.value is not None else "n/a" for value in values)
    print(f"{label:<28} {elapsed:8.2f} s   value(s): {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1400, help="caption pairs (test split: about 1,400)")
    args = parser.parse_args()
    predictions, references = pairs(args.samples)
    print(f"{args.samples} caption pairs, ~120 words each")
    timed("BLEU-2", lambda: captioning.bleu(predictions, references, 2))
    timed("BLEU-4", lambda: captioning.bleu(predictions, references, 4))
    timed("ROUGE-1/2/L", lambda: captioning.rouge(predictions, references))
    timed("METEOR + CIDEr (jars)", lambda: captioning.meteor_and_cider(predictions, references))
    with tempfile.TemporaryDirectory() as directory:
        model = tiny_bert(Path(directory) / "tiny-bert")
        env = {"SCIFIG_MMSCI_BERTSCORE_MODEL": str(model)}
        timed("BERTScore (tiny BERT)", lambda: captioning.bertscore(predictions, references, env))


if __name__ == "__main__":
    main()
