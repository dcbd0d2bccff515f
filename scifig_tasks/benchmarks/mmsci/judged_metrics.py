"""MMSci captioning: the LLM-judged metrics (modified FActScore and G-Eval relevance) through the shared judge client.

MMSci paper §4 (captioning): both on a random subset of 200 samples; the ``paper`` setting does what the authors'
code does, the default differs where stated. Manual: tasks/README.md, 'Judged caption metrics: FActScore and G-Eval'.
"""

from __future__ import annotations

import contextvars
import logging
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from scifig_tasks.benchmarks.mmsci import captioning_settings
from scifig_tasks.core import settings
from scifig_tasks.core.judge.client import JudgeClient
from scifig_tasks.core.judge.replies import JudgeResult, plainly_not_an_answer, says_something
from scifig_tasks.core.raw_outputs import output_status
from scifig_tasks.core.scoring_protocol import Protocol
from scifig_tasks.core.settings import Settings

logger = logging.getLogger("scifig.mmsci")

T = TypeVar("T")

GAMMA = 10
DEFAULT_SUBSET = captioning_settings.JUDGED_SUBSET.default
RATING_MAX_TOKENS = 16

FACTS_PAPER_TEMPERATURE = 0.7
"""The authors' temperature for the FActScore split and rating calls (``factscore.py``)."""
GEVAL_PAPER_TEMPERATURE = 1.0
GEVAL_PAPER_SAMPLES = 10
GEVAL_PAPER_MAX_TOKENS = 16
GEVAL_PAPER_MAX_ROUNDS = 5
"""The authors' G-Eval (``llm_judge_scores.py``): temperature 1, ``top_p`` 1, 16 tokens, ``n=10`` samples, asked again
while the answer is 0 (without limit; we stop after this many rounds and count the sample as unreadable)."""

# --- the authors' prompt texts ---------------------------------------------------------------------------------------

FACTS_INSTRUCTION = (
    "You will be given a caption for a figure containing multiple panels, which includes descriptions for the entire "
    "figure as well as each individual panel. Your task is to break down the caption into separate, independent "
    "descriptions for the entire figure and each panel, formatted appropriately and separated by '-'"
)
FACTS_EXAMPLE_CAPTION = (
    "The figure consists of four sub-figures labeled a, b, c, and d. All four images appear to be scanning electron "
    "microscope (SEM) images showing the microstructure of different materials, likely related to the iron-based "
    "cathode catalysts described in the article.\n\n"
    "a. This image shows a highly porous structure with interconnected particles forming a network. The particles "
    "appear to be in the nanometer to micrometer size range. The scale bar indicates 1 \u03bcm.\n\n"
    "b. This image displays a closer view of what seems to be a similar material to (a), but at a higher "
    "magnification. The individual particles are more clearly visible, showing a rough, granular texture. The scale "
    "bar indicates 200 nm.\n\n"
    "c. This image reveals a different morphology compared to (a) and (b). It shows larger, more consolidated "
    "structures with a rougher surface texture. There are still visible pores and gaps between the structures. The "
    "scale bar indicates 1 \u03bcm.\n\n"
    "d. This final image appears to be a cross-sectional view of a porous material, possibly showing the internal "
    "structure of the catalyst. It reveals a highly interconnected network of pores and channels throughout the "
    "material. The scale bar indicates 200 nm.\n\n"
    "These images likely represent different stages or variations of the "
    "iron-acetate/phenanthroline/zeolitic-imidazolate-framework-derived electrocatalyst mentioned in the article. The "
    "varying structures and porosities shown in these images could be related to the enhanced mass-transport "
    "properties and increased volumetric activity described in the text."
)
FACTS_EXAMPLE_ANSWER = """- The figure consists of four sub-figures labeled a, b, c, and d.
- All four images appear to be scanning electron microscope (SEM) images.
- The images show the microstructure of different materials.
- The materials are likely related to the iron-based cathode catalysts described in the article.
- Image a shows a highly porous structure with interconnected particles forming a network.
- The particles in image a are in the nanometer to micrometer size range.
- The scale bar in image a indicates 1 \u03bcm.
- Image b displays a closer view of a material similar to that in image a but at higher magnification.
- The individual particles in image b are more clearly visible and show a rough, granular texture.
- The scale bar in image b indicates 200 nm.
- Image c shows larger, more consolidated structures with a rougher surface texture.
- There are visible pores and gaps between the structures in image c.
- The scale bar in image c indicates 1 \u03bcm.
- Image d appears to be a cross-sectional view of a porous material.
- Image d reveals the internal structure of the catalyst with a highly interconnected network of pores and channels.
- The scale bar in image d indicates 200 nm.
- These images likely represent different stages or variations of the \
iron-acetate/phenanthroline/zeolitic-imidazolate-framework-derived electrocatalyst mentioned in the article.
- The varying structures and porosities shown in these images could be related to the enhanced mass-transport \
properties described in the text.
- The varying structures and porosities in the images may contribute to increased volumetric activity described in \
the article."""

RATING_DEFINITION = (
    "How relevant is the generated caption to the given human-written caption for the figure? Determine whether the "
    "information in the generated caption is included or mentioned in the human-written caption. Respond with a score "
    "between 0 and 5."
)
RATING_QUESTION = (
    "Human-written caption: {reference}\n\nGenerated caption: {fact}\n\nHow relevant is the generated caption to the "
    "given human-written caption? Respond with ONLY a score between 0 and 5."
)
RATING_SCALE = (0, 5)

GEVAL_RELEVANCE_CRITERIA = """You will be given a oracle caption that describes an image. You will then be given a \
second caption written for the same image.

Your task is to rate the second caption on one metric.

Evaluation Criteria:

Relevance (1-5) - The extent to which the second caption is relevant to the key elements and context described in \
the oracle caption. A relevant caption should focus on the same subjects, objects, actions, or context highlighted in \
the oracle caption, without introducing unrelated or extraneous details.

Evaluation Steps:

1. Review the Oracle Caption: Carefully read the oracle caption to understand the main elements and context it \
describes.
2. Review the Second Caption: Assess whether the second caption focuses on the same key elements and context as the \
oracle caption. Evaluate if the second caption stays on topic and does not introduce irrelevant details.
3. Assign a Score for Relevance: Based on the Evaluation Criteria, rate how relevant the second caption is to the \
oracle caption's description of the same image."""
GEVAL_QUESTION = (
    "Oracle Caption:\n{reference}\n\nSecond Caption:\n{prediction}\n\n"
    "What is the relevance score (1-5)? Return the score ONLY!"
)
GEVAL_SCALE = (1, 5)


def facts_prompt(caption: str) -> str:
    return (
        f"{FACTS_INSTRUCTION}\n\nExample caption:\n{FACTS_EXAMPLE_CAPTION}\n\nExample answer:\n{FACTS_EXAMPLE_ANSWER}"
        f"\n\n{caption}"
    )


def rating_prompt(reference: str, fact: str) -> str:
    return f"{RATING_DEFINITION}\n\n{RATING_QUESTION.format(reference=reference, fact=fact)}"


def geval_prompt(reference: str, prediction: str) -> str:
    return f"{GEVAL_RELEVANCE_CRITERIA}\n\n{GEVAL_QUESTION.format(reference=reference, prediction=prediction)}"


# --- rules -----------------------------------------------------------------------------------------------------------


def brevity_penalty(n_facts: int, gamma: int = GAMMA) -> float:
    """``exp(min(1 - gamma / n, 0))``: 1 from ``n >= gamma`` atomic descriptions on (n = 5 -> e^-1)."""
    if n_facts < 1:
        raise ValueError("the brevity penalty needs at least one atomic description")
    return math.exp(min(1.0 - gamma / n_facts, 0.0))


_ITEM = re.compile(r"^\s*[-\u2022*]\s+(.*\S)\s*$", re.MULTILINE)


def parse_facts(reply: str | None) -> list[str]:
    """The atomic descriptions of a judge reply: its ``- `` items (empty when it has none, or when it is plainly no
    answer -- an error text, an HTML page, a refusal: :func:`~scifig_tasks.core.judge.replies.plainly_not_an_answer`,
    whatever items it lists)."""
    if reply is None or plainly_not_an_answer(reply):
        return []
    return [match.group(1) for match in _ITEM.finditer(reply)]


_INTEGER = re.compile(r"(?<![\d.])\d+(?:\.0+)?(?!\.?\d)")
_OUT_OF = re.compile(r"\s*(?:/|out\s+of)\s*\d+", re.IGNORECASE)


def parse_rating(reply: str | None, scale: tuple[int, int]) -> int | None:
    """The one integer of ``scale`` in a reply (``4``, ``Score: 4``, ``4/5``, ``**4**``); ``None`` otherwise, and for a
    reply that is plainly no answer (an error text, an HTML page whose ``<h1>`` holds a digit, a refusal:
    :func:`~scifig_tasks.core.judge.replies.plainly_not_an_answer`)."""
    if reply is None or plainly_not_an_answer(reply):
        return None
    found = {int(float(token)) for token in _INTEGER.findall(_OUT_OF.sub("", reply))}
    if len(found) != 1:
        return None
    value = found.pop()
    return value if scale[0] <= value <= scale[1] else None


def _reads_rating(scale: tuple[int, int]) -> Callable[[str], bool]:
    """The judge-reply check of a rating request: the reply holds one integer of ``scale``."""
    return lambda reply: parse_rating(reply, scale) is not None


# --- subset ----------------------------------------------------------------------------------------------------------


def subset_settings(given: Settings | Mapping[str, str] | None = None) -> tuple[int | None, int]:
    """(subset size or ``None`` for all samples, seed): ``SCIFIG_MMSCI_JUDGED_SUBSET`` / ``..._SEED`` of ``given``
    settings, an environment mapping, or the process's settings; a bad value raises naming its variable."""
    chosen = settings.chosen(given)
    return chosen.get(captioning_settings.JUDGED_SUBSET), chosen.get(captioning_settings.JUDGED_SEED)


def select_subset(keys: Sequence[str], size: int | None, seed: int) -> list[int]:
    """Indices of the seeded random subset, drawn from the keys in sorted order; every index when it is too small."""
    order = sorted(range(len(keys)), key=lambda index: keys[index])
    if size is None or size >= len(order):
        return order
    return sorted(random.Random(seed).sample(order, size), key=lambda index: keys[index])


# --- scoring ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    key: str
    prediction: str | None
    reference: str


def _summary(name: str, statuses: list[str], scores: list[float], extra: dict[str, Any]) -> dict[str, Any]:
    counts = {status: statuses.count(status) for status in dict.fromkeys(statuses)}
    # the mean needs at least one caption the judge scored, unless every output was empty (then 0 is the truth)
    judged = counts.get("scored", 0) > 0 or counts.get("empty_output", 0) == len(statuses)
    value = sum(scores) / len(scores) if scores and judged else None
    failures = counts.get("judge_failed", 0) + counts.get("unparsable", 0)
    if failures:
        logger.warning(
            "MMSci %s: %d of %d judged samples have no score (judge failed: %d, unreadable reply: %d)",
            name,
            failures,
            len(statuses),
            counts.get("judge_failed", 0),
            counts.get("unparsable", 0),
        )
    if value is None:
        logger.error("MMSci %s is unavailable (no sample could be scored): %s", name, counts)
    return {"value": value, "n_subset": len(statuses), "n_scored": len(scores), "status": counts, **extra}


def judge_off_report(name: str, n_subset: int) -> dict[str, Any]:
    logger.error(
        "MMSci %s is unavailable (reported as null, not 0): the LLM judge is off or not configured "
        "(set SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL, or SCIFIG_JUDGE=<preset>)",
        name,
    )
    return {"value": None, "n_subset": n_subset, "n_scored": 0, "status": {"judge_off": n_subset}}


def factscore(samples: Sequence[Sample], judge: JudgeClient | None, protocol: Protocol = "default") -> dict[str, Any]:
    """The modified FActScore over ``samples`` (already the subset): value, counts per status, mean number of facts.
    ``protocol="paper"``: the authors' messages, sampling, split and rating rules (tasks/README.md)."""
    if judge is None:
        return judge_off_report("factscore", len(samples))
    if protocol == "paper":
        return _factscore_paper(samples, judge)
    usable = [index for index, sample in enumerate(samples) if output_status(sample.prediction) == "ok"]
    asked = judge.complete_many([facts_prompt(samples[index].prediction or "") for index in usable], accept=parse_facts)
    split = dict(zip(usable, asked, strict=True))
    facts = {index: parse_facts(result.text) for index, result in split.items() if result.status == "judged"}
    ratings_asked = [rating_prompt(samples[index].reference, fact) for index in usable for fact in facts.get(index, [])]
    rated = judge.complete_many(ratings_asked, max_tokens=RATING_MAX_TOKENS, accept=_reads_rating(RATING_SCALE))
    ratings = dict(zip(ratings_asked, rated, strict=True))
    statuses: list[str] = []
    scores: list[float] = []
    n_facts: list[int] = []
    for index, sample in enumerate(samples):
        if index not in split:
            statuses.append("empty_output")
            scores.append(0.0)
            continue
        if split[index].status != "judged":
            statuses.append("judge_failed")
            continue
        items = facts[index]
        if not items:
            statuses.append("unparsable")
            continue
        results = [ratings[rating_prompt(sample.reference, fact)] for fact in items]
        if any(result.status != "judged" for result in results):
            statuses.append("judge_failed")
            continue
        values = [parse_rating(result.text, RATING_SCALE) for result in results]
        if any(value is None for value in values):
            statuses.append("unparsable")
            continue
        mean = sum(value / RATING_SCALE[1] for value in values) / len(values)
        scores.append(mean * brevity_penalty(len(items)))
        n_facts.append(len(items))
        statuses.append("scored")
    extra = {"mean_atomic_facts": round(sum(n_facts) / len(n_facts), 4) if n_facts else None, "gamma": GAMMA}
    return _summary("factscore", statuses, scores, extra)


def geval_relevance(
    samples: Sequence[Sample], judge: JudgeClient | None, protocol: Protocol = "default"
) -> dict[str, Any]:
    """G-Eval relevance (1-5) over ``samples`` (already the subset): value and counts per status.
    ``protocol="paper"``: the authors' messages and sampling (tasks/README.md)."""
    if judge is None:
        return judge_off_report("geval_relevance", len(samples))
    if protocol == "paper":
        return _geval_paper(samples, judge)
    usable = [index for index, sample in enumerate(samples) if output_status(sample.prediction) == "ok"]
    prompts = [geval_prompt(samples[index].reference, samples[index].prediction or "") for index in usable]
    asked = judge.complete_many(prompts, max_tokens=RATING_MAX_TOKENS, accept=_reads_rating(GEVAL_SCALE))
    results = dict(zip(usable, asked, strict=True))
    statuses: list[str] = []
    scores: list[float] = []
    for index in range(len(samples)):
        if index not in results:
            # an empty caption is not sent to the judge; it gets the scale's lowest score
            statuses.append("empty_output")
            scores.append(float(GEVAL_SCALE[0]))
            continue
        result = results[index]
        if result.status != "judged":
            statuses.append("judge_failed")
            continue
        value = parse_rating(result.text, GEVAL_SCALE)
        if value is None:
            statuses.append("unparsable")
            continue
        statuses.append("scored")
        scores.append(float(value))
    return _summary("geval_relevance", statuses, scores, {"scale": list(GEVAL_SCALE)})


# --- the paper setting (the authors' code) ---------------------------------------------------------------------------

Messages = list[dict[str, str]]


def facts_messages(caption: str) -> Messages:
    """The authors' split request: system instruction, the one-shot exchange (the answer between new lines), caption."""
    return [
        {"role": "system", "content": FACTS_INSTRUCTION},
        {"role": "user", "content": FACTS_EXAMPLE_CAPTION},
        {"role": "assistant", "content": f"\n{FACTS_EXAMPLE_ANSWER}\n"},
        {"role": "user", "content": caption},
    ]


def rating_messages(reference: str, fact: str) -> Messages:
    return [
        {"role": "system", "content": RATING_DEFINITION},
        {"role": "user", "content": RATING_QUESTION.format(reference=reference, fact=fact)},
    ]


def geval_messages(reference: str, prediction: str) -> Messages:
    return [
        {"role": "system", "content": GEVAL_RELEVANCE_CRITERIA},
        {"role": "user", "content": GEVAL_QUESTION.format(reference=reference, prediction=prediction)},
    ]


def split_facts_paper(reply: str) -> tuple[int, list[str]]:
    """The authors' split: ``reply.split("-")``; n is the number of pieces (empty ones included) and every
    non-empty piece is rated, stripped (a piece of white space only is rated as an empty text)."""
    pieces = reply.split("-")
    return len(pieces), [piece.strip() for piece in pieces if piece]


def parse_rating_paper(reply: str) -> int:
    """The authors' ``extract_int``: the smallest of 0..5 whose digit occurs anywhere in the lower-cased reply; 0
    when none does (their unreadable rating scores 0)."""
    text = reply.lower().strip()
    return next((score for score in range(RATING_SCALE[0], RATING_SCALE[1] + 1) if str(score) in text), 0)


def brevity_penalty_paper(n_pieces: int, gamma: int = GAMMA) -> float:
    """The authors' penalty: 1 when ``n > gamma``, else ``exp(1 - gamma / n)`` (the same values as
    :func:`brevity_penalty`)."""
    return 1.0 if n_pieces > gamma else math.exp(1 - gamma / n_pieces)


def geval_answer_paper(replies: Sequence[str]) -> int:
    """The authors' reading of one round of G-Eval samples: the first reply that is a bare integer (``int()`` of the
    stripped text) decides; before it, a reply holding a digit 1-5 sets the answer to its smallest such digit (a later
    one overrides it). 0 means no answer (the authors then ask again)."""
    answer = 0
    for reply in replies:
        text = reply.strip()
        try:
            return int(text)
        except ValueError:
            answer = next((digit for digit in range(1, 6) if str(digit) in text), answer)
    return answer


def sample_judge(
    judge: JudgeClient, messages: Messages, *, temperature: float, max_tokens: int | None = None
) -> JudgeResult:
    """One sampled, uncached chat completion of the authors' messages (:meth:`JudgeClient.sample`); a reply that is
    plainly no answer is asked again (:func:`~scifig_tasks.core.judge.replies.says_something`)."""
    return judge.sample(messages, temperature=temperature, max_tokens=max_tokens, accept=says_something)


def _pool_map(judge: JudgeClient, function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``function`` over ``items`` in as many threads as the judge allows requests in flight, each in a copy of the
    caller's context (its judge calls charged to the caller's task, as ``complete_many``'s)."""
    if not items:
        return []
    contexts = [contextvars.copy_context() for _ in items]  # the caller's, one copy per item (one thread runs each)
    with ThreadPoolExecutor(max_workers=min(judge.config.max_concurrency, len(items))) as pool:
        return list(pool.map(lambda context, item: context.run(function, item), contexts, items))


def side_by_side(passes: Sequence[Callable[[], T]]) -> list[T]:
    """Each pass's result, the passes run at the same time (each in a copy of the caller's context): FActScore and
    each caption index's G-Eval ask the judge independently, so none waits for another's last replies; the judge
    client's bound keeps its requests in flight at ``SCIFIG_JUDGE_MAX_CONCURRENCY`` whatever the number of passes."""
    if len(passes) <= 1:
        return [run() for run in passes]
    with ThreadPoolExecutor(max_workers=len(passes), thread_name_prefix="scifig-mmsci-judged") as pool:
        futures = [pool.submit(contextvars.copy_context().run, run) for run in passes]
        return [future.result() for future in futures]


def _factscore_paper(samples: Sequence[Sample], judge: JudgeClient) -> dict[str, Any]:
    usable = [index for index, sample in enumerate(samples) if output_status(sample.prediction) == "ok"]
    split = dict(
        zip(
            usable,
            _pool_map(
                judge,
                lambda i: sample_judge(
                    judge, facts_messages(samples[i].prediction or ""), temperature=FACTS_PAPER_TEMPERATURE
                ),
                usable,
            ),
            strict=True,
        )
    )
    pieces = {index: split_facts_paper(reply.text or "") for index, reply in split.items() if reply.status == "judged"}
    asked = [(index, piece) for index in usable for piece in pieces.get(index, (0, []))[1]]
    rated = _pool_map(
        judge,
        lambda item: sample_judge(
            judge, rating_messages(samples[item[0]].reference, item[1]), temperature=FACTS_PAPER_TEMPERATURE
        ),
        asked,
    )
    ratings: dict[int, list[JudgeResult]] = {}
    for (index, _), result in zip(asked, rated, strict=True):
        ratings.setdefault(index, []).append(result)
    statuses: list[str] = []
    scores: list[float] = []
    n_facts: list[int] = []
    for index in range(len(samples)):
        if index not in split:
            statuses.append("empty_output")  # the authors skip samples without a caption
            continue
        if split[index].status != "judged":
            statuses.append("judge_failed")
            continue
        n, items = pieces[index]
        results = ratings.get(index, [])
        if not items:
            statuses.append("unparsable")  # nothing to rate: the authors' mean of no ratings is NaN
            continue
        if any(result.status != "judged" for result in results):
            statuses.append("judge_failed")
            continue
        mean = sum(parse_rating_paper(result.text or "") / RATING_SCALE[1] for result in results) / len(results)
        scores.append(mean * brevity_penalty_paper(n))
        n_facts.append(n)
        statuses.append("scored")
    extra = {"mean_atomic_facts": round(sum(n_facts) / len(n_facts), 4) if n_facts else None, "gamma": GAMMA}
    summary = _summary("factscore", statuses, scores, extra)
    if summary["value"] is None and statuses and statuses.count("empty_output") == len(statuses):
        logger.error("MMSci factscore: every caption of the subset is empty (the paper setting skips them)")
    return summary


def _geval_paper_one(judge: JudgeClient, sample: Sample) -> tuple[str, int | None]:
    messages = geval_messages(sample.reference, sample.prediction or "")
    for _ in range(GEVAL_PAPER_MAX_ROUNDS):
        replies: list[str] = []
        for _ in range(GEVAL_PAPER_SAMPLES):
            result = sample_judge(
                judge, messages, temperature=GEVAL_PAPER_TEMPERATURE, max_tokens=GEVAL_PAPER_MAX_TOKENS
            )
            if result.status != "judged":
                return "judge_failed", None
            replies.append(result.text or "")
            try:
                int(replies[-1].strip())
                break  # a bare integer decides the round; later samples could not change it
            except ValueError:
                continue
        answer = geval_answer_paper(replies)
        if answer != 0:
            return "scored", answer
    return "unparsable", None


def _geval_paper(samples: Sequence[Sample], judge: JudgeClient) -> dict[str, Any]:
    usable = [index for index, sample in enumerate(samples) if output_status(sample.prediction) == "ok"]
    outcomes = dict(zip(usable, _pool_map(judge, lambda i: _geval_paper_one(judge, samples[i]), usable), strict=True))
    statuses: list[str] = []
    scores: list[float] = []
    for index in range(len(samples)):
        if index not in outcomes:
            statuses.append("empty_output")  # the authors skip empty captions
            continue
        status, value = outcomes[index]
        statuses.append(status)
        if value is not None:
            scores.append(float(value))
    extra = {"scale": list(GEVAL_SCALE), "samples_per_round": GEVAL_PAPER_SAMPLES}
    return _summary("geval_relevance", statuses, scores, extra)
