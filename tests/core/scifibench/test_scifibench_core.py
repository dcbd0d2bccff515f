"""SciFIBench rules in scifig_tasks.benchmarks.scifibench.rules: prompt texts, caption extraction, alignment
augmentation."""

from __future__ import annotations

import pytest

from scifig_tasks.benchmarks.scifibench import rules as scifibench

OPTIONS = ["A) first caption .", "B)  second caption .", "C) third .", "D) fourth .", "E) fifth ."]


def test_reasoning_variant_drops_the_letter_only_sentence() -> None:
    assert scifibench.instruction("f2c") == (
        "Which of the captions best describes the image? Let's think step by step. Only provide the letter of the "
        "correct caption as your answer. Answer:"
    )
    assert scifibench.instruction("c2f", "reasoning") == (
        "Which of the images best matches the caption? Let's think step by step. Answer:"
    )
    with pytest.raises(ValueError, match="unknown SciFIBench prompt variant"):
        scifibench.instruction("f2c", "verbose")  # type: ignore[arg-type]


def test_caption_is_read_from_the_caption2figure_question() -> None:
    question = "Caption: the ber vs snr for fft size=2048 . Which image best matches the caption?"
    assert scifibench.caption_of(question) == "the ber vs snr for fft size=2048 ."
    with pytest.raises(ValueError):
        scifibench.caption_of("Which caption best matches the image?")


def test_c2f_segments_interleave_labels_and_images_in_order() -> None:
    segments = scifibench.c2f_segments(
        "Caption: x . Which image best matches the caption?", 3, image_placeholder="<image>"
    )
    assert segments[:6] == ["A) <image>", 0, "\nB) <image>", 1, "\nC) <image>", 2]
    assert segments[6].startswith("\nx .\nWhich of the images")


@pytest.mark.parametrize("variant", ["marked_true", "marked_true_ignore"])
def test_true_option_is_marked(variant: str) -> None:
    options, note = scifibench.augment(7, OPTIONS, "B", variant)
    assert options[1] == "B)  <Correct> second caption ."
    assert [o for i, o in enumerate(options) if i != 1] == [o for i, o in enumerate(OPTIONS) if i != 1]
    expected = "A human expert marked one of the captions as <Correct>."
    assert note == expected + (" Ignore this information." if variant.endswith("ignore") else "")


def test_a_seeded_wrong_option_is_marked() -> None:
    marked = [scifibench.marked_option(qid, OPTIONS, "C", "marked_false", seed=0) for qid in range(200)]
    assert "C" not in marked and set(marked) == {"A", "B", "D", "E"}
    assert marked == [scifibench.marked_option(qid, OPTIONS, "C", "marked_false_ignore", seed=0) for qid in range(200)]
    assert marked != [scifibench.marked_option(qid, OPTIONS, "C", "marked_false", seed=1) for qid in range(200)]
    assert scifibench.augment(3, OPTIONS, "C", "baseline") == (OPTIONS, None)


def test_alignment_summary_reports_deltas_against_the_baseline() -> None:
    parts = [
        {"variant": "marked_false", "n": 10, "accuracy": 0.1},
        {"variant": "baseline", "n": 10, "accuracy": 0.6},
        {"variant": "marked_true", "n": 10, "accuracy": 0.9},
    ]
    summary = scifibench.alignment_summary(parts)
    assert summary["baseline"]["delta_vs_baseline"] is None
    assert summary["marked_true"]["delta_vs_baseline"] == 0.3
    assert summary["marked_false"]["delta_vs_baseline"] == -0.5
