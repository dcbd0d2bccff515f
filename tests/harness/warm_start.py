"""Run command lines in processes forked from one that has already imported torch, torchvision and numpy's stack.

Every ``scifig``, ``lmms-eval`` and ``scifig vlmeval`` command line of the suite spends about five seconds importing
torch, torchvision (which imports ``torch._dynamo``), numpy, pandas, pyarrow and scipy before its own work, and the
suite runs a few hundred of them. So each pytest worker starts one *warm* process that imports them once, and every
command line is a fork of it: a real, separate process with its own argv, environment, working directory,
``sys.path``, ``__main__`` module, stdin (``/dev/null``), output files and exit code, whose interpreter exits normally
(``atexit`` handlers run, non-daemon threads are waited for). Forking after these imports is what Linux's default
``multiprocessing`` start method does every day.

A fork is only used where it starts the command line as a fresh interpreter would (:meth:`WarmStarter.run`):

* the command is this interpreter with ``-m MODULE`` or ``-c CODE`` (no other interpreter option), or a script whose
  first line is ``#!`` and this interpreter (a console script of this environment, ``scifig`` or ``lmms-eval``);
* the request's environment holds the warm process's values of every variable the pre-imports read when they were
  imported (measured as they import: torch's ``TORCH*`` settings, ``HOME``, ``XDG_CACHE_HOME``, ``OMP_NUM_THREADS``,
  ...) and of every variable an interpreter reads when it starts (``PYTHON*``, the locale's ``LANG``/``LC_*``,
  ``LD_*``, those of site's ``.pth`` files, tqdm's ``TQDM_*`` defaults taken from the whole environment), except
  those a fork applies again: ``PYTHONPATH`` (``sys.path`` is rebuilt), ``PYTHONDONTWRITEBYTECODE`` and the
  temporary folder's ``TMPDIR``, ``TEMP``, ``TMP``;
* no folder the run's ``sys.path`` gains (its working folder for ``-m`` and ``-c``, its script's folder, a folder
  ``PYTHONPATH`` adds) holds a module or package named as one the warm process imported (a fresh interpreter would
  import that one) or a ``sitecustomize``.

Anything else runs in a fresh interpreter (``subprocess.run``), as does everything when ``SCIFIG_TEST_COLD_START=1``
(to rule the warm start out when a test fails). ``tests/project/test_warm_start.py`` holds a forked run to a cold one.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import gc
import importlib
import importlib.machinery
import io
import json
import locale
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

PREIMPORTED = ("numpy", "pandas", "pyarrow", "scipy.stats", "PIL.Image", "torch", "torchvision")

BASE_ENV = dict(os.environ)
"""The warm process's environment: this worker's when the suite was collected, before any test changed it."""

START_VARIABLES = frozenset(
    {"LANG", "LANGUAGE", "COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG", "SETUPTOOLS_USE_DISTUTILS"}
)
START_PREFIXES = ("PYTHON", "LC_", "LD_", "TQDM_")
"""Read when an interpreter starts (its options, ``sys.path``, the locale and the standard streams; the dynamic
linker; the ``.pth`` files of site-packages), or taken from the whole environment by a pre-imported module (tqdm)."""

APPLIED_AGAIN = frozenset({"PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "TMPDIR", "TEMP", "TMP"})
"""Read at start or by the pre-imports, and applied again in each fork (``sys.path``, ``sys.dont_write_bytecode``,
``tempfile``'s folder)."""

ROOT = Path(__file__).resolve().parents[2]


class WarmStarter:
    """One warm process per pytest worker; :meth:`run` forks it for one command line."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._base: dict[str, str] = BASE_ENV
        self._read: frozenset[str] = frozenset()
        self._modules: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The warm process's id while it runs (the parent of every forked run)."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def _start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.harness.warm_start"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env=self._base,
            )
            line = self._process.stdout.readline()
            try:
                ready = json.loads(line)
            except ValueError:
                ready = None
            if not isinstance(ready, dict):
                self._process.kill()
                raise RuntimeError(
                    f"the warm process did not start (run `python -m tests.harness.warm_start`): {line!r}"
                )
            self._read, self._modules = frozenset(ready["read"]), frozenset(ready["modules"])
            atexit.register(self.close)
        return self._process

    def close(self) -> None:
        """End the warm process (it ends at the end of its input) and wait for it, as the worker ends."""
        if self._process is not None and self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike | None, timeout: float
    ) -> subprocess.CompletedProcess | None:
        """Run ``argv`` forked from the warm process; None when a fork would not start it as a fresh interpreter."""
        argv = [os.fspath(arg) for arg in argv]
        env = {os.fspath(name): os.fspath(value) for name, value in env.items()}
        command = _python_command(argv, env, cwd)
        if command is None:
            return None
        folder = os.path.abspath(cwd if cwd is not None else os.getcwd())
        with self._lock:
            process = self._start()
            if not self._starts_alike(command, env, folder) and self._drifted():
                # the worker's own environment changed for good (importing VLMEvalKit in process sets LD_LIBRARY_PATH
                # and TORCHINDUCTOR_CACHE_DIR): a warm process started from it again serves the runs that copy it
                self.close()
                self._base = dict(os.environ)
                process = self._start()
            if not self._starts_alike(command, env, folder):
                return None
            with tempfile.TemporaryDirectory(prefix="warm-start-") as files:
                out, err = Path(files, "stdout"), Path(files, "stderr")
                request = {"argv": command, "env": env, "cwd": folder, "out": str(out), "err": str(err)}
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                pid = _read_int(process)
                expired = threading.Event()
                timer = threading.Timer(timeout, _kill_group, (pid, expired))
                timer.start()
                try:
                    returncode = _read_int(process)
                except BaseException:  # interrupted mid-run: the run and the warm process go, the next run starts anew
                    _kill_group(pid, expired)
                    process.kill()
                    process.wait()
                    raise
                finally:
                    timer.cancel()
                completed = subprocess.CompletedProcess(argv, returncode, _decode(out), _decode(err))
        if expired.is_set():
            raise subprocess.TimeoutExpired(argv, timeout, completed.stdout, completed.stderr)
        return completed

    def _drifted(self) -> bool:
        """This worker's environment differs from the warm process's in a variable read at start or by the
        pre-imports."""
        return any(
            (name in self._read or name in START_VARIABLES or name.startswith(START_PREFIXES))
            and name not in APPLIED_AGAIN
            and os.environ.get(name) != self._base.get(name)
            for name in {*os.environ, *self._base}
        )

    def _starts_alike(self, argv: list[str], env: Mapping[str, str], cwd: str) -> bool:
        """``env`` holds the warm process's value of every variable read at start or by the pre-imports, and no
        folder the run's ``sys.path`` gains holds a module the warm process has imported."""
        for name in {*env, *self._base}:
            read = name in self._read or name in START_VARIABLES or name.startswith(START_PREFIXES)
            if read and name not in APPLIED_AGAIN and env.get(name) != self._base.get(name):
                return False
        known = self._base.get("PYTHONPATH", "").split(os.pathsep)
        added = [
            os.path.join(cwd, entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry not in known
        ]
        return not any(self._shadows(folder) for folder in [_first_path(argv, cwd), *added])

    def _shadows(self, folder: str) -> bool:
        """``folder`` holds a module or package the warm process has imported (a fresh interpreter would import
        that one), or a ``sitecustomize`` (run when an interpreter starts)."""
        if not os.path.isdir(folder):
            return False
        for item in os.scandir(folder):
            name, dot, suffix = item.name.partition(".")
            if name not in self._modules and name not in ("sitecustomize", "usercustomize"):
                continue
            if item.is_dir() and any(Path(item.path, "__init__" + end).exists() for end in _SUFFIXES):
                return True
            if item.is_file() and dot and "." + suffix in _SUFFIXES:
                return True
        return False


_SUFFIXES = frozenset(importlib.machinery.all_suffixes())


def _first_path(argv: list[str], cwd: str) -> str:
    """``sys.path[0]`` of ``argv``'s interpreter: the working folder for ``-m`` and ``-c``, else the script's."""
    if argv[0] == sys.executable:
        return cwd
    return os.path.dirname(os.path.realpath(os.path.join(cwd, argv[0])))


def _python_command(argv: list[str], env: Mapping[str, str], cwd: str | os.PathLike | None) -> list[str] | None:
    """``argv`` as its interpreter would see it (a command found on ``PATH`` by its path), or None when ``argv`` is
    not this interpreter with ``-m MODULE`` or ``-c CODE`` or a script of this interpreter, or ``cwd`` is not a
    folder."""
    if cwd is not None and not os.path.isdir(cwd):
        return None
    if argv[0] == sys.executable:
        return argv if len(argv) > 2 and (argv[1] == "-c" or argv[1] == "-m" and argv[2][:1] != "-") else None
    if os.sep in argv[0]:
        script = os.path.join(cwd if cwd is not None else os.getcwd(), argv[0])
    else:
        script = shutil.which(argv[0], path=env.get("PATH", os.defpath))
        if script is None:
            return None
        argv = [script, *argv[1:]]
    try:
        with open(script, "rb") as file:
            first = file.readline(4096)
    except OSError:
        return None
    shebang = b"#!" + os.fsencode(sys.executable)
    return argv if first.rstrip(b"\r\n") == shebang and os.access(script, os.X_OK) else None


def _read_int(process: subprocess.Popen) -> int:
    line = process.stdout.readline()
    if not line.strip():
        raise RuntimeError(f"the warm process ended (exit code {process.wait()}); the next run starts a new one")
    return int(line)


def _kill_group(pid: int, expired: threading.Event) -> None:
    """At the deadline: kill the run and whatever it started (its own process group)."""
    expired.set()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _decode(path: Path) -> str:
    """As ``subprocess.run(..., text=True)`` reads a pipe: the locale's encoding, universal newlines."""
    text = path.read_bytes().decode("utf-8" if sys.flags.utf8_mode else locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


STARTER = WarmStarter()


def run(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Like ``subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=DEVNULL)``."""
    if os.environ.get("SCIFIG_TEST_COLD_START") != "1":
        completed = STARTER.run(argv, env, cwd, timeout)
        if completed is not None:
            return completed
    return subprocess.run(
        list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


# In the warm process.


def _import_reading(names: Sequence[str]) -> set[str]:
    """Import ``names``; return the environment variables read meanwhile (a walk over all of them not counted)."""
    environ_type = type(os.environ)
    getitem = environ_type.__getitem__
    read: set[str] = set()

    def recording(self: os._Environ, key: str) -> str:
        if sys._getframe(1).f_code.co_name != "__iter__":
            read.add(key)
        return getitem(self, key)

    environ_type.__getitem__ = recording
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        environ_type.__getitem__ = getitem
    return read


def _stream(fd: int, like: io.TextIOWrapper, name: str) -> io.TextIOWrapper:
    """A standard stream on ``fd`` made as this interpreter made ``like`` (the same variables chose both)."""
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    raw.name = name
    if fd == 0:
        buffer: io.RawIOBase | io.BufferedIOBase = io.BufferedReader(raw)
    else:
        buffer = raw if isinstance(like.buffer, io.RawIOBase) else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(
        buffer, like.encoding, like.errors, line_buffering=like.line_buffering, write_through=like.write_through
    )
    stream.mode = "r" if fd == 0 else "w"
    return stream


def _python_path(value: str, start: list[str], known: str) -> list[str]:
    """``sys.path`` past its first entry as an interpreter starting with ``PYTHONPATH=value`` builds it (site makes
    each entry absolute and drops repeats); ``start`` was built with ``PYTHONPATH=known``."""
    own = len(dict.fromkeys(os.path.abspath(folder) for folder in known.split(os.pathsep))) if known else 0
    path = [os.path.abspath(folder) for folder in value.split(os.pathsep)] if value else []
    return list(dict.fromkeys([*path, *start[1 + own :]]))


def _child(request: dict[str, Any], start_path: list[str]) -> NoReturn:
    """In the forked process: become the command line of ``request``, as a fresh interpreter would run it."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((0, os.devnull), (1, request["out"]), (2, request["err"])):
        opened = os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = sys.__stdin__ = _stream(0, sys.__stdin__, "<stdin>")
    sys.stdout = sys.__stdout__ = _stream(1, sys.__stdout__, "<stdout>")
    sys.stderr = sys.__stderr__ = _stream(2, sys.__stderr__, "<stderr>")
    tempfile.tempdir = None  # TMPDIR is read again
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    for name in [name for name in sys.modules if name == "tests" or name.startswith("tests.")]:
        del sys.modules[name]  # imported from the warm process's folder, not the run's
    importlib.invalidate_caches()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()  # numpy's global generator was seeded once, in the warm process
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    argv = request["argv"]
    rest = _python_path(os.environ.get("PYTHONPATH", ""), start_path, BASE_ENV.get("PYTHONPATH", ""))
    warm_modules = set(sys.modules)
    status = _run(argv, main, rest)
    del main  # its objects are finalized with the run's modules
    _finish(status, warm_modules)


def _run(argv: list[str], main: types.ModuleType, rest: list[str]) -> int:
    """Run ``argv`` in ``main`` as the interpreter runs ``-m MODULE``, ``-c CODE`` or a script; return its exit
    status."""
    try:
        if argv[0] == sys.executable and argv[1] == "-c":
            sys.orig_argv = list(argv)
            sys.argv = ["-c", *argv[3:]]
            sys.path[:] = ["", *rest]
            main.__loader__ = importlib.machinery.BuiltinImporter
            exec(compile(argv[2], "<string>", "exec", dont_inherit=True), main.__dict__)
        elif argv[0] == sys.executable:
            import runpy

            sys.orig_argv = list(argv)
            sys.argv = ["-m", *argv[3:]]
            sys.path[:] = [os.getcwd(), *rest]
            runpy._run_module_as_main(argv[2], alter_argv=True)
        else:
            sys.orig_argv = [sys.executable, *argv]
            sys.argv = list(argv)
            sys.path[:] = [os.path.dirname(os.path.realpath(argv[0])), *rest]
            filename = os.path.abspath(argv[0])
            main.__file__, main.__cached__ = filename, None
            main.__loader__ = importlib.machinery.SourceFileLoader("__main__", filename)
            with io.open_code(filename) as file:
                code = compile(file.read(), filename, "exec", dont_inherit=True)
            exec(code, main.__dict__)
    except SystemExit as exit:  # as the interpreter reads it: None 0, a number itself, anything else printed, 1
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except BaseException as error:  # uncaught: its traceback from the run's first frame, as a fresh one prints it
        error = error.with_traceback(error.__traceback__.tb_next)
        sys.excepthook(type(error), error, error.__traceback__)
        return -signal.SIGINT if isinstance(error, KeyboardInterrupt) else 1
    return 0


def _finish(status: int, warm_modules: set[str]) -> NoReturn:
    """End as the interpreter ends (non-daemon threads waited for, ``atexit`` handlers, the run's objects finalized,
    the standard streams flushed), except that the warm process's modules are not torn down: torch's thousands of
    modules, which print or write nothing then, take a fresh interpreter over a second and a fork, whose every page
    is copied when written, several seconds."""
    threading._shutdown()
    atexit._run_exitfuncs()
    for name in [name for name in sys.modules if name not in warm_modules or name == "__main__"]:
        del sys.modules[name]
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if status == -signal.SIGINT:  # an uncaught KeyboardInterrupt ends a fresh interpreter by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status & 0xFF)


def main() -> None:
    read = _import_reading(PREIMPORTED)
    start_path = list(sys.path)
    gc.freeze()  # a fork's collections leave the pre-imported objects (and their pages) alone
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    modules = sorted({name.partition(".")[0] for name in sys.modules} - {"tests"})  # a fork imports tests again
    print(json.dumps({"read": sorted(read), "modules": modules}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, start_path)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
