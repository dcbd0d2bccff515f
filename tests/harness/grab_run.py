"""The GRAB run several test modules check: 17 questions whose replies probe both GRAB rules (whitespace, longer
numbers, an answer after words, huge and empty outputs, control characters, a failed request, null content), through
the real ``lmms-eval`` CLI (``--tasks grab --log_samples``, lmms-eval's ``openai`` model) against a local server.

:func:`grab_exact_run` is that run, made once per test session (per pytest-xdist worker) and shared by the GRAB CLI
test and the rescore tests, which only read it (a test that edits its files edits a copy under its own
``tmp_path``). Each reply's expected outcome is written by hand, not computed with the package's scorer: under
``grab`` the answer as a whole (a number equal to the answer's, read from the whole output or the one answer it
states), under the authors' rule (:data:`PAPER_CORRECT`, ``grab_paper`` and the run's re-score with ``--protocol
paper``) strip leading whitespace, truncate to the answer's length, compare with ``==``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.grab_data import ONE_DP, Row, question_text, write_parquet
from tests.harness.lmms import CliRun, offline_env, run
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, by_question

FAILED = Reply(status=400)  # not retried by the client: lmms-eval answers "[LMMS_EVAL_REQUEST_FAILED ...]"

# (row, reply, expected correct under grab) — subtask sizes differ (7/5/3/2) so micro and macro averages differ.
CASES: list[tuple[Row, str | Reply, bool]] = [
    (Row("properties", "15"), "15", True),
    (Row("properties", "15"), " \n 15", True),  # leading whitespace is stripped
    (Row("properties", "15"), "15.3", False),  # 15.3 is not 15 (the authors' rule cuts it to "15")
    (Row("properties", "10"), "1", False),  # too short: "1" != "10"
    (Row("properties", "-3"), "The answer is -3.", True),  # the one answer stated (the authors' rule: wrong)
    (Row("properties", "-3"), " -3", True),
    (Row("properties", "7"), "", False),  # empty
    (Row("function", "2.5", precision_sentence=ONE_DP), "2.50", True),
    (Row("function", "2.5", precision_sentence=ONE_DP), "2", False),
    (Row("function", "4"), "4" + "9" * 200_000, False),  # huge, a longer number (the authors' rule: right)
    (Row("function", "4"), "x" * 200_000, False),  # huge
    (Row("function", "-8"), FAILED, False),  # lmms-eval's failure marker
    (Row("series", "0.3", precision_sentence=ONE_DP), "\x00" + "0.3", False),  # NUL is not whitespace
    (Row("series", "6"), "\x1b[0m6", False),  # escape sequence before the answer
    (Row("series", "6"), "\t6\r\n", True),
    (Row("transform", "-1"), Reply(text=None), False),  # null content
    (Row("transform", "-1"), "-1", True),
]
PAPER_CORRECT: list[bool] = [correct for _, _, correct in CASES]
"""Each case's verdict under the authors' rule: the same but for the three outputs the rules score differently."""
PAPER_CORRECT[2], PAPER_CORRECT[4], PAPER_CORRECT[9] = True, False, True
ARGS = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]


@dataclass(frozen=True)
class GrabRun:
    run: CliRun
    requests: list[ChatRequest]
    """What the model server received, in arrival order."""
    data: Path
    """The GRAB parquet file the run read (``SCIFIG_GRAB_DATA``)."""


@pytest.fixture(scope="session")
def grab_exact_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrabRun]:
    """``lmms-eval --tasks grab --log_samples`` on :data:`CASES` (no ``--include_path``: discovery through the
    installed plugin), once per session; the model server is stopped afterwards."""
    work = tmp_path_factory.mktemp("grab-exact")
    data = write_parquet([row for row, _, _ in CASES], work / "grab" / "GRAB.parquet")
    replies = {question_text(pid, row) + "\n": reply for pid, (row, reply, _) in enumerate(CASES)}
    server = FakeOpenAIServer(by_question(replies, default=Reply(status=404))).start()
    env = {**offline_env(work), "SCIFIG_GRAB_DATA": str(data), "OPENAI_API_BASE": server.base_url}
    env["OPENAI_API_KEY"] = "sk-test"
    try:
        done = run("lmms-eval", [*ARGS, "--tasks", "grab", "--log_samples"], env, work / "out")
    finally:
        server.stop()
    assert not server.errors, server.errors
    yield GrabRun(done, server.requests, data)
