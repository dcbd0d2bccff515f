"""The report masks a secret in whatever it reads, however the JSON writer wrote it, while reading a file that cannot
hold one as it is (``scifig_tasks.report.runs.can_hold``, the rule in its docstring): a results file and sample log
holding a key as it is, with ``\\/`` for its ``/``, with ``\\u00XX`` for an ASCII character of it, and one holding
none, read back by ``load_runs`` with the key in the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scifig_tasks.report.runs import can_hold, load_runs

KEY = "sk-proj/masking-test-0123456789"
LABEL = "<OPENAI_API_KEY>"
WRITTEN = {
    "as it is": KEY,
    "slash escaped": KEY.replace("/", "\\/"),
    "ASCII escaped": KEY.replace("k", "\\u006b", 1),
}
"""The key as three JSON writers may put it inside a string literal (each decodes to the key)."""


def write_run(folder: Path, output: str) -> Path:
    """A results file naming the model and a GRAB sample log whose one output is the JSON string text ``output``."""
    folder.mkdir(parents=True)
    results = {"results": {"grab_functions": {"accuracy,none": 1.0}}, "model_name": "model", "date": "1"}
    (folder / "1_results.json").write_text(json.dumps(results))
    sample = '{"doc_id": 0, "target": "3", "filtered_resps": ["3 ' + output + '"], "accuracy": 1.0}'
    (folder / "1_samples_grab_functions.jsonl").write_text(sample + "\n")
    return folder


@pytest.mark.parametrize("how", list(WRITTEN))
def test_a_key_in_a_sample_log_is_masked_however_it_was_written(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    folder = write_run(tmp_path / "run", WRITTEN[how])
    assert json.loads((folder / "1_samples_grab_functions.jsonl").read_text())["filtered_resps"] == [f"3 {KEY}"]
    assert can_hold(folder / "1_samples_grab_functions.jsonl", {KEY: LABEL})
    (run,) = load_runs([folder])
    assert run.samples["grab_functions"][0]["filtered_resps"] == [f"3 {LABEL}"]


def test_a_file_without_the_key_is_read_as_it_is(tmp_path: Path) -> None:
    """Other escapes (a quote, a newline, a non-ASCII character) cannot spell a plain key; a key with a quote is
    always masked."""
    folder = write_run(tmp_path / "run", 'sk-proj \\"quoted\\" \\n \\u00e9 \\u2028 sk-proj/other')
    logged = folder / "1_samples_grab_functions.jsonl"
    assert not can_hold(logged, {KEY: LABEL})
    assert not can_hold(logged, {})
    assert can_hold(logged, {'sk-with-"quote"': LABEL})
