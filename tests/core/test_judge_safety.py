"""What the judge client takes from the wire, in process against local servers on 127.0.0.1.

* Deadline: ``SCIFIG_JUDGE_TIMEOUT_S`` limits a whole request -- connect, headers and body -- not each read. A reply
  sent a few bytes a second, headers included, or a body that never ends fails at the deadline with a message naming
  the limit and the setting; a reply that arrives in pieces within the deadline is an answer. (Before: a read timeout
  only, so a reply at 4 bytes/s was waited out and accepted, and an endless one hung the call.)
* Redirects are not followed: the request is never sent where a redirect points; the failure names the status and
  the ``Location`` (its credentials left out), is not a malformed reply (not asked again), does not count towards the
  circuit breaker and never blames the configured endpoint for the address it pointed to. (Before: a 307 posted the
  prompt to the other address and cached its reply; a 302 became a GET, read as a malformed response; a redirect to
  an address that refuses opened the breaker as "connection refused".)
* A reply from another model than the configured one is recorded (``answered_as`` of the judge in the usage report,
  ``other_model`` per task, ``answered_by`` in the cache entry) and said once, in one line.
* Replies refused for their form do not open the breaker: each call is asked (and re-asked) and flagged, one WARNING
  line says that the judge answers but not in shape, and the closing line says so with an example. (Before: five in a
  row opened the breaker and the calls after were never sent.)
* GRAB's extraction reads a reply in ASCII digits and the ASCII minus: the check and the score read it through one
  function, so ``٢``, ``１``, ``𝟑`` and ``−3`` are the numbers they write, before and after the cache.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.grab import rules as grab
from scifig_tasks.benchmarks.grab.scoring import score_doc
from scifig_tasks.core.judge import JudgeClient, JudgeConfig, failure_summary, has_text, task_scope, usage_report
from tests.harness.judge_config import judge_config
from tests.harness.judge_wire import Wire, WireJudge, WireRequest
from tests.harness.openai_server import FakeOpenAIServer, Reply

KEY = "sk-judge-wire-5e2f-NEVER-SHOWN"
INTEGER = "What is the value of the y-intercept of the function? Give your answer as an integer."


def config_for(base_url: str, tmp_path: Path, **overrides: object) -> JudgeConfig:
    return judge_config(base_url, tmp_path, KEY, **({"timeout_s": 1.0} | overrides))


def ascii_numerals(text: str) -> str:
    from scifig_tasks.core.judge.replies import ascii_numerals as reading

    return reading(text)


def cached(tmp_path: Path) -> list[dict]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted((tmp_path / "cache").rglob("*.json"))]


def judge_lines(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "scifig.judge" and r.levelno >= level]


# ---- the deadline of a whole request ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "wire",
    [Wire(text="15", bytes_per_s=4), Wire(text="15", endless=True, bytes_per_s=8)],
    ids=["whole-reply-at-4-bytes-per-s", "endless-body"],
)
def test_a_reply_still_arriving_at_the_deadline_fails_then_and_says_why(tmp_path: Path, wire: Wire) -> None:
    with WireJudge(lambda request: wire) as server, JudgeClient(config_for(server.base_url, tmp_path)) as judge:
        start = time.monotonic()
        result = judge.complete("prompt", accept=has_text)
        elapsed = time.monotonic() - start
    print(f"{wire}: {result.status} after {elapsed:.1f} s")
    assert result.status == "judge_failed", result  # before: judged after about 60 s (whole reply at 4 bytes/s)
    assert elapsed < 2.5, f"took {elapsed:.1f} s"  # the deadline is 1 s
    assert "no complete reply within 1s" in (result.error or "")
    assert "SCIFIG_JUDGE_TIMEOUT_S" in (result.error or "")
    assert result.failure == "timeout"
    assert cached(tmp_path) == []


def test_a_reply_that_arrives_in_pieces_within_the_deadline_is_an_answer(tmp_path: Path) -> None:
    with (
        WireJudge(lambda request: Wire(text="15", bytes_per_s=2000)) as server,
        JudgeClient(config_for(server.base_url, tmp_path, timeout_s=5.0)) as judge,
    ):
        result = judge.complete("prompt", accept=has_text)
    assert result.status == "judged" and result.text == "15"


@pytest.mark.slow
def test_the_deadline_holds_for_every_request_on_a_reused_connection(tmp_path: Path) -> None:
    """Connections are kept alive between requests: the deadline is each request's own, not the connection's."""

    def policy(request: WireRequest) -> Wire:
        return Wire(text="15", bytes_per_s=4) if "slow" in request.text else Wire(text="7")

    with WireJudge(policy) as server, JudgeClient(config_for(server.base_url, tmp_path, timeout_s=1.0)) as judge:
        assert judge.complete("fast 1", accept=has_text).text == "7"
        assert judge.complete("fast 2", accept=has_text).text == "7"
        start = time.monotonic()
        assert judge.complete("slow", accept=has_text).status == "judge_failed"
        assert time.monotonic() - start < 2.5
        assert judge.complete("fast 3", accept=has_text).text == "7"


@pytest.mark.slow
def test_a_judge_past_the_deadline_twice_opens_the_breaker_and_the_closing_line_says_so(tmp_path: Path) -> None:
    """Timeouts are failures of the endpoint: two in a row open the breaker. The call whose retry the breaker refused
    failed for its timeout; the calls after it were not sent, and the closing line says both."""
    with (
        WireJudge(lambda request: Wire(text="15", endless=True)) as server,
        JudgeClient(config_for(server.base_url, tmp_path, timeout_s=0.5, max_retries=2)) as judge,
    ):
        results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(3)]
        line = failure_summary("scifig eval", {"t": 3}, clients=[judge])
    assert server.count == 2
    assert [result.failure for result in results] == ["timeout", "breaker", "breaker"]
    assert "1 judge call got no complete reply within 0.5s (SCIFIG_JUDGE_TIMEOUT_S" in line, line
    assert "2 judge calls were not sent, the circuit breaker being open (2 requests in a row timed out" in line, line


def test_the_http_client_of_this_installation_holds_the_deadline(tmp_path: Path) -> None:
    """The deadline reaches the network through the HTTP core library's backend: an HTTP client built otherwise is
    refused by name (the sender then says so in one WARNING line and refuses a reply finished late)."""
    from scifig_tasks.core.judge import deadline

    with JudgeClient(config_for("http://127.0.0.1:9/v1", tmp_path)) as judge:
        assert judge.sender._deadline_held
    with pytest.raises(deadline.DeadlineUnsupported, match="has no transport"):
        deadline.bound(object())


# ---- redirects -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 302, 301, 308])
def test_a_redirect_is_not_followed_and_names_where_it_pointed(
    tmp_path: Path, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with (
        WireJudge(lambda request: Wire(text="7")) as other,
        WireJudge(lambda request: Wire(status=status, location=other.chat_url)) as server,
        JudgeClient(config_for(server.base_url, tmp_path, max_retries=2)) as judge,
    ):
        results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(6)]
        breaker = judge.breaker
        usage = usage_report(clients=[judge])
        target = other.chat_url
    print(f"HTTP {status}: {results[0]}; other address got {other.count} requests")
    assert other.count == 0  # before: a 307 posted every prompt there, a 302 sent a GET
    assert server.count == 6  # one request per call: not retried, not asked again as a malformed reply
    assert {result.status for result in results} == {"judge_failed"}
    error = results[0].error or ""
    assert f"HTTP {status}" in error and target in error and "not followed" in error
    assert "malformed" not in error
    assert {result.failure for result in results} == {"redirect"}
    assert breaker is None  # six in a row: not the endpoint being down
    assert cached(tmp_path) == []
    assert usage is not None and usage["tasks"]["(no task)"]["redirected"] == 6
    said = [line for line in judge_lines(caplog) if "redirect" in line]
    assert len(said) == 1 and target in said[0] and "SCIFIG_JUDGE_BASE_URL" in said[0], said


def test_a_redirect_to_an_address_that_refuses_is_not_blamed_on_the_endpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with WireJudge() as other:
        elsewhere = f"http://127.0.0.2:{other.port}/v1/chat/completions"  # nothing listens on 127.0.0.2
        with (
            WireJudge(lambda request: Wire(status=307, location=elsewhere)) as server,
            JudgeClient(config_for(server.base_url, tmp_path)) as judge,
        ):
            results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(6)]
            breaker = judge.breaker
    assert breaker is None  # before: "connection refused", the breaker open on the configured endpoint
    assert server.count == 6
    assert all(elsewhere in (result.error or "") for result in results)
    assert not any("connection refused" in (result.error or "") for result in results)
    assert judge_lines(caplog, logging.ERROR) == []


def test_a_redirect_location_is_named_without_its_credentials(tmp_path: Path) -> None:
    location = "http://scifig:hunter2-in-location@127.0.0.1:9/v1/chat/completions"
    with (
        WireJudge(lambda request: Wire(status=307, location=location)) as server,
        JudgeClient(config_for(server.base_url, tmp_path)) as judge,
    ):
        result = judge.complete("prompt", accept=has_text)
    assert "hunter2-in-location" not in (result.error or "")
    assert "http://127.0.0.1:9/v1/chat/completions" in (result.error or "")
    assert KEY not in (result.error or "")


# ---- the model that answered -----------------------------------------------------------------------------------------


def test_a_reply_from_another_model_is_recorded_and_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with (
        WireJudge(lambda request: Wire(text="15", model="judge-model-2025-01-01")) as server,
        JudgeClient(config_for(server.base_url, tmp_path)) as judge,
    ):
        with task_scope("grab_series_llm_extract"):
            results = [judge.complete(f"prompt {i}", accept=has_text) for i in range(3)]
        first = usage_report(clients=[judge])
        with task_scope("grab_series_llm_extract"):
            judge.complete("prompt 3", accept=has_text)
        second = usage_report(clients=[judge])
        host = f"127.0.0.1:{server.port}"
    assert {result.status for result in results} == {"judged"}  # accepted: the endpoint chose the model
    assert first is not None and second is not None
    assert first["judges"] == [
        {
            "model": "judge-model",
            "host": host,
            "price_per_million": None,
            "answered_as": {"judge-model-2025-01-01": 3},
        }
    ]
    assert first["tasks"]["grab_series_llm_extract"]["other_model"] == 3
    assert second["judges"][0]["answered_as"] == {"judge-model-2025-01-01": 1}
    said = [line for line in judge_lines(caplog) if "judge-model-2025-01-01" in line]
    assert len(said) == 1, said  # before: nothing said
    assert "'judge-model'" in said[0] and "3 replies" in said[0], said[0]
    assert {entry["answered_by"] for entry in cached(tmp_path)} == {"judge-model-2025-01-01"}
    assert {entry["model"] for entry in cached(tmp_path)} == {"judge-model"}  # the key: what was asked for


def test_a_reply_from_the_configured_model_records_nothing_more(tmp_path: Path) -> None:
    with (
        WireJudge(lambda request: Wire(text="15")) as server,
        JudgeClient(config_for(server.base_url, tmp_path)) as judge,
    ):
        judge.complete("prompt", accept=has_text)
        report = usage_report(clients=[judge])
    assert report is not None and "answered_as" not in report["judges"][0]
    assert "other_model" not in report["tasks"]["(no task)"]
    assert "answered_by" not in cached(tmp_path)[0]


# ---- replies refused for their form ----------------------------------------------------------------------------------


def test_replies_refused_for_their_form_leave_the_breaker_closed_and_every_call_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with (
        FakeOpenAIServer(lambda request: Reply(text="N/A")) as server,
        JudgeClient(config_for(server.base_url, tmp_path, max_retries=1)) as judge,
    ):
        results = [judge.complete(f"prompt {i}", accept=str.isdigit) for i in range(8)]
        breaker = judge.breaker
        asked = server.count
        server.policy = lambda request: Reply(text="5")  # the judge comes to answer: nothing stands in the way
        healthy = judge.complete("prompt 9", accept=str.isdigit)
        usage = usage_report(clients=[judge])
        summary = failure_summary("scifig eval", {"grab_series_llm_extract": 8}, clients=[judge])
    assert breaker is None  # before: open after five, calls 6-8 never sent
    assert asked == 16  # each call asked, and asked again once
    assert [result.failure for result in results] == ["form"] * 8
    assert healthy.status == "judged" and healthy.text == "5"
    assert usage is not None and usage["tasks"]["(no task)"]["refused_form"] == 8
    assert judge_lines(caplog, logging.ERROR) == []
    noted = [line for line in judge_lines(caplog) if "refused for their form" in line]
    assert len(noted) == 1 and "'N/A'" in noted[0], noted
    assert "refused for their form" in summary and "'N/A'" in summary, summary
    assert "check SCIFIG_JUDGE_BASE_URL" not in summary  # the endpoint works: its replies are not answers
    assert [entry["text"] for entry in cached(tmp_path)] == ["5"]  # only the answer is cached


def test_the_closing_line_names_each_cause_with_an_example(tmp_path: Path) -> None:
    with (
        WireJudge(lambda request: Wire(status=307, location="http://127.0.0.1:9/v1/chat/completions")) as moved,
        JudgeClient(config_for(moved.base_url, tmp_path)) as redirected,
        FakeOpenAIServer(lambda request: Reply(text="The answer is 15")) as wordy,
        JudgeClient(config_for(wordy.base_url, tmp_path / "w")) as refused,
    ):
        redirected.complete("a", accept=str.isdigit)
        refused.complete("b", accept=str.isdigit)
        line = failure_summary("scifig eval", {"t": 2}, clients=[redirected, refused])
    assert line.startswith("scifig eval: 2 samples could not be judged (judge_failed: t 2) — ")
    assert "1 judge call was answered with a redirect (HTTP 307 to http://127.0.0.1:9/v1/chat/completions" in line
    assert "1 judge call got replies refused for their form (e.g. 'The answer is 15')" in line
    assert line.endswith("rerun (judged replies are cached, so only these are asked again)")


# ---- GRAB's extraction reads ASCII digits ---------------------------------------------------------------------------

DIGITS = [
    ("٢", "2"),
    ("１", "1"),
    ("𝟑", "3"),
    ("−3", "-3"),
    ("١٥", "15"),
    ("-٣", "-3"),
    ("۱۲.۵", "12.5"),
    ("１０", "10"),
]


@pytest.mark.parametrize(("reply", "number"), DIGITS)
def test_ascii_numerals_writes_every_digit_and_minus_in_ascii(reply: str, number: str) -> None:
    assert ascii_numerals(reply) == number
    assert ascii_numerals(f"[{reply}, 4]") == f"[{number}, 4]"


def test_ascii_numerals_leaves_everything_else_alone() -> None:
    for text in ("15", "y = 2x\u00b2 + 1", "None", "N/A", "\u2013 3", "½", "Ⅻ", "a\u2212b"):
        assert ascii_numerals(text) == text.replace("\u2212", "-")


@pytest.mark.parametrize(("reply", "number"), DIGITS)
def test_grab_scores_a_reply_in_another_script_as_the_number_it_writes(reply: str, number: str) -> None:
    answer_format = "1dp" if "." in number else "integer"
    assert grab.extraction_reply_readable(reply, answer_format)
    score = grab.score_extracted("about that", number, "judged", reply)
    assert score.correct, score  # before: 0.0, the reply recorded as judged and cached
    assert score.extracted == number


@pytest.mark.parametrize(
    "reply",
    ["15", " 15 ", "15.", '"15"', "١٥", "１５.", "−15", "-15", "15 cm", "N/A", "None", "١٥٫٠", "1,5", "y = 15", "٪15"],
)
def test_grab_check_and_score_read_the_same_text(reply: str) -> None:
    """One reading for both: a reply the check accepts is scored on its ASCII text, one it refuses is never scored."""
    readable = grab.extraction_reply_readable(reply, "integer")
    assert readable == grab.extraction_reply_readable(ascii_numerals(reply), "integer")
    score = grab.score_extracted("output", "15", "judged", reply)
    assert score.extracted == ascii_numerals(reply).strip()
    assert score.correct == grab.score_extracted("output", "15", "judged", ascii_numerals(reply)).correct


def test_grab_reply_in_another_script_is_scored_alike_live_and_from_the_cache(tmp_path: Path) -> None:
    doc = {"question": f"[q0] {INTEGER}", "answer": "2"}
    with (
        WireJudge(lambda request: Wire(text="٢")) as server,
        JudgeClient(config_for(server.base_url, tmp_path)) as judge,
    ):
        live = score_doc(doc, "The answer is two.", judge, llm_extract=True)
        again = score_doc(doc, "The answer is two.", judge, llm_extract=True)
    assert server.count == 1
    assert (live.judge, live.correct, again.correct) == ("judged", True, True)  # before: False both times
    assert [entry["text"] for entry in cached(tmp_path)] == ["٢"]  # the judge's reply, as it came


def test_grab_answer_patterns_read_ascii_digits_only() -> None:
    """The ground truth's formats (the generator, the multiple-choice options) are ASCII: ``\\d`` of another script
    is no digit of an answer."""
    from scifig_tasks.benchmarks.grab.answers import matches_format, parse_equation, parse_list

    assert matches_format("15", INTEGER) and not matches_format("١٥", INTEGER)
    assert parse_list("[-2, 3]") == [-2, 3]
    with pytest.raises(ValueError):
        parse_list("[-٢, 3]")
    with pytest.raises(ValueError):
        parse_equation("y = ٢x + 1", "linear")


def test_a_judge_address_refused_for_its_form_is_quoted_without_its_credentials() -> None:
    from scifig_tasks.core.judge.config import JudgeConfig

    with pytest.raises(ValueError) as refused:
        JudgeConfig(base_url="ftp://user:hunter2-secret@judge.example/v1", model="m")

    assert "hunter2-secret" not in str(refused.value) and "judge.example/v1" in str(refused.value)
