"""The dataset card (``README.md``) of a curated SciFIBench-style set: a Hub YAML header declaring one config per tier
(``datasets.load_dataset(DIR, "silver")`` reads it), then how the set was built (settings, corpus counts, index,
similarity threshold and the distance distribution it came from), the composition of every tier, the columns, how to
evaluate it and the citation. Rendered from the curation summary (``curation.json``), again after
``scifibench-accept`` adds the gold split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation import card

CITATION = """@article{roberts2024scifibench,
  title={SciFIBench: Benchmarking Large Multimodal Models for Scientific Figure Interpretation},
  author={Roberts, Jonathan and Han, Kai and Houlsby, Neil and Albanie, Samuel},
  journal={arXiv preprint arXiv:2405.08807},
  year={2024}
}"""

TIER_ORDER = ("gold", "gold_random_negatives", "gold_candidates", "silver", "bronze", "random_negatives")
TIER_TEXT = {
    "gold": "human-verified: accepted candidates, hardest first, category-balanced",
    "gold_random_negatives": "the gold questions with random negatives (ablation)",
    "gold_candidates": "candidate pool for gold: hardest questions, category-balanced (verify with verification/)",
    "silver": "the next hardest questions outside the pool",
    "bronze": "all remaining questions",
    "random_negatives": "every question of the pool, silver and bronze with random negatives (ablation)",
}


def _configs(summary: dict[str, Any]) -> list[str]:
    lines = []
    for tier in TIER_ORDER:
        files = summary["tiers"].get(tier, {}).get("files", {})
        if not files:
            continue
        lines += [f"- config_name: {tier}", "  data_files:"]
        for split, path in sorted(files.items()):
            lines += [f"  - split: {split}", f"    path: {path}"]
    return lines


def _columns(summary: dict[str, Any]) -> list[tuple[str, dict[str, int], int]]:
    """(heading, category counts, questions) per tier; one column per task where the tasks differ (gold)."""
    columns = []
    for tier in TIER_ORDER:
        entry = summary["tiers"].get(tier)
        if not entry or not entry.get("files"):
            continue
        per_task = list(entry["categories"].items())
        if all(counts == per_task[0][1] for _, counts in per_task):
            columns.append((tier, per_task[0][1], next(iter(entry["questions"].values()))))
        else:
            columns += [(f"{tier} {task}", counts, entry["questions"][task]) for task, counts in per_task]
    return columns


def _composition(summary: dict[str, Any]) -> str:
    columns = _columns(summary)
    categories = sorted({name for _, counts, _ in columns for name in counts})
    rows = ["| category | " + " | ".join(heading for heading, _, _ in columns) + " |"]
    rows.append("|---|" + "---:|" * len(columns))
    for name in categories:
        rows.append(f"| {name} | " + " | ".join(str(counts.get(name, 0)) for _, counts, _ in columns) + " |")
    rows.append("| **questions per task** | " + " | ".join(str(total) for _, _, total in columns) + " |")
    return "\n".join(rows)


def card_text(summary: dict[str, Any]) -> str:
    settings, corpus, threshold = summary["settings"], summary["corpus"], summary["threshold"]
    header = "\n".join(
        [
            "---",
            f"pretty_name: SciFIBench-style {summary['domain']} set (curated with scifig)",
            "task_categories:",
            "- visual-question-answering",
            "- multiple-choice",
            "configs:",
            *_configs(summary),
            "---",
        ]
    )
    quantiles = ", ".join(f"{name} {value:.4f}" for name, value in threshold["quantiles"].items())
    dropped = ", ".join(f"{name} {count}" for name, count in corpus["dropped"].items()) or "none"
    gold = summary["tiers"].get("gold")
    gold_note = (
        "Gold: "
        + ", ".join(f"{task} {count} of {gold['accepted'][task]} accepted" for task, count in gold["questions"].items())
        if gold
        else "Gold: not built yet — verify `verification/index.html`, then run `scifig curate scifibench-accept`."
    )
    tiers = "\n".join(f"* `{tier}/` — {TIER_TEXT[tier]}" for tier in TIER_ORDER if summary["tiers"].get(tier))
    splits = ", ".join(f"`{name}`" for name in summary["split_names"].values())
    pretrained = settings["pretrained"] or "none (random weights)"
    return f"""{header}

# SciFIBench-style {summary["domain"]} figure–caption questions

Built with `scifig curate scifibench` following the curation of SciFIBench (Roberts et al., 2024, §3.3): caption
normalisation, duplicate removal, CLIP joint embeddings, Faiss nearest neighbours as hard negatives, a similarity
filter against near-duplicates, difficulty ordering and gold / silver / bronze tiers. Same features as the published
[`jonathan-roberts1/SciFIBench`](https://huggingface.co/datasets/jonathan-roberts1/SciFIBench) plus metadata columns.

## Build

```bash
{summary["command"]}
```

* Input: `{corpus["input"]}` — {corpus["rows"]} rows; {corpus["pairs"]} pairs kept (dropped: {dropped}).
* Embeddings: open_clip `{settings["model"]}` / `{pretrained}`, joint vectors of dimension
  {summary["embedding"]["dim"]} (image and text embeddings L2-normalised, concatenated).
* Neighbours: {summary["index"]["description"]}, k = {settings["k"]}.
* Similarity filter: neighbours closer than **{threshold["value"]:.4f}** are dropped ({threshold["rule"]});
  {summary["neighbours_filtered"]} neighbours were dropped. Nearest-neighbour distances: median
  {threshold["median"]:.4f}, MAD {threshold["mad"]:.4f}; quantiles {quantiles}.
* Questions: {summary["questions"]["built"]} per task ({summary["questions"]["short"]} pairs had fewer than 4
  negatives after the filter). Difficulty = mean distance of the 4 negatives to the true pair (lower = harder).
* Categories: {summary["categories"]["rule"]}
* Seed {settings["seed"]}: option order and random negatives are drawn per question from (seed, task, figure id).
* {gold_note}

## Tiers (directories of `<split>.parquet`, splits {splits})

{tiers}

{_composition(summary)}

## Columns

`ID` (the true pair's position in the de-duplicated corpus; the same in both tasks and all variants), `Question`,
`Options` (`A) ...`–`E) ...`; Caption→Figure: `A) image0` ... `E) image4`, the labels of the images in order),
`Answer` (letter), `Category`, `Images` (1 figure for Figure→Caption, 5 for Caption→Figure) — the published
features — then `source_figure_id`, `source_paper_id`, `option_figure_ids` (figure behind each option),
`difficulty`, `tier`, `negatives` (`nearest` or `random`).

## Evaluate

```bash
SCIFIG_SCIFIBENCH_DATA=<this directory>/gold lmms-eval --model ... --tasks scifibench_{summary["domain"].lower()}
```

## Citation

```bibtex
{CITATION}
```
"""


def write_card(out: Path, summary: dict[str, Any]) -> Path:
    """Write the card of ``summary`` into ``out``; return its path."""
    return card.write_card(out, card_text(summary))
