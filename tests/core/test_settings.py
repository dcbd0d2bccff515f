"""Settings (:mod:`scifig_tasks.core.settings`): every ``SCIFIG_*`` variable declared once, typed values with their
defaults and sources, one-line errors naming the variable and what it accepts, unknown variables named with the
closest setting, the process's value rebuilt only when the environment changes, and the judge built from a
:class:`Settings` value with no environment at all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scifig_tasks.benchmarks.mmsci import captioning_settings
from scifig_tasks.core import registry, settings
from scifig_tasks.core.judge import JudgeConfig, get_judge
from scifig_tasks.core.settings import DECLARED, SettingError, Settings
from tests.harness import benchmarks
from tests.harness.paths import REPO

KEY = "sk-settings-secret-0123456789"


def test_every_scifig_variable_the_package_reads_is_declared() -> None:
    sources = [*(REPO / "scifig_tasks").rglob("*.py"), *(REPO / "curation").rglob("*.py")]
    found = {name for path in sources for name in re.findall(r"\bSCIFIG_[A-Z0-9_]*[A-Z0-9]\b", path.read_text())}
    assert found, "the scan found no variable"
    data = {name for name in found if settings.is_data_variable(name)}  # each benchmark source's (the family)
    own = [described for name, described in registry.benchmarks().items() if benchmarks.own(name)]  # scanned here
    assert data == {source.env_var for described in own for source in described.sources.values()}
    declared = {**DECLARED, **settings.benchmark_settings()}  # scifig's own and those its benchmarks declare
    assert sorted(found - set(declared) - data) == []
    deprecated = {name for name, setting in declared.items() if setting.deprecated}
    assert deprecated == {"SCIFIG_PROTOCOL", "SCIFIG_MMSCI_PROTOCOL", "SCIFIG_SCIFIBENCH_PROTOCOL"}
    assert {name for name, setting in DECLARED.items() if setting.secret} == {"SCIFIG_JUDGE_API_KEY", "OPENAI_API_KEY"}
    assert all(setting.doc and "\n" not in setting.doc for setting in DECLARED.values())


def test_types_and_defaults() -> None:
    defaults = Settings.defaults()
    assert defaults.get(settings.JUDGE_MAX_CONCURRENCY) == 8
    assert defaults.get(settings.JUDGE_AUDIT) == 0.05
    assert defaults.get(captioning_settings.JUDGED_SUBSET) == 200
    assert defaults.get("SCIFIG_GRAB_DATA") is None
    given = Settings.from_environment(
        {
            "SCIFIG_JUDGE_TIMEOUT_S": " 2.5 ",
            "SCIFIG_JUDGE_MAX_RETRIES": "0",
            "SCIFIG_GRAB_DATA": "~/grab-data",
            "SCIFIG_MMSCI_JUDGED_SUBSET": "ALL",
            "SCIFIG_PROTOCOL": "Paper",
            "SCIFIG_JUDGE_MODEL": "   ",  # blank: unset
        },
        warn=False,
    )
    assert given.get(settings.JUDGE_TIMEOUT_S) == 2.5
    assert given.get(settings.JUDGE_MAX_RETRIES) == 0
    assert given.get("SCIFIG_GRAB_DATA") == Path("~/grab-data").expanduser()
    assert given["SCIFIG_GRAB_DATA"] == Path("~/grab-data").expanduser()
    assert given.get(captioning_settings.JUDGED_SUBSET) is None  # every sample
    assert given.get(settings.PROTOCOL) == "paper"
    assert given.get(settings.JUDGE_MODEL) is None and given.source(settings.JUDGE_MODEL) == "default"


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("SCIFIG_PROTOCOL", "fast", "SCIFIG_PROTOCOL='fast': set one of default, paper"),
        ("SCIFIG_JUDGE_MAX_CONCURRENCY", "0", "SCIFIG_JUDGE_MAX_CONCURRENCY='0': set an integer >= 1"),
        ("SCIFIG_JUDGE_TIMEOUT_S", "nan", "SCIFIG_JUDGE_TIMEOUT_S='nan': set a number of seconds > 0"),
        ("SCIFIG_JUDGE_AUDIT", "1.5", "SCIFIG_JUDGE_AUDIT='1.5': set a share between 0 and 1"),
        ("SCIFIG_MMSCI_JUDGED_SUBSET", "some", "SCIFIG_MMSCI_JUDGED_SUBSET='some': set an integer >= 1 or all"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_and_what_it_accepts(name: str, value: str, expected: str) -> None:
    given = Settings.from_environment({name: value, "SCIFIG_JUDGE_AUDIT_SEED": "3"}, warn=False)  # does not raise
    with pytest.raises(SettingError) as excinfo:
        given.get(name)
    assert str(excinfo.value).startswith(expected) and "\n" not in str(excinfo.value)
    assert given.get(settings.JUDGE_AUDIT_SEED) == 3  # the other settings stay usable
    with pytest.raises(SettingError, match=re.escape(expected)):
        given.check()


def test_sources_environment_command_line_and_default() -> None:
    given = Settings.from_environment(
        {"SCIFIG_JUDGE_MODEL": "env-model", "SCIFIG_JUDGE_AUDIT": "0.2"},
        overrides={"SCIFIG_JUDGE_MODEL": "cli-model", "SCIFIG_MMSCI_DATA": None},
        warn=False,
    )
    assert (given.get(settings.JUDGE_MODEL), given.source(settings.JUDGE_MODEL)) == ("cli-model", "command line")
    assert (given.get(settings.JUDGE_AUDIT), given.source(settings.JUDGE_AUDIT)) == (0.2, "environment")
    assert given.source("SCIFIG_MMSCI_DATA") == "default"
    back = given.with_values({"SCIFIG_JUDGE_MODEL": None, "SCIFIG_JUDGE_AUDIT_SEED": 9})
    assert back.source(settings.JUDGE_MODEL) == "default" and back.get(settings.JUDGE_MODEL) is None
    assert (back.get(settings.JUDGE_AUDIT_SEED), back.source(settings.JUDGE_AUDIT_SEED)) == (9, "command line")
    assert given.get(settings.JUDGE_MODEL) == "cli-model"  # values are frozen: with_values made a copy
    with pytest.raises(KeyError, match="SCIFIG_JUDGE_MODLE is not a scifig setting"):
        Settings.from_environment({}, overrides={"SCIFIG_JUDGE_MODLE": "m"})


def test_unknown_variables_are_named_once_with_the_closest_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(settings, "_warned", set())
    environ = {"SCIFIG_JUDGE_MODLE": "m", "SCIFIG_GARB_DATA": "x", "SCIFIG_ZZZ": "1", "HOME": "/root"}
    assert settings.unknown(environ) == [
        ("SCIFIG_GARB_DATA", "SCIFIG_GRAB_DATA"),
        ("SCIFIG_JUDGE_MODLE", "SCIFIG_JUDGE_MODEL"),
        ("SCIFIG_ZZZ", None),
    ]
    Settings.from_environment(environ)
    Settings.from_environment(environ)  # once per process
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "scifig: SCIFIG_GARB_DATA is not a scifig setting and is ignored (did you mean SCIFIG_GRAB_DATA?)",
        "scifig: SCIFIG_JUDGE_MODLE is not a scifig setting and is ignored (did you mean SCIFIG_JUDGE_MODEL?)",
        "scifig: SCIFIG_ZZZ is not a scifig setting and is ignored; `scifig config` lists the settings",
    ]


def test_a_secret_is_never_in_the_repr_or_shown() -> None:
    given = Settings.from_environment({"SCIFIG_JUDGE_API_KEY": KEY, "SCIFIG_JUDGE_MODEL": "m"}, warn=False)
    assert KEY not in repr(given) and "SCIFIG_JUDGE_MODEL=m" in repr(given)
    assert given.shown(settings.JUDGE_API_KEY) == "<set>"
    assert Settings.defaults().shown(settings.JUDGE_API_KEY) == "<unset>"
    assert given.get(settings.JUDGE_API_KEY) == KEY  # the judge still gets it


def test_the_process_value_is_built_once_and_again_only_when_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.reset()
    monkeypatch.setenv("SCIFIG_JUDGE_AUDIT_SEED", "4")
    first = settings.current()
    assert settings.current() is first and first.get(settings.JUDGE_AUDIT_SEED) == 4
    monkeypatch.setenv("SCIFIG_JUDGE_AUDIT_SEED", "5")
    second = settings.current()
    assert second is not first and second.get(settings.JUDGE_AUDIT_SEED) == 5
    mine = Settings.defaults().with_values({"SCIFIG_JUDGE_AUDIT_SEED": 6})
    with settings.use(mine):
        assert settings.current() is mine
    assert settings.current() is second
    settings.reset()
    assert settings.current() is not second


def test_the_judge_is_built_from_a_settings_value_with_no_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SCIFIG_JUDGE", "off")  # the process's judge is off; the value below needs no environment
    assert get_judge() is None
    given = Settings.defaults().with_values(
        {
            "SCIFIG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1/",
            "SCIFIG_JUDGE_MODEL": "judge-model",
            "SCIFIG_JUDGE_MAX_CONCURRENCY": 3,
            "SCIFIG_JUDGE_CACHE": tmp_path / "cache",
        }
    )
    config = JudgeConfig.from_settings(given)
    assert config == JudgeConfig(
        base_url="http://127.0.0.1:9/v1", model="judge-model", max_concurrency=3, cache_dir=tmp_path / "cache"
    )
    judge = get_judge(given)
    assert judge is not None and judge.config == config and get_judge(given) is judge
    assert JudgeConfig.from_settings(Settings.defaults()) is None  # no endpoint, no model


def test_a_preset_its_key_variable_and_the_settings_that_override_it(tmp_path: Path) -> None:
    environ = {"SCIFIG_JUDGE": "llama-3.1-8b-instruct-vllm", "VLLM_API_KEY": KEY, "SCIFIG_JUDGE_CACHE": str(tmp_path)}
    given = Settings.from_environment(environ, warn=False)
    config = JudgeConfig.from_settings(given)
    assert config is not None and config.api_key == KEY  # captured with the environment
    assert (config.max_concurrency, config.timeout_s) == (32, 120.0)  # the preset's, not the defaults
    assert KEY not in repr(given)
    tuned = JudgeConfig.from_settings(given.with_values({"SCIFIG_JUDGE_MAX_CONCURRENCY": 2}))
    assert tuned is not None and (tuned.max_concurrency, tuned.timeout_s) == (2, 120.0)
    off = JudgeConfig.from_settings(given.with_values({"SCIFIG_JUDGE": "off"}))
    assert off is None
