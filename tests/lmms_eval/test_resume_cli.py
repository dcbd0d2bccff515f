"""Resuming a stopped ``scifig eval``: the response cache it turns on by default.

Fast tests drive :class:`scifig_tasks.lmms_eval.response_cache.ScifigResponseCache` with hand-built lmms-eval
requests: which requests share a key (and that lmms-eval's own key lets different images collide), replies stored
chunk by chunk, failures never stored, nothing secret written. Slow tests run the real ``scifig eval`` with
lmms-eval's ``openai`` model against the local server: a process killed after N answered requests, or a server that
fails hard after N, then the same command again: the server receives only the requests it had not answered, and
the results equal an uninterrupted run's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.caching.response_cache import _extract_content_hash, compute_cache_key
from PIL import Image

from scifig_tasks.commands.eval import CACHE_FOLDER, with_default_cache
from scifig_tasks.core.errors import CommandError
from scifig_tasks.lmms_eval.response_cache import RUN_ID, ScifigResponseCache, chunk_size, installed
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.lmms import CLI_TIMEOUT_S, CliRun, _executable, offline_env
from tests.harness.openai_server import ChatRequest, FakeOpenAIServer, Reply, by_question, echoing_key

KEY = "sk-resume-test-key-0123456789"
GEN = {"max_new_tokens": 16, "temperature": 0, "until": ["\n\n"]}


# ---------------------------------------------------------------------------------------------- scifig eval's option


def test_default_cache_is_beside_the_output_and_said_in_one_line() -> None:
    argv, line = with_default_cache(["--model", "openai", "--tasks", "grab", "--output_path", "runs"])
    assert argv[-2:] == ["--use_cache", str(Path("runs") / CACHE_FOLDER / "openai")]
    assert argv[:6] == ["--model", "openai", "--tasks", "grab", "--output_path", "runs"]  # the rest unchanged
    assert "\n" not in line and str(Path("runs") / CACHE_FOLDER / "openai") in line and "--no-cache" in line


@pytest.mark.parametrize("given", [["--use_cache", "mine"], ["--use_cache=mine"], ["-c", "mine"]])
def test_an_explicit_cache_wins(given: list[str]) -> None:
    argv, line = with_default_cache(["--model", "openai", "--output_path", "runs", *given])
    assert argv == ["--model", "openai", "--output_path", "runs", *given]
    assert "cached in mine" in line


def test_no_cache_switches_it_off_and_refuses_an_explicit_cache() -> None:
    argv, line = with_default_cache(["--model", "openai", "--output_path", "runs"], cache=False)
    assert argv == ["--model", "openai", "--output_path", "runs"] and "not cached" in line
    with pytest.raises(CommandError, match="--no-cache and --use_cache"):
        with_default_cache(["--output_path", "runs", "--use_cache", "mine"], cache=False)
    argv, line = with_default_cache(["--model", "openai"])
    assert "--use_cache" not in argv and "no --output_path" in line


# ------------------------------------------------------------------------------------------------------ the cache


class FakeModel:
    """An lmms-eval chat model: answers from ``replies`` (by document id), records every batch it is sent, and
    raises (as a killed process stops) once ``fail_after`` requests were answered."""

    def __init__(self, docs: dict[str, list[dict[str, Any]]], num_concurrent: int = 2, fail_after: int = 10**9):
        self.task_dict = {task: {"test": rows} for task, rows in docs.items()}
        self.num_concurrent = num_concurrent
        self.batches: list[list[tuple[str, int]]] = []
        self.fail_after = fail_after
        self.replies: dict[int, str] = {}

    def generate_until(self, requests: list[Instance]) -> list[GenerationResult]:
        self.batches.append([(request.task_name, request.doc_id) for request in requests])
        if sum(map(len, self.batches)) > self.fail_after:
            raise KeyboardInterrupt
        return [GenerationResult(self.replies.get(request.doc_id, f"reply {request.doc_id}")) for request in requests]


def messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """doc_to_messages of an interleaved task: text, image, text, image."""
    content = [{"type": "text", "text": "Which figure fits?"}, {"type": "image", "url": doc["a"]}]
    content += [{"type": "text", "text": "or"}, {"type": "image", "url": doc["b"]}]
    return [{"role": "user", "content": content}]


def image(colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (8, 8), colour)


def request(task: str, doc_id: int, repeats: int = 1, gen: dict[str, Any] | None = None) -> Instance:
    arguments = ("Which figure fits?", messages, dict(gen or GEN), doc_id, task, "test")
    return Instance("generate_until", arguments, idx=0, metadata={"task": task, "doc_id": doc_id, "repeats": repeats})


def open_cache(root: Path, model_args: str = "model_version=fake") -> ScifigResponseCache:
    with installed():  # as scifig eval runs it: one run folder, reopened by the next run
        cache = ScifigResponseCache.create(str(root), model="openai", model_args=model_args)
    assert isinstance(cache, ScifigResponseCache)
    return cache


def test_requests_that_differ_only_in_an_image_do_not_share_a_reply(tmp_path: Path) -> None:
    red, blue = image((255, 0, 0)), image((0, 0, 255))
    before, after = {"a": red, "b": blue}, {"a": red, "b": red}
    docs = {"t": [before]}
    first, second = request("t", 0), request("t", 1)
    second.doc_id = first.doc_id = 0  # the same document id: as after the data behind the task changed
    # lmms-eval's own key: the same for both (the images are not in it)
    own = [
        compute_cache_key("generate_until", r.task_name, r.doc_id, GEN, content_hash=_extract_content_hash(r))
        for r in (first, second)
    ]
    assert own[0] == own[1]
    model = FakeModel(docs)
    cache = open_cache(tmp_path / "cache")
    model.replies = {0: "A"}
    assert [reply.text for reply in cache.execute(model, "generate_until", [first])] == ["A"]
    model.task_dict["t"]["test"][0] = after  # same id, other images
    model.replies = {0: "B"}
    (reply,) = cache.execute(model, "generate_until", [second])
    assert getattr(reply, "text", reply) == "B" and len(model.batches) == 2  # asked, not answered from the cache
    model.task_dict["t"]["test"][0] = before
    assert cache.execute(model, "generate_until", [first]) == ["A"] and len(model.batches) == 2  # cached
    cache.close()


def test_protocols_repeats_and_endpoints_are_kept_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = {name: [{"a": image((1, 2, 3)), "b": image((4, 5, 6))}] for name in ("mmsci", "mmsci_paper")}
    model = FakeModel(docs, num_concurrent=8)
    cache = open_cache(tmp_path / "cache")
    plain, paper = request("mmsci", 0, repeats=3), request("mmsci_paper", 0)
    replies = cache.execute(model, "generate_until", [plain, plain, plain, paper])
    assert len(model.batches[0]) == 4  # three copies of one request and its _paper twin: four keys
    assert len({key for key in cache.db.execute("SELECT cache_key FROM responses")}) == 4
    assert [getattr(r, "text", r) for r in replies] == ["reply 0"] * 4
    assert cache.execute(model, "generate_until", [plain, plain, plain, paper]) == ["reply 0"] * 4
    assert len(model.batches) == 1
    cache.close()

    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:1/v1")  # another server behind the same model name
    other = open_cache(tmp_path / "cache")
    other.execute(model, "generate_until", [paper])
    assert len(model.batches) == 2
    other.close()

    sampled = open_cache(tmp_path / "cache")  # sampled requests are never cached (lmms-eval's rule)
    hot = request("mmsci_paper", 0, gen={**GEN, "temperature": 0.7, "do_sample": True})
    sampled.execute(model, "generate_until", [hot])
    sampled.execute(model, "generate_until", [hot])
    assert len(model.batches) == 4
    sampled.close()


def test_replies_are_stored_chunk_by_chunk_and_a_rerun_asks_only_the_rest(tmp_path: Path) -> None:
    docs = {"t": [{"a": image((i, 0, 0)), "b": image((0, i, 0))} for i in range(10)]}
    requests = [request("t", i) for i in range(10)]
    model = FakeModel(docs, num_concurrent=3, fail_after=7)  # the third chunk (requests 7 to 9) never returns
    with pytest.raises(KeyboardInterrupt):
        open_cache(tmp_path / "cache").execute(model, "generate_until", requests)
    assert [len(batch) for batch in model.batches] == [3, 3, 3]

    rerun = FakeModel(docs, num_concurrent=3)
    cache = open_cache(tmp_path / "cache")  # a new process: reopens runs/scifig/
    replies = cache.execute(rerun, "generate_until", requests)
    assert [doc_id for batch in rerun.batches for _, doc_id in batch] == [6, 7, 8, 9]
    assert [getattr(reply, "text", reply) for reply in replies] == [f"reply {i}" for i in range(10)]
    cache.finalize(success=True)
    assert (tmp_path / "cache" / "runs" / RUN_ID).is_dir() and (tmp_path / "cache" / "cache.db").is_file()


def test_failures_are_not_stored_not_even_through_the_crash_log(tmp_path: Path) -> None:
    docs = {"t": [{"a": image((i, 0, 0)), "b": image((0, i, 0))} for i in range(3)]}
    model = FakeModel(docs)
    model.replies = {0: "[LMMS_EVAL_REQUEST_FAILED after 5 retries] HTTP 500", 1: "", 2: "fine"}
    cache = open_cache(tmp_path / "cache")
    cache.execute(model, "generate_until", [request("t", i) for i in range(3)])
    cache.close()  # not finalized: as a killed run leaves it; the next start replays the JSONL log
    again = FakeModel(docs)
    reopened = open_cache(tmp_path / "cache")
    reopened.execute(again, "generate_until", [request("t", i) for i in range(3)])
    assert [doc_id for batch in again.batches for _, doc_id in batch] == [0, 1]
    reopened.close()


def test_nothing_secret_reaches_the_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    docs = {"t": [{"a": image((9, 9, 9)), "b": image((8, 8, 8))}]}
    model = FakeModel(docs)
    model.replies = {0: f"42 (session {KEY})"}  # a server echoing the key
    cache = open_cache(tmp_path / "cache", model_args=f"model_version=fake,api_key={KEY}")
    cache.execute(model, "generate_until", [request("t", 0)])
    cache.finalize(success=True)
    files = [path for path in (tmp_path / "cache").rglob("*") if path.is_file()]
    assert any(path.name == "cache.db" for path in files)
    assert all(KEY.encode() not in path.read_bytes() for path in files)
    reopened = open_cache(tmp_path / "cache", model_args=f"model_version=fake,api_key={KEY}")
    assert reopened.execute(model, "generate_until", [request("t", 0)]) == ["42 (session <OPENAI_API_KEY>)"]
    reopened.close()


def test_chunk_size_follows_the_model() -> None:
    class Api:
        num_concurrent, batch_size = 16, 64

    class Local:
        batch_size = "auto"

    assert chunk_size(Api()) == 16 and chunk_size(Local()) == 1 and chunk_size(object()) == 1


# ------------------------------------------------------------------------------------------- through the real CLI

N_QUESTIONS = 20
STOP_AFTER = 8  # requests answered before the stop
ROWS = [Row(("properties", "function", "series", "transform")[i % 4], str(i)) for i in range(N_QUESTIONS)]
REPLIES = {question_text(pid, row) + "\n": row.answer if pid % 3 else "no idea" for pid, row in enumerate(ROWS)}


@pytest.fixture
def grab_data(tmp_path: Path) -> Path:
    return write_parquet(ROWS, tmp_path / "grab" / "GRAB.parquet")


def scifig_eval(env: dict[str, str], output: Path, on_start: Any = None) -> CliRun:
    """``scifig eval`` on GRAB with the ``openai`` model, one request at a time; ``on_start(process)`` is called
    once it runs."""
    model_args = "model_version=fake-vlm,max_retries=1,retry_backoff_s=0,num_concurrent=1"
    command = [_executable("scifig"), "eval", "--model", "openai", "--model_args", model_args, "--tasks", "grab"]
    command += ["--log_samples", "--output_path", str(output)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    if on_start is not None:
        on_start(process)
    output_text, _ = process.communicate(timeout=CLI_TIMEOUT_S)
    return CliRun(process.returncode, output_text, output)


def outcome(run: CliRun) -> dict[str, Any]:
    """Accuracy per task and every sample's reply and score, in document order."""
    results = run.results()["results"]
    tasks = ("grab_properties", "grab_functions", "grab_series", "grab_transforms")
    samples = {
        task: sorted((s["doc_id"], s["filtered_resps"], s["accuracy"]) for s in run.samples(task)) for task in tasks
    }
    return {"accuracy": {task: results[task]["accuracy,none"] for task in tasks}, "samples": samples}


def asked(requests: list[ChatRequest]) -> list[str]:
    return sorted(request.text.split("]", 1)[0].split("[", 1)[1] for request in requests)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An uninterrupted run (its own data, output and cache), made once for the module's two resumed lmms-eval runs;
    the server echoes the key into every reply."""
    root = tmp_path_factory.mktemp("reference")
    data = write_parquet(ROWS, root / "grab" / "GRAB.parquet")
    server = FakeOpenAIServer(echoing_key(by_question(REPLIES))).start()
    env = {**offline_env(root), "SCIFIG_GRAB_DATA": str(data), "OPENAI_API_KEY": KEY}
    env["OPENAI_API_BASE"] = server.base_url
    try:
        run = scifig_eval(env, root / "reference")
    finally:
        server.stop()
    assert run.returncode == 0, run.output[-4000:]
    assert server.count == N_QUESTIONS
    cache = root / "reference" / CACHE_FOLDER / "openai"
    files = [path for path in cache.rglob("*") if path.is_file()]
    assert any(path.name == "cache.db" for path in files)
    assert all(KEY.encode() not in path.read_bytes() for path in files)  # the echoed key is masked
    print(f"uninterrupted: {server.count} requests")
    return outcome(run)


def test_a_killed_run_resumes_where_it_stopped(
    tmp_path: Path, grab_data: Path, openai_server, lmms_env, reference: dict[str, Any]
) -> None:
    running: list[subprocess.Popen[str]] = []
    killed = threading.Event()

    def answer_then_kill(request: ChatRequest) -> Reply | str:
        if len(server.requests) > STOP_AFTER:  # the request after the STOP_AFTER-th: the process dies
            if not killed.is_set():
                killed.set()
                os.kill(running[0].pid, signal.SIGKILL)
            return Reply(status=503, delay_s=5)
        return by_question(REPLIES)(request)

    server = openai_server(echoing_key(answer_then_kill))
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(grab_data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": KEY}
    stopped = scifig_eval(env, tmp_path / "out", on_start=running.append)
    assert killed.is_set() and stopped.returncode == -signal.SIGKILL, stopped.output[-4000:]
    assert "model replies are cached in" in stopped.output
    received, answered = server.count, asked(server.requests[:STOP_AFTER])

    server.policy = echoing_key(by_question(REPLIES))
    server.reset()
    resumed = scifig_eval(env, tmp_path / "out")
    assert resumed.returncode == 0, resumed.output[-4000:]
    print(f"killed after {STOP_AFTER} answered requests ({received} received); rerun: {server.count} requests")
    assert server.count == N_QUESTIONS - STOP_AFTER
    assert not set(asked(server.requests)) & set(answered)
    assert outcome(resumed) == reference


def test_a_run_whose_server_failed_resumes_with_the_failed_questions(
    tmp_path: Path, grab_data: Path, openai_server, lmms_env, reference: dict[str, Any]
) -> None:
    def fail_hard_after(request: ChatRequest) -> Reply | str:
        if len(server.requests) > STOP_AFTER:  # Retry-After: the openai SDK's own two retries come at once, not
            return Reply(text="server down", status=500, retry_after=0.01)  # after its 0.5 s + 1 s backoff
        return by_question(REPLIES)(request)

    server = openai_server(echoing_key(fail_hard_after))
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(grab_data), "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": KEY}
    first = scifig_eval(env, tmp_path / "out")
    failed = sum(
        str(sample["filtered_resps"]).startswith("[LMMS_EVAL_REQUEST_FAILED")
        for task in ("grab_properties", "grab_functions", "grab_series", "grab_transforms")
        for sample in first.samples(task)
    )
    assert failed == N_QUESTIONS - STOP_AFTER, first.output[-4000:]
    received = server.count

    server.policy = echoing_key(by_question(REPLIES))
    server.reset()
    resumed = scifig_eval(env, tmp_path / "out")
    assert resumed.returncode == 0, resumed.output[-4000:]
    print(f"server failed after {STOP_AFTER} requests ({received} received); rerun: {server.count} requests")
    assert server.count == N_QUESTIONS - STOP_AFTER
    assert outcome(resumed) == reference


# --------------------------------------------------------------------------------------------------- VLMEvalKit


def children_running(command_part: str) -> list[int]:
    """The ids of this process's children whose command line holds ``command_part``, and of the runs forked from the
    warm process (``tests.harness.warm_start``: a fork keeps the warm process's command line) (Linux ``/proc``)."""
    from tests.harness import warm_start

    warm = warm_start.STARTER.pid
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        parent = int(fields[1])
        if (parent == os.getpid() and command_part in command) or (warm is not None and parent == warm):
            found.append(int(stat.parent.name))
    return found


def test_a_killed_vlmeval_run_resumes_with_reuse(tmp_path: Path, grab_data: Path, openai_server, lmms_env) -> None:
    """VLMEvalKit writes an API model's replies after each one (``<model>_<dataset>_checkpoint.pkl``, in a new
    ``<work dir>/<model>/<run id>/`` per run); ``--reuse`` makes a run start from the latest run's files, asking only
    the questions without a reply (and those whose reply is VLMEvalKit's failure message)."""
    from tests.harness.vlmeval import run_vlmeval, vlmeval_scores

    killed = threading.Event()

    def answer_then_kill(request: ChatRequest) -> Reply | str:
        if len(server.requests) > STOP_AFTER:
            if not killed.is_set():
                killed.set()
                for pid in children_running("vlmeval"):
                    os.kill(pid, signal.SIGKILL)
            return Reply(status=503, delay_s=5)
        return by_question(REPLIES)(request)

    server = openai_server(answer_then_kill)
    env = {**lmms_env, "SCIFIG_GRAB_DATA": str(grab_data)}
    stopped, out = run_vlmeval(tmp_path, server.base_url, env, {"grab": "SciFigGRAB"}, extra=["--api-nproc", "1"])
    assert killed.is_set() and stopped.returncode == -signal.SIGKILL, (stopped.stdout + stopped.stderr)[-4000:]
    answered = asked(server.requests[:STOP_AFTER])
    received = server.count

    server.policy = by_question(REPLIES)
    server.reset()
    shutil.rmtree(tmp_path / "LMUData")  # the harness makes it anew
    resumed, out = run_vlmeval(tmp_path, server.base_url, env, {"grab": "SciFigGRAB"}, extra=["--reuse"])
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-4000:]
    print(f"vlmeval: killed after {STOP_AFTER} answered requests ({received} received); rerun: {server.count}")
    assert server.count == N_QUESTIONS - STOP_AFTER
    assert not set(asked(server.requests)) & set(answered)

    (tmp_path / "reference").mkdir()
    uninterrupted = openai_server(by_question(REPLIES))
    reference, reference_out = run_vlmeval(tmp_path / "reference", uninterrupted.base_url, env, {"grab": "SciFigGRAB"})
    assert reference.returncode == 0 and uninterrupted.count == N_QUESTIONS
    assert vlmeval_scores(out, "grab") == vlmeval_scores(reference_out, "grab")
