"""A command line forked from the warm process (``tests/harness/warm_start.py``) runs as a fresh interpreter would.

The suite's command lines are forks of one process per worker that imported torch and numpy's stack once; a test
reading a run's output, files or exit code must not be able to tell. Each test here runs a tiny module (or a script
with this interpreter's ``#!`` line, as a console script has) both ways, forked and in a fresh interpreter, and
compares what the run saw and did: argv, environment, working folder, ``sys.path``, ``__main__``, the temporary
folder, the standard streams, the exit status, ``atexit``, an uncaught exception's traceback. A fork is refused
where it could not start the command alike (a variable read at start changed, ``PYTHONPATH`` shadowing an imported
module).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness import warm_start

pytestmark = [pytest.mark.slow, pytest.mark.cli]

PROBE = """\
import atexit, json, os, signal, subprocess, sys, tempfile, threading, time

mode = sys.argv[1]
if mode == "report":
    numpy = sys.modules.get("numpy")
    facts = {
        "argv": sys.argv,
        "orig_argv": sys.orig_argv,
        "cwd": os.getcwd(),
        "only_in_request": os.environ.get("ONLY_IN_REQUEST"),
        "path_variable": os.environ.get("PATH"),
        "tempdir": tempfile.gettempdir(),
        "sys_path": sys.path,
        "main": [__name__, globals().get("__file__"), __spec__ and __spec__.name, type(__loader__).__name__],
        "main_is_module": sys.modules["__main__"].__dict__ is globals(),
        "tests_package": sorted(name for name in sys.modules if name.split(".")[0] == "tests"),
        "stdin": sys.stdin.read(),
        "streams": [
            [s.name, s.mode, s.encoding, s.errors, s.line_buffering, s.write_through, type(s.buffer).__name__]
            for s in (sys.stdin, sys.stdout, sys.stderr)
        ],
        "dont_write_bytecode": sys.dont_write_bytecode,
    }
    print(json.dumps(facts))
    print(json.dumps({"ppid": os.getppid(), "draw": numpy and int(numpy.random.randint(2**62))}), file=sys.stderr)
    atexit.register(print, "atexit ran")
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
    leaked = open("leaked.txt", "a")  # never closed: written when the interpreter ends
    leaked.write("kept ")
    sys.stdout.write("no newline at the end")
    sys.stderr.write("progress\\r50%\\r100%\\r\\n")
    sys.exit(3)
if mode == "raise":
    print("before the error")
    def fail():
        raise ValueError("boom")
    fail()
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "hang":
    sleeper = subprocess.Popen(["sleep", "60"])
    with open(sys.argv[2], "w") as pids:
        pids.write(f"{os.getpid()} {sleeper.pid}")
    time.sleep(60)
"""


@pytest.fixture
def probe(tmp_path: Path) -> dict[str, object]:
    """The probe module on a ``PYTHONPATH`` folder, a script copy of it, a working folder and the request's env:
    one variable added, one the warm process has removed, its own temporary folder."""
    lib, work, scripts, tmp = (tmp_path / name for name in ("lib", "work", "bin", "tmp"))
    for folder in (lib, work, scripts, tmp):
        folder.mkdir()
    (lib / "probe.py").write_text(PROBE)
    script = scripts / "probe-tool"
    script.write_text(f"#!{sys.executable}\n{PROBE}")
    script.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != "PATH"}
    env.update({"ONLY_IN_REQUEST": "yes", "TMPDIR": str(tmp), "PYTHONPATH": str(lib)})
    return {"env": env, "work": work, "script": str(script)}


def _both(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess, ...]:
    """The run forked from the warm process, and in a fresh interpreter."""
    warm = warm_start.STARTER.run(argv, env, cwd, timeout=60)
    assert warm is not None, f"{argv} was not forked"
    cold = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )  # fmt: skip
    return warm, cold


def _split(completed: subprocess.CompletedProcess) -> tuple[dict, dict, str, str]:
    facts, tail = completed.stdout.split("\n", 1)
    pids, rest = completed.stderr.split("\n", 1)
    return json.loads(facts), json.loads(pids), tail, rest


def test_forked_run_sees_and_does_what_a_fresh_interpreter_does(probe: dict) -> None:
    env, work = probe["env"], probe["work"]
    draws = []
    commands = (
        [sys.executable, "-m", "probe", "report", "a b"],
        [probe["script"], "report"],
        [sys.executable, "-c", PROBE, "report"],
    )
    for argv in commands:
        warm, cold = _both(argv, env, work)
        assert (warm.returncode, cold.returncode) == (3, 3), warm.stderr
        warm_facts, warm_pids, warm_tail, warm_rest = _split(warm)
        cold_facts, cold_pids, cold_tail, cold_rest = _split(cold)
        assert warm_facts == cold_facts
        assert warm_facts["only_in_request"] == "yes" and warm_facts["path_variable"] is None
        assert warm_facts["tempdir"] == env["TMPDIR"] and warm_facts["cwd"] == str(work)
        assert warm_tail == cold_tail == "no newline at the endthread done\natexit ran\n"
        assert warm_rest == cold_rest == "progress\n50%\n100%\n"
        assert warm_pids["ppid"] == warm_start.STARTER.pid and cold_pids["ppid"] == os.getpid()
        draws.append(warm_pids["draw"])
    assert (work / "leaked.txt").read_text() == "kept " * 2 * len(commands)
    assert len(set(draws)) == len(draws), "numpy's global generator was not seeded again in the fork"


def test_uncaught_exception_and_a_crashed_run(probe: dict) -> None:
    env, work = probe["env"], probe["work"]
    warm_pid = warm_start.STARTER.pid
    warm, cold = _both([sys.executable, "-m", "probe", "crash"], env, work)
    assert warm.returncode == cold.returncode == -signal.SIGSEGV
    if warm_pid is not None:
        assert warm_start.STARTER.pid == warm_pid, "the warm process did not survive a crashed run"
    warm, cold = _both([sys.executable, "-m", "probe", "raise"], env, work)
    assert warm.returncode == cold.returncode == 1
    assert warm.stdout == cold.stdout == "before the error\n"
    assert warm.stderr == cold.stderr
    assert warm.stderr.startswith("Traceback (most recent call last):") and "ValueError: boom" in warm.stderr


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_timeout_kills_the_run_and_what_it_started(probe: dict, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    argv = [sys.executable, "-m", "probe", "hang", str(pids)]
    with pytest.raises(subprocess.TimeoutExpired):
        warm_start.STARTER.run(argv, probe["env"], probe["work"], timeout=1)
    started = [int(pid) for pid in pids.read_text().split()]
    deadline = time.monotonic() + 10
    while any(map(_running, started)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(_running, started)), f"still running after the timeout: {started}"
    completed = warm_start.STARTER.run([sys.executable, "-m", "probe", "raise"], probe["env"], probe["work"], 60)
    assert completed is not None and completed.returncode == 1  # the warm process serves the next run


def test_a_run_a_fork_would_start_differently_is_not_forked(probe: dict, tmp_path: Path) -> None:
    env, work = probe["env"], probe["work"]
    report = [sys.executable, "-m", "probe", "report"]
    shadow, custom, here = tmp_path / "shadow", tmp_path / "custom", tmp_path / "here"
    (shadow / "numpy").mkdir(parents=True)
    (shadow / "numpy" / "__init__.py").write_text("")
    custom.mkdir()
    (custom / "sitecustomize.py").write_text("")
    here.mkdir()
    (here / "torch.py").write_text("")
    refused = {
        "hash seed read at start": (report, {**env, "PYTHONHASHSEED": "7"}),
        "a variable torch read on import": (report, {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}),
        "PYTHONPATH shadows numpy": (report, {**env, "PYTHONPATH": f"{shadow}{os.pathsep}{env['PYTHONPATH']}"}),
        "PYTHONPATH brings a sitecustomize": (report, {**env, "PYTHONPATH": f"{env['PYTHONPATH']}:{custom}"}),
        "an interpreter option": ([sys.executable, "-X", "importtime", "-m", "probe", "report"], env),
        "not Python": (["/bin/true"], env),
    }
    for why, (argv, request_env) in refused.items():
        assert warm_start.STARTER.run(argv, request_env, work, timeout=60) is None, why
    assert warm_start.STARTER.run(report, env, here, timeout=60) is None, "the working folder shadows torch"
    completed = warm_start.run(report, {**env, "PYTHONHASHSEED": "7"}, work, timeout=60)
    assert completed.returncode == 3 and json.loads(completed.stderr.split("\n", 1)[0])["ppid"] == os.getpid()


def test_a_worker_whose_own_environment_changed_starts_a_warm_process_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing VLMEvalKit in a test's process sets ``LD_LIBRARY_PATH`` and ``TORCHINDUCTOR_CACHE_DIR`` for good;
    the runs that copy the worker's environment afterwards are still forked, from a warm process started again."""
    (tmp_path / "quiet.py").write_text("import os\nprint(os.environ['LD_LIBRARY_PATH'])\n")
    warm_start.STARTER.run([sys.executable, "-c", "pass"], dict(os.environ), tmp_path, timeout=60)
    before = warm_start.STARTER.pid
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "lib64"))
    forked = warm_start.STARTER.run([sys.executable, "-m", "quiet"], dict(os.environ), tmp_path, timeout=60)
    assert forked is not None and forked.stdout == f"{tmp_path / 'lib64'}\n", forked
    assert warm_start.STARTER.pid not in (None, before)
