"""The chance baseline: a seeded uniform guess within a question's answer space, read from the prompt text alone.

The benchmark a question comes from is given by the caller (the ``scifig_source`` its task declares, e.g. ``grab``),
never guessed from the prompt; each registered benchmark declares one rule per data source
(:attr:`scifig_tasks.core.benchmark.Benchmark.chance`, its description's docstring says what the rule draws), or why
there is none (free text: :func:`answer_space` refuses it, as it refuses a source no benchmark registers). Multiple
choice shares :func:`option_answer`: a uniform letter among the options the prompt lists, chance = 1 / options.

The guess depends only on ``(seed, question id, prompt)``, so it is reproducible and independent of request order
and of which process of a data-parallel run (``accelerate launch``) answers it.
"""

from __future__ import annotations

import hashlib
import random
import re

from scifig_tasks.core import registry
from scifig_tasks.core.benchmark import Guesser

_OPTION_LINE = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])[):])\s", re.MULTILINE)


def _rng(seed: int, prompt: str, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{salt}\x00{prompt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def option_letters(prompt: str) -> list[str]:
    """Option letters listed in a multiple-choice prompt (``A) ...``, ``(A) ...`` or ``A: ...`` lines), in order,
    without repeats."""
    return list(dict.fromkeys(paren or bare for paren, bare in _OPTION_LINE.findall(prompt)))


def option_answer(prompt: str, rng: random.Random) -> str:
    """A uniform letter among the options the prompt lists."""
    letters = option_letters(prompt)
    if len(letters) < 2:
        raise ValueError(f"the prompt lists no options ('A) ...' or 'A: ...' lines): ...{prompt[-120:]!r}")
    return rng.choice(letters)


def answer_space(source: str) -> Guesser:
    """The rule drawing a guess for questions of data source ``source``; raises ``ValueError`` (one line) for a
    source without a chance answer or one no registered benchmark has."""
    try:
        rule = registry.of_source(source).chance[source]
    except KeyError:
        known = ", ".join(registry.sources())
        raise ValueError(f"no chance rule for benchmark source {source!r} (known: {known})") from None
    if isinstance(rule, str):
        raise ValueError(rule)
    return rule


def salt(task: str, split: str, doc_id: int) -> str:
    """What identifies a question to its draw: its lmms-eval task, split and document index (the index lmms-eval gives
    the document in its split, after the task's own row selection). Both frameworks' ``scifig_chance`` salt with it,
    so a question gets the same guess in either."""
    return f"{task}/{split}/{doc_id}"


def guess(prompt: str, source: str, seed: int = 0, salt: str = "") -> str:
    """A uniform guess in the answer space of ``prompt``, a question of benchmark ``source``; raises ``ValueError``
    when the source has no chance rule or the prompt lacks what its rule reads (options, a precision sentence).

    ``salt`` identifies the question (:func:`salt`), so identical prompts still get independent draws.
    """
    return answer_space(source)(prompt, _rng(seed, prompt, salt))
