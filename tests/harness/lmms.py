"""Run the real ``lmms-eval`` / ``scifig`` command lines in a subprocess and read their results files.

The lmms-eval CLI exits 0 even when a task is missing or scoring raised, so callers read the results JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import warm_start

CLI_TIMEOUT_S = 600


@dataclass
class CliRun:
    returncode: int
    output: str
    output_path: Path

    def results(self) -> dict[str, Any]:
        files = sorted(self.output_path.rglob("*_results.json"))
        assert files, f"no results JSON under {self.output_path}; output tail:\n{self.output[-4000:]}"
        return json.loads(files[-1].read_text())

    def samples(self, task: str) -> list[dict[str, Any]]:
        files = sorted(self.output_path.rglob(f"*_samples_{task}.jsonl"))
        assert files, f"no samples for {task} under {self.output_path}"
        return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]


def _executable(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed in this environment"
    return found


def run(command: str, args: list[str], env: dict[str, str], output_path: Path) -> CliRun:
    """Run ``lmms-eval`` or ``scifig`` with ``args`` plus ``--output_path``; return exit code, output and results."""
    full = [_executable(command), *args, "--output_path", str(output_path)]
    completed = warm_start.run(full, env, timeout=CLI_TIMEOUT_S)
    return CliRun(completed.returncode, completed.stdout + completed.stderr, output_path)


def scifig(args: list[str], env: Mapping[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``scifig ARGS`` (this interpreter's ``-m scifig_tasks.commands.main``) in ``cwd``; output captured."""
    return warm_start.run([sys.executable, "-m", "scifig_tasks.commands.main", *args], env, cwd, CLI_TIMEOUT_S)


def offline_env(workdir: Path) -> dict[str, str]:
    """An offline environment for CLI subprocesses: no hub access, private HF caches, no inherited keys, no judge
    audit (``tests/core/test_judge_audit.py`` switches it on)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "SCIFIG_"))}
    env.update(
        {
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "HF_DATASETS_CACHE": str(workdir / "hf-datasets"),
            "SCIFIG_JUDGE_CACHE": str(workdir / "judge-cache"),
            "SCIFIG_JUDGE_AUDIT": "0",  # tests that count judge calls see no audit calls; the audit test sets it
            "TOKENIZERS_PARALLELISM": "false",
            "WANDB_MODE": "disabled",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    return env


@pytest.fixture
def lmms_env(tmp_path: Path) -> dict[str, str]:
    return offline_env(tmp_path)


@pytest.fixture
def run_cli() -> Any:
    return run


def served_env(base: Mapping[str, str], model_url: str, judge_url: str, **extra: str) -> dict[str, str]:
    """``base`` (an :func:`offline_env`) with a local model server and a local judge configured, plus ``extra``."""
    return {
        **base,
        "OPENAI_API_BASE": model_url,
        "OPENAI_API_KEY": "sk-test",
        "SCIFIG_JUDGE_BASE_URL": judge_url,
        "SCIFIG_JUDGE_MODEL": "fake-judge",
        **extra,
    }
