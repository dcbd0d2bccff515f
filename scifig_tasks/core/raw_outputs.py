"""What a raw model output is before any benchmark reads it: text, nothing, or a framework's failure marker.

Shared by every scorer: an empty output or the marker lmms-eval's or VLMEvalKit's API models return after their
retries fail is counted wrong and flagged, and is never sent to a judge.
"""

from __future__ import annotations

from typing import Literal

REQUEST_FAILED_MARKER = "[LMMS_EVAL_REQUEST_FAILED"
"""Prefix lmms-eval's API models return as if it were an answer when every retry failed."""

VLMEVAL_FAILED_MARKER = "Failed to obtain answer"
"""Prefix of what VLMEvalKit's API models return when every retry failed (``Failed to obtain answer via API.``)."""

END_OF_TURN_MARKERS = ("</s>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>", "<end_of_turn>")
"""Where every task's generation stops (``until`` in the task YAMLs): the end of the model's turn. lmms-eval's default
stop, a blank line, would cut chain-of-thought answers and multi-paragraph captions short for models that honour it."""

OutputStatus = Literal["ok", "empty", "request_failed"]


def output_status(output: str | None) -> OutputStatus:
    """Classify a raw model output: usable text, nothing, or a framework's request-failure marker."""
    if output is None or not output.strip():
        return "empty"
    if output.lstrip().startswith((REQUEST_FAILED_MARKER, VLMEVAL_FAILED_MARKER)):
        return "request_failed"
    return "ok"
