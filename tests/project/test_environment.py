"""The environment is part of the product: ``.ci/requirements.lock`` agrees with pyproject's ranges, ``.ci/setup``
installed exactly it, known-bad releases are excluded for plain ``pip install`` users too, the one overridden pin
(antlr4 for latex2sympy2) touches nothing scifig imports, and every results file says what made it
(:mod:`scifig_tasks.core.provenance`)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

from scifig_tasks.commands.doctor import extras_of, installed_distributions, locked_versions, normalise
from scifig_tasks.core import provenance
from tests.harness.paths import REPO

LOCK = REPO / ".ci" / "requirements.lock"
LOCKED_PLATFORM = {"python_version": "3.11", "sys_platform": "linux", "platform_machine": "x86_64"}
"""The platform ``.ci/refresh-lock`` resolves for (``--python-version 3.11 --python-platform x86_64-manylinux``)."""


def declared(pyproject: dict[str, Any]) -> list[tuple[str, Requirement]]:
    """``(where, requirement)`` for every requirement pyproject declares: core, each extra, the build system and
    the lock's constraints and overrides (``[tool.uv]``); self-references (``scifig[...]``) left out."""
    project = pyproject["project"]
    found = [("dependencies", line) for line in project["dependencies"]]
    found += [(f"extra {extra}", line) for extra, lines in project["optional-dependencies"].items() for line in lines]
    found += [("build-system", line) for line in pyproject["build-system"]["requires"]]
    uv = pyproject.get("tool", {}).get("uv", {})
    found += [
        (f"tool.uv {key}", line)
        for key in ("constraint-dependencies", "override-dependencies")
        for line in uv.get(key, [])
    ]
    requirements = [(where, Requirement(line)) for where, line in found]
    return [(where, req) for where, req in requirements if normalise(req.name) != project["name"]]


def lock_problems(pyproject: dict[str, Any], lock_text: str) -> list[str]:
    """Every declared requirement that applies on the locked platform must be in the lock, at a version inside its
    range; an empty list when pyproject and the lock agree."""
    locked = locked_versions(lock_text)
    problems = []
    for where, requirement in declared(pyproject):
        extras = extras_of(requirement)
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({**LOCKED_PLATFORM, "extra": extra}) for extra in extras
        ):
            continue
        version = locked.get(normalise(requirement.name))
        if version is None:
            problems.append(f"{requirement} ({where}) is not in the lock: run bash .ci/refresh-lock")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} in the lock is outside {requirement} ({where})")
    return problems


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_lock_agrees_with_pyproject(pyproject: dict[str, Any]) -> None:
    lock = LOCK.read_text(encoding="utf-8")
    assert lock_problems(pyproject, lock) == []
    # exact versions with hashes, and the command that refreshes it
    assert "bash .ci/refresh-lock" in lock.splitlines()[1]
    entries = re.findall(r"^[A-Za-z0-9][\w.-]*==\S+ \\\n((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", lock, re.M)
    assert len(entries) == len(locked_versions(lock)) > 200


def test_the_lock_check_finds_a_missing_dependency_and_a_version_out_of_range(pyproject: dict[str, Any]) -> None:
    lock = LOCK.read_text(encoding="utf-8")
    added = {**pyproject, "project": {**pyproject["project"], "dependencies": [*pyproject["project"]["dependencies"]]}}
    added["project"]["dependencies"].append("tabulate-not-locked>=1")
    assert lock_problems(added, lock) == [
        "tabulate-not-locked>=1 (dependencies) is not in the lock: run bash .ci/refresh-lock"
    ]
    filelock_4 = re.sub(r"^filelock==\S+", "filelock==4.3.1", lock, flags=re.M)
    assert lock_problems(pyproject, filelock_4) == [
        "filelock==4.3.1 in the lock is outside filelock<4,>=3.12 (dependencies)"
    ]
    # a requirement of another platform (decord has x86_64 wheels only) is not asked of the lock
    without_decord = re.sub(r"^decord==.*\n(    .*\n)*", "", lock, flags=re.M)
    assert "decord" in lock_problems(pyproject, without_decord)[0]
    arm = {
        **pyproject,
        "project": {**pyproject["project"], "dependencies": ['only-arm>=1; platform_machine == "aarch64"']},
    }
    assert not [problem for problem in lock_problems(arm, lock) if "only-arm" in problem]


def test_known_bad_releases_are_excluded_for_plain_pip_installs(pyproject: dict[str, Any]) -> None:
    """lmms-eval 0.7.3 imports ``filelock._api`` on every run; filelock 4 has no such module."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    (filelock,) = [Requirement(line) for line in pyproject["project"]["dependencies"] if line.startswith("filelock")]
    assert not filelock.specifier.contains("4.0.0") and filelock.specifier.contains("3.32.7")
    assert "filelock._api" in text.split('"filelock')[0].rsplit("\n", 2)[-2]  # the comment above says why
    overrides = pyproject["tool"]["uv"]["override-dependencies"]
    assert overrides == ["antlr4-python3-runtime==4.11.1"]


@pytest.mark.skipif(Path(sys.prefix).resolve() != (REPO / ".venv").resolve(), reason="runs in .ci/setup's .venv")
@pytest.mark.slow
@pytest.mark.cli
def test_setup_installed_exactly_the_lock() -> None:
    assert installed_distributions() == locked_versions(LOCK.read_text(encoding="utf-8"))
    # the one conflict pip sees is the overridden pin, nothing else
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    complaints = [line for line in check.stdout.splitlines() if line.strip()]
    assert complaints == [
        "latex2sympy2 1.9.1 has requirement antlr4-python3-runtime==4.7.2, but you have antlr4-python3-runtime 4.11.1."
    ]


@pytest.mark.slow
def test_no_scifig_code_path_imports_the_package_whose_pin_the_lock_overrides() -> None:
    """latex2sympy2 (and its generated parser package ``gen``) cannot be imported with the locked antlr4 runtime;
    every scifig task hook, the VLMEvalKit datasets and lmms-eval's evaluator import without it (VLMEvalKit's own
    latex2sympy2_extended is generated for antlr4 4.11 and loads)."""
    modules = [
        f"scifig_tasks.benchmarks.{path.parent.parent.name}.tasks.utils"
        for path in (REPO / "scifig_tasks/benchmarks").glob("*/tasks/utils.py")
    ]
    code = f"""
import sys, importlib
for name in {modules!r} + ["scifig_tasks.vlmeval", "scifig_tasks.vlmeval.datasets", "lmms_eval.evaluator"]:
    importlib.import_module(name)
from scifig_tasks.vlmeval import register
register()
print(len({modules!r}), sorted(name for name in sys.modules if name.split(".")[0] in ("latex2sympy2", "gen")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "[]" and int(done.stdout.split()[-2]) == 5, done.stdout  # the five built-ins


# ---- the environment block -----------------------------------------------------------------------------------------


def test_environment_block_names_versions_and_the_judge_by_host_only() -> None:
    environ = {
        "SCIFIG_JUDGE_BASE_URL": "http://user:pa55word@127.0.0.1:8123/v1",
        "SCIFIG_JUDGE_MODEL": "judge-model",
        "SCIFIG_JUDGE_API_KEY": "sk-secret-judge-key",
    }
    block = provenance.environment("lmms-eval", environ)
    assert block["judge"] == {"model": "judge-model", "host": "127.0.0.1:8123"}
    assert "pa55word" not in repr(block) and "sk-secret" not in repr(block) and "user" not in repr(block["judge"])
    assert block["scifig"]["version"] == provenance.scifig_version()
    libraries = block["libraries"]
    for name in ("lmms-eval", "datasets", "transformers", "openai", "numpy", "pillow", "sacrebleu", "rouge-score"):
        assert Version(libraries[name]) == Version(installed_distributions()[normalise(name)]), name
    assert "ms-vlmeval" not in libraries and "ms-vlmeval" in provenance.environment("vlmeval", {})["libraries"]
    assert provenance.environment(None, {"SCIFIG_JUDGE": "off"})["judge"] is None
    commit, _ = provenance.checkout()
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}", commit)


def test_environment_differences_name_each_changed_version() -> None:
    recorded = provenance.environment("lmms-eval", {})
    current = {**recorded, "libraries": {**recorded["libraries"], "numpy": "9.9.9", "extra-lib": "1.0"}}
    del current["libraries"]["datasets"]
    current["judge"] = {"model": "m", "host": "h"}
    assert provenance.differences(recorded, current) == [
        f"datasets {recorded['libraries']['datasets']} -> absent",
        f"numpy {recorded['libraries']['numpy']} -> 9.9.9",
        "judge none -> m at h",
        "extra-lib absent -> 1.0",
    ]
    assert provenance.differences(recorded, recorded) == []
    from scifig_tasks.rescore_report import environment_changes

    assert environment_changes(None, recorded) == [provenance.NOT_RECORDED]


@pytest.mark.slow
@pytest.mark.cli
def test_one_version_source() -> None:
    import scifig_tasks

    assert "version" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dynamic"]
    assert importlib.metadata.version("scifig") == scifig_tasks.__version__
    done = subprocess.run([str(Path(sys.executable).parent / "scifig"), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"scifig {scifig_tasks.__version__}"), done
