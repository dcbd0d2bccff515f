"""Which values are secrets, and how they are masked (one rule for ``scifig eval`` and ``scifig vlmeval``)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from scifig_tasks.core.secrets import MaskedStream, mask, mask_files, mask_log_records, secrets_of

ENVIRON = {
    "OPENAI_API_KEY": "sk-openai-0123456789",
    "HF_TOKEN": "hf_abcdefghijkl",
    "DB_PASSWORD": "hunter2-hunter2",
    "SHORT_KEY": "abc",  # too short to mask: it would mask ordinary words
    "KEYBOARD": "not-a-secret-at-all",  # the name does not end in KEY/TOKEN/SECRET/PASSWORD
    "SCIFIG_JUDGE_API_KEY": "sk-openai-0123456789-judge",  # contains another secret: masked whole
}


def test_secrets_are_the_named_long_values_longest_first() -> None:
    found = secrets_of(ENVIRON, extra=["config-key-0001"])
    assert found == {
        "sk-openai-0123456789-judge": "<SCIFIG_JUDGE_API_KEY>",
        "sk-openai-0123456789": "<OPENAI_API_KEY>",
        "hunter2-hunter2": "<DB_PASSWORD>",
        "config-key-0001": "<secret>",
        "hf_abcdefghijkl": "<HF_TOKEN>",
    }
    assert mask("Bearer sk-openai-0123456789-judge and sk-openai-0123456789", found) == (
        "Bearer <SCIFIG_JUDGE_API_KEY> and <OPENAI_API_KEY>"
    )


def test_streams_logs_and_files_are_masked(tmp_path: Path) -> None:
    found = secrets_of(ENVIRON)
    buffer = io.StringIO()
    MaskedStream(buffer, found).write("401: Incorrect API key provided: hf_abcdefghijkl\n")
    assert buffer.getvalue() == "401: Incorrect API key provided: <HF_TOKEN>\n"

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("scifig.test.secrets")
    logger.addHandler(handler)
    factory = logging.getLogRecordFactory()
    try:
        mask_log_records(found)
        logger.warning("key %s rejected", "sk-openai-0123456789")
    finally:
        logging.setLogRecordFactory(factory)
        logger.removeHandler(handler)
    assert records == ["key <OPENAI_API_KEY> rejected"]

    (tmp_path / "samples.jsonl").write_text('{"resps": "Bearer sk-openai-0123456789"}')
    (tmp_path / "other.txt").write_text("sk-openai-0123456789")
    changed = mask_files(tmp_path, found, select=lambda path: path.suffix == ".jsonl")
    assert changed == [tmp_path / "samples.jsonl"]
    assert (tmp_path / "samples.jsonl").read_text() == '{"resps": "Bearer <OPENAI_API_KEY>"}'
    assert (tmp_path / "other.txt").read_text() == "sk-openai-0123456789"
