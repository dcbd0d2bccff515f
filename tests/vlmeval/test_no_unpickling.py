"""scifig never unpickles a file it was handed: loading a pickle runs whatever code it names.

* No module of the package (``scifig_tasks``, ``curation``, ``finetune``) calls an unpickler: an AST scan of every
  module (no pickle modules imported, no ``read_pickle``, ``torch.load`` only with ``weights_only=True``,
  ``numpy.load`` never with ``allow_pickle=True``), and the scan shown to catch each form.
* ``scifig rescore`` refuses a prediction file that is a pickle and has no TSV, xlsx or JSON twin, in one line; a
  ``scifig vlmeval`` whose work dir holds a pickle that would run code when VLMEvalKit loads it refuses to start. Both
  through the real command lines, with a harmless payload that writes a marker file when loaded.
* Masking a secret in a pickle reads its opcodes, never loads it (:mod:`scifig_tasks.core.pickle_files`).
"""

from __future__ import annotations

import ast
import io
import pickle
import re
import subprocess
from pathlib import Path

import pytest

from scifig_tasks.core import pickle_files
from scifig_tasks.core.secrets import mask_file
from tests.harness.lmms import offline_env, scifig
from tests.harness.paths import REPO

PACKAGES = ("scifig_tasks", "curation", "finetune")
UNPICKLING_MODULES = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "joblib", "shelve", "jsonpickle"}
"""Modules whose use means reading or writing pickles: none is imported."""
UNPICKLING_NAMES = {"read_pickle", "Unpickler", "unsafe_load"}
"""Functions and classes that load a pickle (or run code from a file) whatever they are called on."""
MAY_UNPICKLE = re.compile("|".join([*UNPICKLING_MODULES, *UNPICKLING_NAMES, r"\.load\(", "import load"]))
"""Text that every finding of :func:`unpickling_calls` contains."""
SECRET = "sk-payload-0123456789abcdef"


class Payload:
    """A pickle of this writes ``marker`` when it is loaded (and does nothing else)."""

    def __init__(self, marker: Path, note: str = "loaded") -> None:
        self.marker, self.note = marker, note

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return Path.write_text, (self.marker, self.note)


def payload(path: Path, marker: Path, note: str = "loaded") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(Payload(marker, note)))
    return path


# ---- no module calls an unpickler ----------------------------------------------------------------------------------


def _keyword(call: ast.Call, name: str) -> object:
    """The constant value of keyword ``name`` of ``call`` (``None`` when absent or not a constant)."""
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def unpickling_calls(source: str, filename: str) -> list[str]:
    """``file:line: what`` for every import of a pickle module and every call that may load a pickle in ``source``."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}  # local name -> module, for ``import torch as t``
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name
                if alias.name.split(".")[0] in UNPICKLING_MODULES:
                    found.append(f"{filename}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            names = {alias.name for alias in node.names}
            loads = root in ("torch", "joblib") and "load" in names
            if root in UNPICKLING_MODULES or names & UNPICKLING_NAMES or loads:
                found.append(f"{filename}:{node.lineno}: from {node.module} import {', '.join(sorted(names))}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attribute, owner = node.func.attr, node.func.value
            module = aliases.get(owner.id, owner.id) if isinstance(owner, ast.Name) else ""
            if attribute in UNPICKLING_NAMES:
                found.append(f"{filename}:{node.lineno}: .{attribute}(...)")
            elif attribute == "load" and module == "torch" and _keyword(node, "weights_only") is not True:
                found.append(f"{filename}:{node.lineno}: torch.load without weights_only=True")
            elif attribute == "load" and module == "numpy" and _keyword(node, "allow_pickle") is True:
                found.append(f"{filename}:{node.lineno}: numpy.load(allow_pickle=True)")
            elif attribute in ("load", "loads") and module in UNPICKLING_MODULES:
                found.append(f"{filename}:{node.lineno}: {module}.{attribute}")
    return found


def test_no_module_calls_an_unpickler() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if MAY_UNPICKLE.search(source):  # only a module that names one of them is parsed
                found += unpickling_calls(source, str(path.relative_to(REPO)))
    assert found == []


def test_the_scan_finds_every_way_to_unpickle() -> None:
    forbidden = {
        "import pickle": "import pickle",
        "import cloudpickle as cp": "import cloudpickle",
        "from dill import loads": "from dill import loads",
        "from pandas import read_pickle": "from pandas import read_pickle",
        "import pandas as pd\npd.read_pickle(p)": ".read_pickle(...)",
        "frame = table.read_pickle(p)": ".read_pickle(...)",
        "import torch\ntorch.load(p)": "torch.load without weights_only=True",
        "import torch as t\nt.load(p, weights_only=False)": "torch.load without weights_only=True",
        "from torch import load": "from torch import load",
        "import joblib\njoblib.load(p)": "joblib.load",
        "import numpy as np\nnp.load(p, allow_pickle=True)": "numpy.load(allow_pickle=True)",
        "import yaml\nyaml.unsafe_load(text)": ".unsafe_load(...)",
    }
    for source, what in forbidden.items():
        assert MAY_UNPICKLE.search(source) and any(f.endswith(what) for f in unpickling_calls(source, "m.py")), source
    allowed = "import torch\nimport numpy as np\ntorch.load(p, weights_only=True)\nnp.load(p)\nimport pickletools"
    assert unpickling_calls(allowed, "m.py") == []


# ---- the pickle rules, in process ----------------------------------------------------------------------------------


def test_a_pickle_of_plain_data_is_told_from_one_that_runs_code(tmp_path: Path) -> None:
    import pandas as pd

    checkpoint = {"0": "A", "1": "Failed to obtain answer via API.", "2": "-3"}  # VLMEvalKit's: replies by index
    assert pickle_files.code_in_pickle(pickle.dumps(checkpoint)) is None
    assert pickle_files.code_in_pickle(pickle.dumps([1, 2.5, None, (True, b"x"), {"s"}])) is None
    assert pickle_files.code_in_pickle(pickle.dumps([1, "x", {"k": None}], protocol=0)) is None
    marker = tmp_path / "marker"
    assert pickle_files.code_in_pickle(pickle.dumps(Payload(marker))) == "it names pathlib Path.write_text"
    assert pickle_files.code_in_pickle(pickle.dumps(Payload(marker), protocol=0)) == "it names __builtin__ getattr"
    frame = pickle_files.code_in_pickle(pickle.dumps(pd.DataFrame({"index": [0]})))
    assert frame is not None and frame.startswith("it names pandas")
    assert pickle_files.code_in_pickle(b"not a pickle") == "it is not a readable pickle"
    assert not marker.exists()


def test_masking_a_pickle_rewrites_its_strings_without_loading_it(tmp_path: Path, capsys) -> None:
    import pandas as pd

    secrets = {SECRET: "<OPENAI_API_KEY>"}
    checkpoint = tmp_path / "fake_grab_checkpoint.pkl"
    checkpoint.write_bytes(pickle.dumps({"0": f"15 (session {SECRET})", "1": "C"}))
    table = tmp_path / "fake_grab_supp.pkl"
    pd.DataFrame({"index": [0, 1], "prediction": [f"A {SECRET}", "ünïcode"]}, dtype=object).to_pickle(table)
    arrow = tmp_path / "fake_grab_arrow.pkl"  # pandas' own string columns keep their text in Arrow buffers (bytes)
    pd.DataFrame({"index": [0], "prediction": [f"A {SECRET}"]}).to_pickle(arrow)
    marker = tmp_path / "marker"
    hostile = payload(tmp_path / "fake_grab.pkl", marker, note=f"key {SECRET}")
    in_bytes = tmp_path / "bytes.pkl"
    in_bytes.write_bytes(pickle.dumps({"0": SECRET.encode()}))

    assert [mask_file(path, secrets) for path in (checkpoint, table, hostile, arrow, in_bytes)] == [True] * 5

    assert not marker.exists()  # the payload's string was masked where it lies: nothing was loaded
    assert SECRET.encode() not in hostile.read_bytes() and b"key <OPENAI_API_KEY>" in hostile.read_bytes()
    assert pickle.loads(checkpoint.read_bytes()) == {"0": "15 (session <OPENAI_API_KEY>)", "1": "C"}
    assert pd.read_pickle(table)["prediction"].tolist() == ["A <OPENAI_API_KEY>", "ünïcode"]
    assert not arrow.exists() and not in_bytes.exists()  # a secret in bytes cannot be masked without loading
    said = capsys.readouterr().err.splitlines()
    assert said == [pickle_files.removed_line(arrow), pickle_files.removed_line(in_bytes)]


def test_a_masked_pickle_keeps_every_opcode_but_the_strings() -> None:
    value = {"a" * 300: ["x", "y" * 70000, {"k": ("sk", 1)}], "b": b"raw", "c": 1.5}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(value, protocol=protocol)
        masked = pickle_files.masked_pickle(data, lambda text: text.replace("y", "z"))
        assert masked is not None
        expected = {"a" * 300: ["x", "z" * 70000, {"k": ("sk", 1)}], "b": b"raw", "c": 1.5}
        assert pickle.load(io.BytesIO(masked)) == expected, protocol


# ---- through the command lines -------------------------------------------------------------------------------------


def _scifig(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    import time

    started = time.monotonic()
    return scifig(args, env, cwd), time.monotonic() - started


@pytest.fixture(scope="module")
def grab_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An offline environment with a small GRAB set (as a run handed over with its data would have)."""
    from tests.harness.grab_data import sample

    root = tmp_path_factory.mktemp("grab")
    return offline_env(root) | sample(root) | {"LMUData": str(root / "LMUData")}


@pytest.mark.slow  # a scifig command line
@pytest.mark.cli
def test_rescore_refuses_a_pickle_that_is_the_only_copy_of_the_predictions(
    tmp_path: Path, grab_env: dict[str, str]
) -> None:
    marker = tmp_path / "marker"
    predictions = payload(tmp_path / "handed" / "fake" / "fake_grab.pkl", marker)

    done, seconds = _scifig(["rescore", str(tmp_path / "handed"), "--out", str(tmp_path / "out")], grab_env, tmp_path)

    print(f"scifig rescore: exit {done.returncode} in {seconds:.1f} s")
    assert not marker.exists(), "the pickle was loaded"
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert done.stderr.splitlines()[-1] == (
        f"scifig rescore: REFUSED: {predictions}: a pickle, the only copy of these predictions; "
        f"{pickle_files.NOT_LOADED}: {pickle_files.PREDICTIONS_TODO}"
    )


@pytest.mark.slow  # a scifig command line
@pytest.mark.cli
def test_vlmeval_refuses_a_work_dir_holding_a_pickle_that_runs_code(tmp_path: Path, grab_env: dict[str, str]) -> None:
    marker = tmp_path / "marker"
    planted = payload(tmp_path / "work" / "scifig_chance" / "scifig_chance_grab.pkl", marker)
    command = ["vlmeval", "--model", "scifig_chance", "--data", "grab", "--work-dir", str(tmp_path / "work")]

    done, seconds = _scifig(command, grab_env, tmp_path)

    print(f"scifig vlmeval: exit {done.returncode} in {seconds:.1f} s")
    assert not marker.exists(), "the pickle was loaded"
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    assert done.stderr.splitlines()[-1] == (
        f"scifig vlmeval: {planted}: a pickle that runs code when loaded (it names pathlib Path.write_text); "
        f"VLMEvalKit loads the pickles of its work dir, and {pickle_files.NOT_LOADED} — {pickle_files.WORK_DIR_TODO}"
    )
    assert not (tmp_path / "work" / "scifig_chance" / "scifig_chance_grab.tsv").exists()  # refused before the run
