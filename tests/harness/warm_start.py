"""Run command lines in processes forked from one that has already imported torch, torchvision and numpy's stack.

Every ``scifig``, ``lmms-eval`` and ``scifig vlmeval`` command line of the suite spends about five seconds importing
torch, torchvision (which imports ``torch._dynamo``), numpy, pandas, pyarrow and scipy before its own work, and the
suite runs a few hundred of them. None of those modules reads the environment variables the tests set (the Hugging
Face, scifig, OpenAI and VLMEvalKit ones: ``huggingface_hub``, ``transformers``, ``datasets``, ``nltk`` and the
frameworks themselves, which do read them when imported, are left to each run). So each pytest worker starts one
*warm* process that imports them once, and every command line is a fork of it: a real, separate process with its own
argv, environment, working directory, stdin (``/dev/null``), output files and exit code, whose interpreter exits
normally (``atexit`` handlers run). Forking after these imports is what Linux's default ``multiprocessing`` start
method does every day.

``SCIFIG_TEST_COLD_START=1`` runs every command line in a fresh interpreter instead (to rule the warm start out when
a test fails).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

PREIMPORTED = ("numpy", "pandas", "pyarrow", "scipy.stats", "PIL.Image", "torch", "torchvision")


class WarmStarter:
    """One warm process per pytest worker; :meth:`run` forks it for one command line."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.harness.warm_start"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=Path(__file__).resolve().parents[2],
            )
            ready = self._process.stdout.readline()
            assert ready.strip() == "ready", f"the warm process did not start: {ready!r}"
        return self._process

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | None, timeout: float
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` (``argv[0]`` a console script of this environment, or this interpreter with ``-m MODULE``)."""
        with self._lock, tempfile.TemporaryDirectory(prefix="warm-start-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            process = self._start()
            request = {"argv": list(argv), "env": dict(env), "cwd": str(cwd or Path.cwd()), "out": str(out)}
            process.stdin.write(json.dumps({**request, "err": str(err)}) + "\n")
            process.stdin.flush()
            pid = int(process.stdout.readline())
            timer = threading.Timer(timeout, os.kill, (pid, signal.SIGKILL))
            timer.start()
            try:
                returncode = int(process.stdout.readline())
            finally:
                timer.cancel()
            read = lambda path: path.read_bytes().decode("utf-8", errors="replace")  # noqa: E731
            completed = subprocess.CompletedProcess(list(argv), returncode, read(out), read(err))
        if returncode == -signal.SIGKILL and not timer.is_alive():
            raise subprocess.TimeoutExpired(list(argv), timeout, completed.stdout, completed.stderr)
        return completed


STARTER = WarmStarter()


def run(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=DEVNULL)``."""
    if os.environ.get("SCIFIG_TEST_COLD_START") == "1" or not _warm_startable(argv):
        return subprocess.run(
            list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    return STARTER.run(argv, env, cwd, timeout)


def _warm_startable(argv: Sequence[str]) -> bool:
    """This interpreter with ``-m``, or a Python console script of this environment."""
    if argv[0] == sys.executable:
        return len(argv) > 2 and argv[1] == "-m"
    script = Path(argv[0])
    shebang = b"#!" + sys.executable.encode()
    return script.parent == Path(sys.executable).parent and script.read_bytes().startswith(shebang)


def _child(request: dict) -> None:
    """In the forked process: become the command line of ``request`` (this never returns)."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # TMPDIR is read again
    for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, request["out"], os.O_WRONLY | os.O_CREAT)):
        os.dup2(os.open(path, mode), fd)
    os.dup2(os.open(request["err"], os.O_WRONLY | os.O_CREAT), 2)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
    argv = request["argv"]
    import runpy

    if argv[0] == sys.executable and argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        sys.path[0] = request["cwd"]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path[0] = str(Path(argv[0]).parent)
        runpy.run_path(argv[0], run_name="__main__")
    sys.exit(0)


def main() -> None:
    import importlib

    for name in PREIMPORTED:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    print("ready", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
