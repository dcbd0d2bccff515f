"""What a judge sends on the wire, through the real ``scifig eval`` command line: GRAB's LLM extraction with a local
model and a misbehaving local judge on 127.0.0.1 (:mod:`tests.harness.judge_wire`). Two runs, each several probes.

* The deadline: with ``SCIFIG_JUDGE_TIMEOUT_S=1`` a judge sending its reply at 4 bytes a second, and one whose reply
  never ends, fail about a second after they were asked; the run exits 1 and its last line says the time limit and the
  setting. (Before: the 4-bytes-a-second reply was waited out and accepted, the endless one hung the run.)
* One run, everything else: replies written in other digit scripts (``٢``, ``１``, ``𝟑``, ``١٥``) or with the minus
  sign U+2212 score as the numbers they write, and are cached as they came (before: scored wrong, exit 0, and a rerun
  from the cache kept them wrong); redirects (307 and 302 to another port, 307 to 127.0.0.2) are not followed, the
  other address gets nothing, and neither the breaker nor a "malformed response" is blamed; six replies refused for
  their form in a row leave the breaker closed and the healthy questions judged; every reply comes from another model
  than the configured one, which one line says and the results record. The last line names each cause with an example.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.harness import warm_start
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.judge_wire import Wire, WireJudge, WireRequest
from tests.harness.lmms import CliRun, _executable, served_env
from tests.harness.openai_server import by_question

TASKS = ("properties", "function", "series", "transform")
GRAB_TASKS = ("properties", "functions", "series", "transforms")
MODEL_ARGS = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"
PID = re.compile(r"\[q(\d+)\]")
LIMIT_S = 90
"""A run still going after this long is stopped and counts as hung."""


def judged_run(
    tmp_path: Path, openai_server, lmms_env: dict[str, str], answers: list[str], judge: WireJudge, **extra: str
) -> tuple[CliRun | None, float]:
    """``scifig eval --tasks grab_llm_extract`` over one question per answer, the model stating each answer, the
    judge ``judge``; the run (None when it was still going after :data:`LIMIT_S`) and its seconds."""
    rows = [Row(TASKS[pid % 4], answer) for pid, answer in enumerate(answers)]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    model = openai_server(
        by_question({question_text(pid, row) + "\n": f"The answer is {row.answer}." for pid, row in enumerate(rows)})
    )
    env = served_env(lmms_env, model.base_url, judge.base_url, SCIFIG_GRAB_DATA=str(data), **extra)
    out = tmp_path / "out"
    args = ["eval", "--model", "openai", "--model_args", MODEL_ARGS, "--tasks", "grab_llm_extract", "--log_samples"]
    start = time.monotonic()
    try:
        completed = warm_start.run([_executable("scifig"), *args, "--output_path", str(out)], env, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - start
    return CliRun(completed.returncode, completed.stdout + completed.stderr, out), time.monotonic() - start


def by_pid(policy: Callable[[int], Wire]) -> Callable[[WireRequest], Wire]:
    return lambda request: policy(int(PID.search(request.text).group(1)))


def records(run: CliRun) -> dict[int, dict]:
    return {
        sample["breakdown"]["pid"]: sample["breakdown"]
        for task in GRAB_TASKS
        for sample in run.samples(f"grab_{task}_llm_extract")
    }


def last_line(run: CliRun) -> str:
    return next(line for line in reversed(run.output.splitlines()) if "samples could not be judged" in line)


def test_a_judge_slower_than_the_deadline_fails_at_it(tmp_path: Path, openai_server, lmms_env) -> None:
    answers = [str(15 + pid) for pid in range(8)]  # two questions a task: each slow one beside a healthy one
    slow = {0: Wire(text="15", bytes_per_s=4), 1: Wire(text="16", endless=True)}
    with WireJudge(by_pid(lambda pid: slow.get(pid, Wire(text=answers[pid])))) as judge:
        run, seconds = judged_run(
            tmp_path, openai_server, lmms_env, answers, judge, SCIFIG_JUDGE_TIMEOUT_S="1", SCIFIG_JUDGE_MAX_RETRIES="0"
        )
        judging = time.monotonic() - min(request.received_at for request in judge.requests)
    print(f"deadline run: {seconds:.1f} s, {judging:.1f} s of it from the first judge request")
    assert run is not None, f"still running after {LIMIT_S} s"  # before: hung (the endless reply)
    assert run.returncode == 1, run.output[-4000:]
    assert judging < 15, f"{judging:.1f} s from the first judge request to the end of the run"
    line = last_line(run)
    assert line.startswith("scifig eval: 2 samples could not be judged"), line
    assert "2 judge calls got no complete reply within 1s (SCIFIG_JUDGE_TIMEOUT_S" in line, line
    found = records(run)
    assert {pid for pid, record in found.items() if record["judge"] == "judge_failed"} == {0, 1}
    assert all(found[pid]["correct"] == 1 for pid in range(2, 8))


OTHER_MODEL = "fake-judge-2025-06-01"
SCRIPTS = {0: ("2", "٢"), 1: ("1", "１"), 2: ("3", "𝟑"), 3: ("-3", "\u22123"), 4: ("15", "١٥")}
"""pid -> (the answer, the judge's reply: the answer in another digit script, or with the minus sign U+2212)."""
REDIRECTED = (5, 6, 7)
REFUSED = tuple(range(8, 14))
HEALTHY = (14, 15)


def test_digits_redirects_replies_out_of_shape_and_another_model_in_one_run(
    tmp_path: Path, openai_server, lmms_env
) -> None:
    answers = [SCRIPTS[pid][0] if pid in SCRIPTS else str(pid) for pid in range(16)]
    with WireJudge(by_pid(lambda pid: Wire(text=answers[pid]))) as other:
        refusing = f"http://127.0.0.2:{other.port}/v1/chat/completions"
        moves = {5: (307, other.chat_url), 6: (302, other.chat_url), 7: (307, refusing)}

        def judge_policy(pid: int) -> Wire:
            if pid in moves:
                return Wire(status=moves[pid][0], location=moves[pid][1])
            text = SCRIPTS[pid][1] if pid in SCRIPTS else "N/A" if pid in REFUSED else answers[pid]
            return Wire(text=text, model=OTHER_MODEL)

        with WireJudge(by_pid(judge_policy)) as judge:
            run, seconds = judged_run(tmp_path, openai_server, lmms_env, answers, judge, SCIFIG_JUDGE_MAX_RETRIES="0")
            asked = sorted(int(PID.search(request.text).group(1)) for request in judge.requests)
            elsewhere = other.count
    print(f"mixed run: {seconds:.1f} s, exit {None if run is None else run.returncode}, other address {elsewhere}")
    assert run is not None, f"still running after {LIMIT_S} s"
    found = records(run)
    print({pid: (record["judge"], record["correct"], record["extracted"]) for pid, record in sorted(found.items())})
    print("\n".join(text for text in run.output.splitlines() if "judge" in text.lower())[-3000:])

    assert elsewhere == 0  # before: the 307 posted its prompt there, the 302 sent a GET there
    assert "Circuit breaker open" not in run.output  # before: open ("connection refused" at 127.0.0.2)
    assert asked == list(range(16))  # every question asked once: none left unasked behind an open breaker
    for pid in (*SCRIPTS, *HEALTHY):  # before: the other scripts scored wrong (0.0) with judge "judged"
        assert (found[pid]["judge"], found[pid]["correct"], found[pid]["extracted"]) == ("judged", 1, answers[pid])
    assert {pid for pid, record in found.items() if record["judge"] == "judge_failed"} == {*REDIRECTED, *REFUSED}
    assert run.returncode == 1, run.output[-4000:]
    line = last_line(run)
    assert line.startswith("scifig eval: 9 samples could not be judged"), line
    assert "6 judge calls got replies refused for their form (e.g. 'N/A')" in line, line
    assert "3 judge calls were answered with a redirect (HTTP 30" in line, line
    assert "malformed" not in line and "check SCIFIG_JUDGE_BASE_URL, SCIFIG_JUDGE_MODEL" not in line, line
    said = [text for text in run.output.splitlines() if OTHER_MODEL in text]
    assert len(said) == 1 and "'fake-judge'" in said[0] and "13 replies" in said[0], said  # before: nothing said

    usage = run.results()["scifig_environment"]["judge_usage"]
    assert usage["judges"][0]["answered_as"] == {OTHER_MODEL: 13}
    total = usage["total"]
    assert (total["other_model"], total["redirected"], total["refused_form"]) == (13, 3, 6)
    entries = [json.loads(path.read_text(encoding="utf-8")) for path in Path(run_env_cache(tmp_path)).rglob("*.json")]
    assert sorted(entry["text"] for entry in entries) == sorted(
        [reply for _, reply in SCRIPTS.values()] + [answers[pid] for pid in HEALTHY]
    )  # only the replies the check accepts, as they came
    assert {entry["answered_by"] for entry in entries} == {OTHER_MODEL}


def run_env_cache(tmp_path: Path) -> Path:
    return tmp_path / "judge-cache"  # offline_env's SCIFIG_JUDGE_CACHE
