"""CharXiv's questions as the authors ask them, byte for byte (every space and line break of their texts).

Rule (the authors' ``descriptive_utils.descriptive_query_helper`` and ``reasoning_utils.build_reasoning_queries`` /
``get_number_instruction``, princeton-nlp/CharXiv 7ebe88f): a descriptive question is its template's response
instruction with the subplot location put in front ("For the current plot, ", "For the subplot at row R and column C,
", "For <text>, "), except the layout templates 18 and 19, which name no subplot; a reasoning question is the
instruction of its answer type around the question, type 4 (number in general) adding how many decimal places the
gold answer has. The texts are the authors' own (:mod:`scifig_tasks.benchmarks.charxiv.authors_text`).
"""

from __future__ import annotations

from collections.abc import Sequence

from scifig_tasks.benchmarks.charxiv.authors_text import text

LAYOUT_TEMPLATES = (18, 19)
"""The templates asking for the layout or number of subplots: the whole figure, no subplot named."""
DESCRIPTIVE_TEMPLATES = range(1, 20)
"""The authors' descriptive template ids."""
ANSWER_TYPES = range(1, 5)
"""The reasoning answer types: 1 text in chart, 2 text in general, 3 number in chart, 4 number in general."""
NUMBER_IN_GENERAL = 4


def subplot_prefix(subplot_loc: Sequence[int] | str) -> str:
    """The words naming the subplot asked about: ``[0, c]`` (a single plot) "For the current plot, ", ``[r, c]`` a
    grid's subplot "For the subplot at row r and column c, ", a text (subplots not in a grid) "For <text>, "."""
    if isinstance(subplot_loc, str):
        return f"For {subplot_loc}, "
    if isinstance(subplot_loc, Sequence) and len(subplot_loc) >= 2:
        row, column = subplot_loc[0], subplot_loc[1]
        return "For the current plot, " if row == 0 else f"For the subplot at row {row} and column {column}, "
    raise ValueError(f"invalid subplot location {subplot_loc!r}: expected [row, column] or a text")


def descriptive_question(template: int, subplot_loc: Sequence[int] | str) -> str:
    """The question of descriptive ``template`` (1-19) about the subplot at ``subplot_loc`` (:func:`subplot_prefix`)."""
    if template not in DESCRIPTIVE_TEMPLATES:
        raise ValueError(f"unknown descriptive template {template!r} (expected 1 to 19)")
    instruction = text("descriptive_response_instructions", template)
    if template in LAYOUT_TEMPLATES:
        return instruction  # taken as it is: no location, and not formatted
    return instruction.format(subplot_prefix(subplot_loc))


def number_instruction(answer: str) -> str:
    """The answer-format line of a number-in-general question, from its gold ``answer``: an exact integer when it has
    no ``.``, else as many decimal places as follow its first ``.`` (up to a second one, as the authors count)."""
    parts = answer.split(".")
    if len(parts) == 1:
        return "* Your final answer must be an exact integer."
    return f"* Your final answer must be a number with {len(parts[1])} decimal places."


def reasoning_question(query: str, answer_type: int, answer: str) -> str:
    """The reasoning question ``query`` inside the response instruction of its ``answer_type`` (1-4; the Hub's
    ``reasoning_a_type``, the authors' ``inst_category``); type 4 also gets :func:`number_instruction` of ``answer``."""
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"unknown reasoning answer type {answer_type!r} (expected 1 to 4)")
    instruction = text("reasoning_response_instructions", answer_type)
    if answer_type == NUMBER_IN_GENERAL:
        return instruction.format(query, number_instruction(answer))
    return instruction.format(query)
