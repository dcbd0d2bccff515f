"""Which values are secrets, and how they are masked (one rule for ``scifig eval`` and ``scifig vlmeval``)."""

from __future__ import annotations

import base64
import io
import logging
import pickle
import zipfile
from pathlib import Path

import pandas as pd

from scifig_tasks.core.secrets import (
    MaskedStream,
    declared,
    mask,
    mask_files,
    mask_log_records,
    mask_value,
    secrets_of,
)

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


def test_url_credentials_in_environment_and_command_line_values_are_secrets() -> None:
    environ = {
        "SCIFIG_JUDGE_BASE_URL": "http://judge-user:p%40ss-word-01@judge.example:8000/v1",
        "HTTPS_PROXY": "https://ghp_token0123456789@proxy.example",  # a user and no password: a token
        "OPENAI_API_BASE": "http://127.0.0.1:8000/v1",  # no credentials
    }
    argv = ["--model_args", "model_version=m,base_url=http://me:cmd-line-pass@127.0.0.1:9/v1,max_retries=1"]
    found = secrets_of(environ, command_line=argv)
    judge = "<SCIFIG_JUDGE_BASE_URL credentials>"
    assert found == {
        base64.b64encode(b"judge-user:p@ss-word-01").decode(): judge,  # the HTTP Basic credential clients send
        base64.b64encode(b"judge-user:p%40ss-word-01").decode(): judge,
        base64.b64encode(b"ghp_token0123456789:").decode(): "<HTTPS_PROXY credentials>",
        "judge-user:p%40ss-word-01": judge,
        "judge-user:p@ss-word-01": judge,
        base64.b64encode(b"me:cmd-line-pass").decode(): "<url credentials>",
        "ghp_token0123456789": "<HTTPS_PROXY credentials>",
        "p%40ss-word-01": judge,
        "me:cmd-line-pass": "<url credentials>",
        "p@ss-word-01": judge,
        "cmd-line-pass": "<url credentials>",
    }
    assert mask(f"{environ['SCIFIG_JUDGE_BASE_URL']} {argv[1]}", found) == (
        f"http://{judge}@judge.example:8000/v1 model_version=m,base_url=http://<url credentials>@127.0.0.1:9/v1,"
        "max_retries=1"
    )
    with declared({"sk-config-key-0001": "<secret>"}):  # a command line's keys reach every writer while it runs
        assert secrets_of({}) == {"sk-config-key-0001": "<secret>"}
    assert secrets_of({}) == {}
    # "pw" and "me:pw" are under 8 characters (they would mask ordinary words); the Basic credential is not
    assert secrets_of({"A_URL": "http://me:pw@host"}) == {"bWU6cHc=": "<A_URL credentials>"}


def test_records_pickles_and_spreadsheets_are_masked(tmp_path: Path) -> None:
    found = secrets_of(ENVIRON)
    record = {"prediction": "15 (session sk-openai-0123456789)", "n": 3, "hits": [["hf_abcdefghijkl", 1.5]]}
    assert mask_value(record, found) == {
        "prediction": "15 (session <OPENAI_API_KEY>)",
        "n": 3,
        "hits": [["<HF_TOKEN>", 1.5]],
    }

    frame = pd.DataFrame({"index": [0, 1], "prediction": ["A sk-openai-0123456789", "B"]})
    frame.to_pickle(tmp_path / "fake_SciFig_GRAB_supp.pkl")
    with open(tmp_path / "0_1_SciFig_GRAB.pkl", "wb") as handle:
        pickle.dump({0: "hf_abcdefghijkl", 1: "C"}, handle)
    frame.to_excel(tmp_path / "fake_SciFig_GRAB.xlsx", index=False)
    (tmp_path / "plain.json").write_text('{"prediction": "hunter2-hunter2"}')
    (tmp_path / "clean.tsv").write_text("index\tprediction\n0\tA\n")

    changed = mask_files(tmp_path, found)

    assert sorted(path.name for path in changed) == [
        "0_1_SciFig_GRAB.pkl",
        "fake_SciFig_GRAB.xlsx",
        "fake_SciFig_GRAB_supp.pkl",
        "plain.json",
    ]
    secret_bytes = [secret.encode() for secret in found]
    assert not [path for path in tmp_path.iterdir() if any(secret in path.read_bytes() for secret in secret_bytes)]
    # never loaded: a pickle's strings are masked where they lie; pandas keeps a frame's text in Arrow buffers (bytes),
    # which cannot be masked without loading it, so that pickle is removed
    assert not (tmp_path / "fake_SciFig_GRAB_supp.pkl").exists()
    assert pickle.loads((tmp_path / "0_1_SciFig_GRAB.pkl").read_bytes()) == {0: "<HF_TOKEN>", 1: "C"}
    sheet = pd.read_excel(tmp_path / "fake_SciFig_GRAB.xlsx")
    assert sheet["prediction"].tolist() == ["A <OPENAI_API_KEY>", "B"]
    with zipfile.ZipFile(tmp_path / "fake_SciFig_GRAB.xlsx") as archive:  # compressed: no byte search would see it
        assert not [name for name in archive.namelist() if b"sk-openai-0123456789" in archive.read(name)]
    assert (tmp_path / "plain.json").read_text() == '{"prediction": "<DB_PASSWORD>"}'
