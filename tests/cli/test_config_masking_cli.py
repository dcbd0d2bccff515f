"""``scifig config`` and ``scifig config --json`` show the credentials of a URL setting masked, through the real
command line: ``SCIFIG_JUDGE_BASE_URL`` and ``OPENAI_API_BASE`` with a user and password print their host and path,
never the password (before, both forms printed it whole). The masking is
:func:`scifig_tasks.core.secrets.mask_credentials`: the URL stays one word, ``http://<credential>@host/v1``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import warm_start
from tests.harness.lmms import CLI_TIMEOUT_S, offline_env

JUDGE_PASSWORD, OPENAI_PASSWORD = "judge-pass-31ad7c", "openai-pass-9b0e42"


def scifig(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "scifig_tasks.commands.main", *args]
    return warm_start.run(command, env, timeout=CLI_TIMEOUT_S)


def shown(table: str, name: str) -> str:
    """The value of setting ``name`` in ``scifig config``'s table: on its row, or whole on the line below when it is
    longer than its column."""
    lines = table.splitlines()
    (index,) = [number for number, line in enumerate(lines) if line.split()[:1] == [name]]
    cells = lines[index].split()
    return cells[1] if len(cells) == 3 else lines[index + 1].strip()


@pytest.mark.slow
@pytest.mark.cli
def test_config_masks_the_credentials_of_url_settings(tmp_path: Path) -> None:
    env = {
        **offline_env(tmp_path),
        "SCIFIG_JUDGE_BASE_URL": f"http://judge-user:{JUDGE_PASSWORD}@judge.example:8000/v1",
        "OPENAI_API_BASE": f"http://user:{OPENAI_PASSWORD}@models.example/v1",
    }
    judge, openai = "http://<credential>@judge.example:8000/v1", "http://<credential>@models.example/v1"

    table, listing = scifig(["config"], env), scifig(["config", "--json"], env)

    for done in (table, listing):
        assert done.returncode == 0, done.stderr[-3000:]
        output = done.stdout + done.stderr
        assert JUDGE_PASSWORD not in output and OPENAI_PASSWORD not in output
        assert "judge-user" not in output
    assert shown(table.stdout, "SCIFIG_JUDGE_BASE_URL") == judge
    assert shown(table.stdout, "OPENAI_API_BASE") == openai
    values = {entry["name"]: entry["value"] for entry in json.loads(listing.stdout)["settings"]}
    assert (values["SCIFIG_JUDGE_BASE_URL"], values["OPENAI_API_BASE"]) == (judge, openai)


def test_doctor_masks_the_credentials_of_the_settings_it_prints(tmp_path: Path) -> None:
    """``scifig doctor``'s data and settings lines, in process (the command itself imports both frameworks):
    a data setting written as a URL with a password, and a value that does not parse quoting one."""
    from scifig_tasks.commands.doctor import Probe, check_data, check_settings

    environ = {
        "SCIFIG_JUDGE": "off",
        "SCIFIG_GRAB_DATA": f"http://user:{OPENAI_PASSWORD}@data.example/grab",
        "SCIFIG_JUDGE_MAX_CONCURRENCY": f"http://user:{JUDGE_PASSWORD}@judge.example/v1",
    }
    probe = Probe(hub_cache=lambda: tmp_path / "hub", environ=environ)
    lines = [check.detail for check in [*check_data(probe), *check_settings(probe)]]
    assert any("SCIFIG_GRAB_DATA=http://<" in line for line in lines), lines
    assert any("SCIFIG_JUDGE_MAX_CONCURRENCY" in line for line in lines), lines
    assert not [line for line in lines if OPENAI_PASSWORD in line or JUDGE_PASSWORD in line], lines
