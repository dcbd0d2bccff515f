"""How scifig's multiple-choice rules, lmms-eval's ``extract_mcq_answer`` and VLMEvalKit's ``can_infer`` do on
outputs that public models really produced, side by side, and how long the worst adversarial output takes.

Corpus: ``tests/fixtures/mcq_outputs`` (outputs from public repositories, each labelled by hand with the letter it
states or none; see its README): the first collection, which the rules were written against, and the second
collection's two halves, ``tuning`` (the rules were tuned on it) and ``held_out`` (scored, not read, while they were
written; the README names the one output read after its first scoring); the third collection (eight more models,
scored before any rule was changed after it arrived); plus the chatty SciFIBench/MMSci-style families of
``tests/harness/mcq_corpus.CHATTY``.

For each extractor: wrong resolutions (a letter other than the label, or any letter where none is stated; count and
% of all outputs), the share of answer-stating outputs resolved correctly, and the judge calls a rules-first
protocol would need (outputs left unresolved that have something to read). Targets for scifig: 0 wrong and at least
90% resolved on upper-case label prompts (scifig's benchmarks; VisOnlyQA labels ``(a)``-``(e)``), in every
collection. scifig's rules see the question as the source's prompt gave it (it decides whether lower-case labels
can name options); the other extractors see the output and the option letters, as in their frameworks (lmms-eval's
after its ``strip_thinking`` filter, which runs before answer extraction).

Run: ``python -m tests.perf.bench_mcq_resolver``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scifig_tasks.core.multiple_choice import clean_output, resolve_by_rules
from scifig_tasks.core.raw_outputs import output_status
from tests.harness.mcq_corpus import CHATTY, CHATTY_OPTIONS
from tests.harness.mcq_real import LOWER_CASE_LABEL_SOURCES, load_real_outputs


@dataclass(frozen=True)
class Item:
    collection: str
    group: str
    output: str
    options: tuple[str, ...]
    label: str | None
    question: str | None

    @property
    def labelled(self) -> list[str]:
        return [f"{chr(65 + index)}) {text}" for index, text in enumerate(self.options)]


Resolver = Callable[[Item], str | None]
COLLECTIONS = {
    "first": "first collection (the rules were written against it)",
    "tuning": "second collection, tuning half",
    "held_out": "second collection, held-out half (not tuned on)",
    "third": "third collection (held out, not tuned on)",
}


@dataclass
class Tally:
    n: int = 0
    stated: int = 0
    right: int = 0
    wrong: int = 0
    judge_calls: int = 0

    def add(self, found: str | None, item: Item) -> None:
        self.n += 1
        self.stated += item.label is not None
        if found is None:
            self.judge_calls += output_status(item.output) == "ok" and bool(clean_output(item.output))
        elif found == item.label:
            self.right += 1
        else:
            self.wrong += 1

    def row(self, name: str) -> str:
        share = f"{100 * self.right / self.stated:.1f}%" if self.stated else "-"
        return (
            f"{name:<34}{self.n:>6}{self.wrong:>7}{100 * self.wrong / self.n:>8.2f}%"
            f"{f'{self.right}/{self.stated}':>11}{share:>8}{self.judge_calls:>8}"
        )


def corpus() -> list[Item]:
    items = [
        Item(
            real.collection,
            "lower-case labels" if real.source in LOWER_CASE_LABEL_SOURCES else real.source,
            real.output,
            real.options,
            real.label,
            real.prompt,
        )
        for real in load_real_outputs()
    ]
    items += [Item("chatty", "chatty families", output, CHATTY_OPTIONS, label, None) for output, label in CHATTY]
    return items


def scifig(item: Item) -> str | None:
    return resolve_by_rules(item.output, item.labelled, question=item.question).letter


def lmms_eval_extract() -> Resolver | None:
    try:
        from lmms_eval.api.reasoning import strip_reasoning_tags
        from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer
    except ImportError:
        return None
    pairs = [["<think>", "</think>"], ["<thinking>", "</thinking>"]]  # its strip_thinking filter's defaults

    def resolve(item: Item) -> str | None:
        letters = [chr(65 + index) for index in range(len(item.options))]
        return extract_mcq_answer(strip_reasoning_tags(item.output, pairs), letters) or None

    return resolve


def vlmeval_can_infer() -> Resolver | None:
    try:
        from vlmeval.utils.matching_util import can_infer
    except ImportError:
        return None

    def resolve(item: Item) -> str | None:
        choices = {chr(65 + index): text for index, text in enumerate(item.options)}
        found = can_infer(item.output, choices)
        return found if found in choices else None

    return resolve


def tally(resolver: Resolver, items: Iterable[Item]) -> Tally:
    result = Tally()
    for item in items:
        result.add(resolver(item), item)
    return result


def worst_adversarial() -> tuple[str, float]:
    from tests.core.test_mcq_resolver import ADVERSARIAL, OPTIONS

    timings = {}
    for name, output in ADVERSARIAL.items():
        start = time.perf_counter()
        resolve_by_rules(output, OPTIONS)
        timings[name] = time.perf_counter() - start
    worst = max(timings, key=timings.__getitem__)
    return worst, timings[worst]


def report(resolver: Resolver, items: list[Item]) -> None:
    header = f"{'outputs':<34}{'n':>6}{'wrong':>7}{'wrong %':>9}{'resolved':>11}{'share':>8}{'judge':>8}"
    print(header)
    print("-" * len(header))
    second = [item for item in items if item.collection in ("tuning", "held_out")]
    if second:
        print(tally(resolver, second).row("second collection, both halves"))
    for collection, title in COLLECTIONS.items():
        members = [item for item in items if item.collection == collection]
        if not members:
            continue
        upper = [item for item in members if item.group != "lower-case labels"]
        print(f"{title}")
        print(tally(resolver, upper).row("  upper-case label prompts"))
        if len(upper) < len(members):
            print(tally(resolver, members).row("  all, with (a)-(e) prompts"))
        for group in sorted({item.group for item in members}):
            print(tally(resolver, [item for item in members if item.group == group]).row(f"    {group}"))
    print(tally(resolver, [item for item in items if item.collection == "chatty"]).row("chatty families"))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    items = corpus()
    real = [item for item in items if item.collection != "chatty"]
    counts = ", ".join(f"{name} {sum(item.collection == name for item in real)}" for name in COLLECTIONS)
    print(f"real outputs: {len(real)} ({counts}); chatty: {len(items) - len(real)}")
    resolvers = [
        ("scifig rules", scifig),
        ("lmms-eval extract_mcq_answer", lmms_eval_extract()),
        ("VLMEvalKit can_infer", vlmeval_can_infer()),
    ]
    for name, resolver in resolvers:
        print(f"\n{name}")
        if resolver is None:
            print("  not installed")
            continue
        report(resolver, items)
    start = time.perf_counter()
    tally(scifig, items)
    elapsed = time.perf_counter() - start
    name, seconds = worst_adversarial()
    print(f"\nscifig: {len(items)} outputs in {elapsed:.3f} s; worst 1 MB adversarial output ({name}): {seconds:.3f} s")


if __name__ == "__main__":
    main()
