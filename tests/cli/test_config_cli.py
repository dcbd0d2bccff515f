"""``scifig config``: one row per setting (name, value shown whole, source) in 100 columns, a secret never printed (only
``<set>`` / ``<unset>``), ``--json`` for machines, bad values and unknown variables listed, exit status 1 on a bad
value. The command is registered on a parser exactly as the ``scifig`` parser registers its command modules."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from scifig_tasks.commands import config as config_cli
from scifig_tasks.core import registry, settings
from scifig_tasks.core.settings import DECLARED

KEY = "sk-config-secret-0123456789abcdef"


def scifig_config(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="scifig")
    config_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["config", *argv])
    status = args.handler(args)
    return status, capsys.readouterr().out


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in config_cli.listed():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SCIFIG_JUDGE_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY[::-1])
    monkeypatch.setenv("SCIFIG_JUDGE_MODEL", "judge-model")
    long = tmp_path / ("a-very-long-folder-name-" * 6) / "grab"
    monkeypatch.setenv("SCIFIG_GRAB_DATA", str(long))
    return long


def test_one_line_per_setting_its_source_and_never_the_key(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = scifig_config([], capsys)
    assert status == 0
    assert KEY not in out and KEY[::-1] not in out
    lines = out.splitlines()
    below = lines[lines.index(next(line for line in lines if line.startswith("SCIFIG_GRAB_DATA "))) + 1]
    assert below.strip() == str(environment) and below.startswith(" ")  # longer than its column: whole, below
    assert all(len(line) <= config_cli.WIDTH for line in lines if str(environment) not in line)
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:] if not line.startswith(" ")}
    data = [source.env_var for source in registry.sources().values()]
    declared = [*DECLARED, *dict.fromkeys(data), *settings.benchmark_settings()]
    assert list(rows) == declared  # scifig's settings, each source's data setting, the benchmarks' own settings
    assert "SCIFIG_GRAB_REVISION" in rows and "SCIFIG_MMSCI_JUDGED_SUBSET" in rows  # declared by their benchmarks
    assert rows["SCIFIG_JUDGE_API_KEY"] == ["<set>", "environment"]
    assert rows["OPENAI_API_KEY"] == ["<set>", "environment"]
    assert rows["SCIFIG_JUDGE_MODEL"] == ["judge-model", "environment"]
    assert rows["SCIFIG_JUDGE_AUDIT"] == ["0.05", "default"]
    assert rows["SCIFIG_PROTOCOL"][-2:] == ["default", "deprecated"]
    assert rows["SCIFIG_GRAB_DATA"] == ["environment"]  # its value on the next line
    assert "…" not in out


def test_json_for_machines_and_never_the_key(environment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = scifig_config(["--json"], capsys)
    assert status == 0 and KEY not in out and KEY[::-1] not in out
    entries = {entry["name"]: entry for entry in json.loads(out)["settings"]}
    assert entries["SCIFIG_JUDGE_API_KEY"] | {"doc": ""} == {
        "name": "SCIFIG_JUDGE_API_KEY",
        "group": "judge",
        "source": "environment",
        "secret": True,
        "value": None,
        "set": True,
        "default": "the preset's api_key_env, else OPENAI_API_KEY",
        "accepts": "a non-empty string",
        "doc": "",
    }
    assert entries["SCIFIG_GRAB_DATA"]["value"] == str(environment)  # whole, unlike the table
    assert entries["SCIFIG_JUDGE_MAX_CONCURRENCY"]["value"] == 8
    assert entries["SCIFIG_MMSCI_PROTOCOL"]["deprecated"].startswith("use the task name")


def test_a_bad_value_and_an_unknown_variable_are_listed_and_a_bad_value_exits_1(
    environment: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SCIFIG_JUDGE_MAX_RETRIES", "often")
    monkeypatch.setenv("SCIFIG_JUDGE_MODLE", "m")
    status, out = scifig_config([], capsys)
    assert status == 1 and KEY not in out
    lines = out.splitlines()
    assert "SCIFIG_JUDGE_MAX_RETRIES='often': set an integer >= 0" in lines
    assert "SCIFIG_JUDGE_MODLE is not a scifig setting and is ignored (did you mean SCIFIG_JUDGE_MODEL?)" in lines
    assert all(len(line) <= config_cli.WIDTH for line in lines if str(environment) not in line)
    status, out = scifig_config(["--json"], capsys)
    document = json.loads(out)
    assert status == 1
    assert document["unknown"] == [{"name": "SCIFIG_JUDGE_MODLE", "did_you_mean": "SCIFIG_JUDGE_MODEL"}]
    (retries,) = [entry for entry in document["settings"] if entry["name"] == "SCIFIG_JUDGE_MAX_RETRIES"]
    assert retries["error"] == "SCIFIG_JUDGE_MAX_RETRIES='often': set an integer >= 0"
