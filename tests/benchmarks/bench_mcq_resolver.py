"""How many multiple-choice outputs the deterministic resolver settles without a judge, and how many it gets wrong.

Corpus: every style of ``tests/harness/mcq_corpus.py`` (realistic outputs, the SciFIBench paper's examples among
them) rendered for every option letter on many SciFIBench-style option sets. For outputs that state one answer we
count resolved-correctly, resolved-wrongly and refused (refused ones would go to the judge); for outputs that state
no single answer, anything but a refusal is a wrong resolution (a guess).

Beside ``scifig_tasks.core.mcq.resolve_by_rules`` the same corpus goes through lmms-eval's ``extract_mcq_answer``
and VLMEvalKit's ``can_infer`` when they are installed. Goal: >= 97% of answer-stating outputs resolved, 0 wrong.

Run: ``python -m tests.benchmarks.bench_mcq_resolver [--option-sets 40]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from scifig_tasks.core.mcq import resolve_by_rules
from tests.harness.mcq_corpus import STYLES
from tests.harness.scifibench_data import CAPTIONS

Resolver = Callable[[str, list[str]], str | None]


@dataclass
class Tally:
    stated: int = 0
    right: int = 0
    wrong: int = 0
    refused_stated: int = 0
    unstated: int = 0
    guessed: int = 0


def corpus(option_sets: int) -> list[tuple[str, list[str], str | None]]:
    items = []
    for offset in range(option_sets):
        options = [f"{chr(65 + i)}){'  ' if (offset + i) % 2 else ' '}{CAPTIONS[(offset + i) % 5]}" for i in range(5)]
        for letter_index in range(5):
            letter, other = "ABCDE"[letter_index], "ABCDE"[(letter_index + 1 + offset) % 5 or 1]
            if other == letter:
                other = "ABCDE"[(letter_index + 2) % 5]
            text = options[letter_index][3:].strip()
            for style in STYLES:
                output = style.render(letter, text, other, options)
                items.append((output, options, letter if style.states_answer else None))
    return items


def ours(output: str, options: list[str]) -> str | None:
    return resolve_by_rules(output, options).letter


def lmms_eval_extract() -> Resolver | None:
    try:
        from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer
    except ImportError:
        return None
    return lambda output, options: extract_mcq_answer(output, list("ABCDE")[: len(options)]) or None


def vlmeval_can_infer() -> Resolver | None:
    try:
        from vlmeval.utils.matching_util import can_infer
    except ImportError:
        return None

    def resolve(output: str, options: list[str]) -> str | None:
        choices = {option[0]: option[3:].strip() for option in options}
        found = can_infer(output, choices)
        return found if found in choices else None

    return resolve


def measure(resolver: Resolver, items: list[tuple[str, list[str], str | None]]) -> Tally:
    tally = Tally()
    for output, options, truth in items:
        found = resolver(output, options)
        if truth is None:
            tally.unstated += 1
            tally.guessed += found is not None
        else:
            tally.stated += 1
            if found is None:
                tally.refused_stated += 1
            elif found == truth:
                tally.right += 1
            else:
                tally.wrong += 1
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--option-sets", type=int, default=40)
    args = parser.parse_args()
    items = corpus(args.option_sets)
    print(f"corpus: {len(items)} outputs from {len(STYLES)} styles x 5 letters x {args.option_sets} option sets")
    header = f"{'resolver':<34}{'resolved':>10}{'share':>9}{'wrong':>8}{'refused':>9}{'guessed (no answer stated)':>28}"
    print(header)
    print("-" * len(header))
    for name, resolver in [
        ("scifig resolve_by_rules", ours),
        ("lmms-eval extract_mcq_answer", lmms_eval_extract()),
        ("VLMEvalKit can_infer", vlmeval_can_infer()),
    ]:
        if resolver is None:
            print(f"{name:<34}{'not installed':>10}")
            continue
        t = measure(resolver, items)
        share = 100 * t.right / t.stated
        print(
            f"{name:<34}{t.right:>10}{share:>8.1f}%{t.wrong:>8}{t.refused_stated:>9}{f'{t.guessed} / {t.unstated}':>28}"
        )


if __name__ == "__main__":
    main()
