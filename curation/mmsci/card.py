"""The dataset card (``README.md``) of a built or imported MMSci directory: a Hub YAML header with one config per
table (``datasets.load_dataset(DIR, "mcq", split="dev")`` reads it), how the data was made, its composition, the
columns, how to evaluate it and the citation. Rendered from the summary written next to it (``curation.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curation import card
from scifig_tasks.benchmarks.mmsci.rules import SETTINGS

CITATION = """@misc{li2025mmsci,
  title={MMSci: A Dataset for Graduate-Level Multi-Discipline Multimodal Scientific Understanding},
  author={Li, Zekun and others},
  year={2025},
  howpublished={\\url{https://github.com/Leezekun/MMSci}}
}"""

SETTING_NAMES = {"fig2cap": "I Fig2Cap", "subfig2cap": "II SubFig2Cap", "subcap2fig": "III SubCap2Fig"}

COLUMNS = """* `mcq/<split>.parquet`: `uid` (article), `figure_index` (0-based figure of the article), `setting`
  (`fig2cap`, `subfig2cap`, `subcap2fig`), `category`, `subject`, `image` (the whole figure, stored bytes), `question`
  (as asked, without options), `options` (4 unlabelled texts in A-D order), `answer` (letter), `subfigure` (the
  sub-figure label for settings II and III, empty for I).
* `captioning/<split>.parquet`: `uid`, `figure_index`, `category`, `subject`, `image`, `caption` (cleaned reference
  caption, at least 50 words), `abstract`."""


def _header(title: str, splits: list[str], tables: tuple[str, ...] = ("mcq", "captioning")) -> str:
    lines = ["---", f"pretty_name: {title}", "task_categories:", "- visual-question-answering", "- image-to-text"]
    lines.append("configs:")
    for table in tables:
        lines += [f"- config_name: {table}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {table}/{split}.parquet" for split in splits]
    return "\n".join([*lines, "---"])


def _composition(summary: dict[str, Any], splits: list[str]) -> str:
    rows = ["| | " + " | ".join(splits) + " |", "|---|" + "---:|" * len(splits)]
    for setting in SETTINGS:
        counts = [str(summary["mcq"][split][setting]["questions"]) for split in splits]
        rows.append(f"| MCQ setting {SETTING_NAMES[setting]} | " + " | ".join(counts) + " |")
    rows.append("| captioning | " + " | ".join(str(summary["captioning"][split]["items"]) for split in splits) + " |")
    return "\n".join(rows)


def _split_rule(settings: dict[str, Any]) -> str:
    if settings.get("split_ids"):
        return f"the authors' test / dev article lists from `{settings['split_ids']}`; the rest is train."
    return (
        f"test and dev each take max({settings['min_articles']}, floor({settings['ratio']} x articles)) of every "
        "subject's articles that yield a benchmark item, test first; the rest is train."
    )


def _subjects(summary: dict[str, Any]) -> str:
    rows = ["| subject | articles | requested | test | dev | train |", "|---|---:|---:|---:|---:|---:|"]
    for subject, counts in sorted(summary["per_subject"].items()):
        rows.append(
            f"| {subject} | {counts['articles']} | {counts['requested']} | {counts['test']} | {counts['dev']} "
            f"| {counts['train']} |"
        )
    return "\n".join(rows)


def _evaluate(splits: list[str]) -> str:
    split = "test" if "test" in splits else splits[0]
    note = "" if split == "test" else f" (this directory has no test split: evaluate the `{split}` split)"
    return f"""```bash
SCIFIG_MMSCI_DATA=<this directory> lmms-eval --model ... --tasks mmsci ...
```
The tasks read `mcq/` and `captioning/`; `test` is the default split{note}."""


def card_text(summary: dict[str, Any]) -> str:
    if summary.get("imported_from"):
        return _imported(summary)
    settings, splits = summary["settings"], ["test", "dev"]
    sub = summary["subcaptions"]
    sft = summary.get("sft")
    sft_text = (
        f"`sft/train.jsonl`: {sft['records']} records from the train articles ("
        + ", ".join(f"{source} {count}" for source, count in sft["sources"].items())
        + f"), {sft['images']} images in `sft/images/`."
        if sft
        else "No fine-tuning data (built with `--no-sft`)."
    )
    return f"""{_header("MMSci (built with scifig)", splits)}

# MMSci figure-caption matching and figure captioning

Built with `scifig curate mmsci` following the MMSci benchmark construction (Li et al. 2025, section 3) from
article records: caption cleaning (title = text after `Figure N:`; caption = title + description), sub-captions from
`(a)`, `(b)`, ... markers, three multiple-choice settings with 4 options and figure captioning.

## Build

```bash
{summary["command"]}
```

* Input: `{summary["input"]}` -- {summary["articles"]["total"]} article records ({summary["articles"]["papers"]}
  papers), {summary["articles"]["figures"]} figures;
  {sub["with_titles"]} figures with a `Figure N:` title; {sub["with_subcaptions"]} with sub-captions,
  {sub["no_markers"]} without markers, {sub["skipped"]} rejected for missing or out-of-order markers.
* Splits: {_split_rule(settings)} Article records: test {summary["splits"]["test"]}, dev {summary["splits"]["dev"]},
  train {summary["splits"]["train"]}; disjoint by paper.
* Questions and captioning figures: {settings["per_article"]} per evaluation article and setting; answer letters
  balanced per split and setting; seed {settings["seed"]}.
* {sft_text}

## Composition

{_composition(summary, splits)}

{_subjects(summary)}

## Columns

{COLUMNS}

Setting III follows the paper (a sub-caption; options are sub-figure labels of the same figure). Distractors come
from the same article (settings I and II) or the same figure (III).

## Evaluate

{_evaluate(splits)}

## Citation

```bibtex
{CITATION}
```
"""


def _imported(summary: dict[str, Any]) -> str:
    splits = summary["splits"]
    tables = tuple(summary.get("tables", ("mcq", "captioning")))
    return f"""{_header("MMSci (imported with scifig)", splits, tables)}

# MMSci (imported)

Converted with `scifig curate {summary["command_name"]}` from {summary["imported_from"]} into the scifig MMSci
layout; the questions, options and answers are those of the source.

```bash
{summary["command"]}
```

{summary.get("notes", "")}

## Composition

{_composition(summary, splits)}

## Columns

{COLUMNS}

## Evaluate

{_evaluate(splits)}

## Citation

```bibtex
{CITATION}
```
"""


def write_card(out: Path, summary: dict[str, Any]) -> Path:
    """Write the card of ``summary`` into ``out``; return its path."""
    return card.write_card(out, card_text(summary))
