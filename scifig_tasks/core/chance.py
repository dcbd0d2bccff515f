"""The chance baseline: a seeded uniform guess within a question's answer space, read from the prompt text alone.

The guesser never sees the ground truth. Multiple-choice prompts (option lines ``A) ...`` as in SciFIBench, or
``A: ...`` as in MMSci) get a uniform option letter (chance = 1 / number of options: 20% for SciFIBench, 25% for
MMSci). GRAB prompts get a value in the format their precision
sentence asks for (integer, 1 d.p., nearest 10, ``[x1, x2]`` with ``x1 < x2``, or the equation template), drawn
uniformly from a range plausible for the question type (the ranges the GRAB spec lists for the real set).
The guess depends only on ``(seed, question id, prompt)``, so it is reproducible and independent of request order.
"""

from __future__ import annotations

import hashlib
import random
import re

from scifig_tasks.core import grab

_OPTION_LINE = re.compile(r"^\s*(?:\(([A-Z])\)|([A-Z])[):])\s", re.MULTILINE)

# (substring of the question, lowest, highest): first match wins; the default covers the remaining integer types.
_RANGES: tuple[tuple[str, float, float], ...] = (
    ("correlation coefficient", -1.0, 1.0),
    ("How many points", 5, 30),
    ("How many series", 1, 10),
    ("area bounded", -200, 200),
    ("period", 1, 10),
    ("amplitude", 1, 10),
    ("variance", 0, 50),
    ("interquartile range", 0, 20),
    ("domain length", 1, 20),
    ("range span", 1, 20),
    ("gradient", -5, 5),
)
_DEFAULT_RANGE = (-10.0, 10.0)
_COEFFICIENT = re.compile(r"<([a-e])>")


def _rng(seed: int, prompt: str, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{salt}\x00{prompt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def option_letters(prompt: str) -> list[str]:
    """Option letters listed in a multiple-choice prompt (``A) ...``, ``(A) ...`` or ``A: ...`` lines), in order,
    without repeats."""
    return list(dict.fromkeys(paren or bare for paren, bare in _OPTION_LINE.findall(prompt)))


def guess(prompt: str, seed: int = 0, salt: str = "") -> str:
    """A uniform guess in the prompt's answer space; raises when the prompt has none this guesser knows.

    ``salt`` identifies the question (e.g. task and row), so identical prompts still get independent draws.
    """
    rng = _rng(seed, prompt, salt)
    letters = option_letters(prompt)
    if len(letters) >= 2:
        return rng.choice(letters)
    return _numeric_guess(prompt, rng)


def _numeric_guess(prompt: str, rng: random.Random) -> str:
    precision = grab.precision_of(prompt)
    low, high = next(((lo, hi) for key, lo, hi in _RANGES if key in prompt), _DEFAULT_RANGE)
    if precision == "1dp":
        return f"{rng.randint(round(low * 10), round(high * 10)) / 10:.1f}"
    if precision == "nearest10":
        return str(10 * rng.randint(round(low / 10), round(high / 10)))
    if precision == "list":
        first, second = sorted(rng.sample(range(int(low), int(high) + 1), 2))
        return f"[{first}, {second}]"
    if precision == "equation":
        template = prompt[prompt.index("y = ") :].split(".")[0]
        return _COEFFICIENT.sub(lambda _: str(rng.randint(-10, 10)), template).replace("+ -", "- ")
    return str(rng.randint(int(low), int(high)))
