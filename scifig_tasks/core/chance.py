"""The chance baseline: a seeded uniform guess within a question's answer space, read from the prompt text alone.

The benchmark a question comes from is given by the caller (the ``scifig_source`` its task declares, e.g. ``grab``),
never guessed from the prompt; each benchmark has one rule for its answer space (:data:`ANSWER_SPACES`):

* SciFIBench (``scifibench``) and MMSci multiple choice (``mmsci_mcq``): a uniform letter among the options the
  prompt lists (``A) ...`` lines in SciFIBench, ``A: ...`` in MMSci): chance = 1 / number of options, 20% for
  SciFIBench's 5 options and 25% for MMSci's 4.
* GRAB (``grab``): a value in the format the question's precision sentence asks for (integer, 1 d.p., nearest 10,
  ``[x1, x2]`` with ``x1 < x2``, or the equation template), drawn uniformly from a range plausible for the question
  type (ranges that cover the published set's answers); the multiple-choice ablation (``grab_properties_mc``,
  whose prompt lists options) gets a uniform option letter (chance 20%, paper §4.7).
* Plot Twist (``plot_twist``, ``plot_twist_chartqa``): the questions have no closed answer space (no options, no
  stated range): every answer is a number the model states in the answer sentence of Fig. 2's prompt. Chance is
  scifig's definition: that sentence, ``The answer is N. I hope the answer is correct.`` (read by the extraction
  rule, so no judge is needed), with ``N`` a uniform integer from the range the question's kind takes in the
  synthetic set (paper App. A, as ``scifig curate plot-twist`` draws it): 1-5 for "How many bars", 1-10 for "How
  many categories", 1-100 for a pie category's value (a percentage), and -200..200 (the bar values' range) for
  every other question (bar values, point coordinates, axis limits, a ChartQA file's questions).
* MMSci captioning (``mmsci_captioning``) has no chance answer: a caption is free text, with no answer space to draw
  from; :func:`answer_space` refuses it (:data:`NO_CHANCE`), as it refuses a benchmark it does not know.

The guess depends only on ``(seed, question id, prompt)``, so it is reproducible and independent of request order
and of which process of a data-parallel run (``accelerate launch``) answers it.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable

from scifig_tasks.core.grab import rules as grab
from scifig_tasks.core.plot_twist import rules as plot_twist

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

# Plot Twist: (words of the paper's Table 6 question template, lowest, highest); first match wins.
_PLOT_TWIST_RANGES: tuple[tuple[str, int, int], ...] = (
    ("How many bars", 1, 5),
    ("How many categories", 1, 10),
    ("among the set of categories", 1, 100),
)
_PLOT_TWIST_DEFAULT_RANGE = (-200, 200)


def _rng(seed: int, prompt: str, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{salt}\x00{prompt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def option_letters(prompt: str) -> list[str]:
    """Option letters listed in a multiple-choice prompt (``A) ...``, ``(A) ...`` or ``A: ...`` lines), in order,
    without repeats."""
    return list(dict.fromkeys(paren or bare for paren, bare in _OPTION_LINE.findall(prompt)))


def _option_guess(prompt: str, rng: random.Random) -> str:
    letters = option_letters(prompt)
    if len(letters) < 2:
        raise ValueError(f"the prompt lists no options ('A) ...' or 'A: ...' lines): ...{prompt[-120:]!r}")
    return rng.choice(letters)


def _grab_guess(prompt: str, rng: random.Random) -> str:
    letters = option_letters(prompt)
    if len(letters) >= 2:  # the multiple-choice ablation
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


def _plot_twist_guess(prompt: str, rng: random.Random) -> str:
    low, high = next(((lo, hi) for key, lo, hi in _PLOT_TWIST_RANGES if key in prompt), _PLOT_TWIST_DEFAULT_RANGE)
    return plot_twist.ANSWER_SENTENCE.replace("ANS", str(rng.randint(low, high)))


Guesser = Callable[[str, random.Random], str]

ANSWER_SPACES: dict[str, Guesser] = {
    "grab": _grab_guess,
    "scifibench": _option_guess,
    "mmsci_mcq": _option_guess,
    "plot_twist": _plot_twist_guess,
    "plot_twist_chartqa": _plot_twist_guess,
}
"""Benchmark source (a task's ``metadata.scifig_source``) -> the rule that draws a guess from a prompt."""

NO_CHANCE: dict[str, str] = {
    "mmsci_captioning": "MMSci captioning asks for free text (a caption), so there is no answer space to draw a "
    "chance answer from; evaluate captioning with a model",
}
"""Benchmark sources without a chance answer, and why."""


def answer_space(source: str) -> Guesser:
    """The rule drawing a guess for questions of benchmark ``source``; raises ``ValueError`` (one line) for a source
    without a chance answer or one this guesser does not know."""
    guesser = ANSWER_SPACES.get(source)
    if guesser is not None:
        return guesser
    if source in NO_CHANCE:
        raise ValueError(NO_CHANCE[source])
    raise ValueError(
        f"no chance rule for benchmark source {source!r} (known: {', '.join(sorted([*ANSWER_SPACES, *NO_CHANCE]))})"
    )


def guess(prompt: str, source: str, seed: int = 0, salt: str = "") -> str:
    """A uniform guess in the answer space of ``prompt``, a question of benchmark ``source``; raises ``ValueError``
    when the source has no chance rule or the prompt lacks what its rule reads (options, a precision sentence).

    ``salt`` identifies the question (e.g. task and row), so identical prompts still get independent draws.
    """
    return answer_space(source)(prompt, _rng(seed, prompt, salt))
