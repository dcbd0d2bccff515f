"""Realistic multiple-choice output styles, each with what it states: one letter, or no single answer.

``{L}`` is the letter the output names, ``{T}`` that option's text, ``{M}`` a second, different letter. The first
styles are the SciFIBench paper's appendix examples.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    name: str
    template: str
    states_answer: bool = True

    def render(self, letter: str, text: str, other: str, all_options: list[str]) -> str:
        if self.template == "<ALL OPTIONS>":
            return "\n".join(all_options)
        return self.template.format(L=letter, T=text, M=other)


STYLES: list[Style] = [
    Style("paper: label and caption with eos", "{L}) {T}</s>"),
    Style("paper: correct caption sentence", "The correct caption that best describes the image is: {L}) {T}"),
    Style("letter", "{L}"),
    Style("letter and period", "{L}."),
    Style("parentheses", "({L})"),
    Style("square brackets", "[{L}]"),
    Style("bold", "**{L}**"),
    Style("answer colon", "Answer: {L}"),
    Style("answer lower case", "answer: {L}"),
    Style("answer upper case parentheses", "ANSWER: ({L})"),
    Style("answer dash", "Answer - {L}"),
    Style("answer with caption", "Answer: {L}) {T}"),
    Style("correct answer colon", "Correct answer: {L}"),
    Style("final answer", "Step 1: read the axes.\nStep 2: compare the captions.\nFinal answer: {L}"),
    Style("final answer boxed", "The legend matches. Final Answer: \\boxed{{{L}}}"),
    Style("boxed", "\\boxed{{{L}}}"),
    Style("answer tags", "<answer>{L}</answer>"),
    Style("answer tags spaced", "<answer> {L} </answer>"),
    Style("think block", "<think>Caption A mentions loss, B mentions flow. Not sure yet.</think>\n{L}"),
    Style(
        "step by step conclusion",
        "Let's think step by step. The figure shows several curves against a logarithmic x-axis. "
        "The caption must mention the plotted quantity. Therefore, the answer is {L}.",
    ),
    Style("the answer is", "The answer is {L}."),
    Style("answer is because", "I think the answer is {L} because the plot shows the described trend."),
    Style("correct caption is", "The correct caption is {L}."),
    Style("best caption parentheses", "The best caption is ({L})."),
    Style("right choice", "The right choice is {L}"),
    Style("option first", "Option {L} is the best match."),
    Style("choose option", "I would choose option {L}."),
    Style("image sentence", "Image {L} best matches the caption."),
    Style("caption reference", "The figure corresponds to caption {L}, which mentions the same quantities."),
    Style("correct option with text", "Based on the figure, the correct option is {L}) {T}"),
    Style("label colon text", "{L}: {T}"),
    Style("label text explanation", "{L}) {T}\nThis caption describes the axes and the plotted quantities."),
    Style("bold answer sentence", "My answer is **{L}**."),
    Style("letter then reason", "{L}. The curves in the figure match this description."),
    Style("caption text only", "{T}"),
    Style("json", '{{"answer": "{L}"}}'),
    Style("echo all options", "<ALL OPTIONS>", states_answer=False),
    Style("two letters or", "{L} or {M}", states_answer=False),
    Style("either or parentheses", "It could be either ({L}) or ({M}).", states_answer=False),
    Style("two answer lines", "Answer: {L}\nAnswer: {M}", states_answer=False),
    Style("refusal", "I'm sorry, but I cannot determine which caption matches the image.", states_answer=False),
    Style("none match", "None of the captions match the figure.", states_answer=False),
    Style("empty", "", states_answer=False),
    Style("whitespace", "  \n ", states_answer=False),
]

CHATTY_OPTIONS = (
    "a plot of the loss over training steps .",
    "the architecture of the proposed network .",
    "comparison of runtime on three datasets .",
    "north-south flow duration curves for the basin .",
    "expected lookup cost as a function of load factor .",
)
"""The options the chatty outputs below answer."""

# Chatty outputs (SciFIBench/MMSci style, 5 options A-E): an answer with discussion of other options around it, and
# outputs that mention letters without stating an answer. Each with the letter it states, written by hand.
CHATTY: list[tuple[str, str | None]] = [
    ("D\n\nExplanation: caption A mentions temporally varying churn, but the plot shows high churn.", "D"),
    ("E\nThe image shows low churn, unlike option D which says high churn.", "E"),
    ("D is the best caption; caption A is unrelated.", "D"),
    ("C\n\nCaption A is incorrect because it describes a different quantity.", "C"),
    ("B\n\nWhy not D? Option D describes lookup time, not bit error rate.", "B"),
    ("The answer is D. Caption A talks about training loss, which the figure does not show.", "D"),
    ("Caption A mentions loss and caption B mentions an architecture; neither fits. The answer is C.", "C"),
    ("After comparing A, B and E, the correct caption is D.", "D"),
    ("**Answer**: C", "C"),
    ("*Answer*: C", "C"),
    ("**Answer: C**", "C"),
    ("### Answer\nC", "C"),
    ("Correct option: C", "C"),
    ("Thus, D is correct.", "D"),
    ("Selected: B", "B"),
    ("The final answer is **[C]**.", "C"),
    ("Final Answer: \\boxed{E}", "E"),
    # letters that are mentioned, never stated
    ("Let $A$ and $C$ be the endpoints of the chord; then segment AB is longer than $C$D.", None),
    ("Point $A$ lies on the circle, so triangle $ABC$ is right-angled at $C$ and $B$ is the apex.", None),
    ("The plot compares methods A and C on three datasets, but no caption describes the axes.", None),
    # hedges, alternatives and negations
    ("Answer: B or C", None),
    ("The answer is not option A", None),
    ("Option A is incorrect.", None),
    ("Not option D.", None),
    ("It is either (B) or (C).", None),
    ("Caption A is wrong and caption B is wrong.", None),
    ("I would not choose A.", None),
    ("If the answer were A, the axes would be logarithmic; they are not.", None),
    ("None of the options A, B, C, D or E is correct.", None),
    ("Is the answer A? The legend is unclear.", None),
    # a passive verdict, a phrase before the copula, options echoed after the answer, and their near-misses
    ("The figure is best described by caption B, since it plots the layers of the network.", "B"),
    ("Looking at the pattern, the correct choice to replace the question mark would be B.", "B"),
    (
        "Caption A shows a loss curve and caption C runtimes, and the answer is D.\n\n"
        "E) expected lookup cost as a function of load factor .",
        "D",
    ),
    ("The figure is best described by caption B or C.", None),
    ("Is it caption B? No, the axes differ.", None),
    ("The correct choice would be B if the axes were linear, but they are not.", None),
    # the question's options repeated, without and with an answer after them
    ("The options are:\n" + "\n".join(f"{chr(65 + i)}. {text}" for i, text in enumerate(CHATTY_OPTIONS)), None),
    ("The options are:\n" + "\n".join(f"{chr(65 + i)}: {text}" for i, text in enumerate(CHATTY_OPTIONS)), None),
    (
        "The options are:\n"
        + "\n".join(f"{chr(65 + i)}. {text}" for i, text in enumerate(CHATTY_OPTIONS))
        + "\n\nThe answer is (C).",
        "C",
    ),
]
