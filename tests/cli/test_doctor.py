"""``scifig doctor``: broken environments built in-process (a :class:`Probe` with other versions, missing modules, a
dead or refusing judge) and the real command on this installation; doctor's lines are read, keys never appear."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scifig_tasks.benchmarks.grab.source import GRAB
from scifig_tasks.commands import doctor
from scifig_tasks.commands.config import listed
from scifig_tasks.commands.doctor import Check, Probe, render, run_checks
from tests.harness.lmms import offline_env
from tests.harness.paths import REPO
from tests.project.test_outside_benchmark import install_toy

KEY = "sk-doctor-secret-0123456789"


def probe(tmp_path: Path, **changes: Any) -> Probe:
    """The real probe with an empty Hub cache, no judge and no data variables, plus ``changes``."""
    base = Probe(hub_cache=lambda: tmp_path / "hub", environ={"SCIFIG_JUDGE": "off"})
    return replace(base, **changes)


def line(checks: list[Check], name: str) -> Check:
    (found,) = [check for check in checks if check.name == name]
    return found


def failures(checks: list[Check]) -> list[str]:
    return [f"{check.name}: {check.detail}" for check in checks if check.status == "FAIL"]


def versions(**overrides: str | None) -> Any:
    def version(name: str) -> str | None:
        return overrides[name] if name in overrides else doctor.provenance.installed_version(name)

    return version


def test_this_installation_has_no_problem(tmp_path: Path) -> None:
    checks = run_checks(probe(tmp_path))
    assert failures(checks) == []
    assert [check.name for check in checks][:7] == [
        "python",
        "requirements",
        "lock",
        "lmms-eval",
        "VLMEvalKit",
        "lmms-eval patches",
        "torch",
    ]
    if Path(sys.prefix).resolve() == (REPO / ".venv").resolve():
        assert line(checks, "lock").status == "ok"  # .ci/setup installed exactly the lock
    assert line(checks, "lmms-eval").detail.startswith("lmms-eval 0.7.")
    assert line(checks, "data grab").status == "note"  # nothing cached in an empty Hub cache
    assert render(checks).endswith("no problems")


def test_filelock_4_fails_with_the_range_and_the_command_that_fixes_it(tmp_path: Path) -> None:
    checks = run_checks(probe(tmp_path, version=versions(filelock="4.3.1")))
    assert failures(checks) == [
        'filelock: 4.3.1 is outside scifig\'s range <4,>=3.12 — pip install "filelock<4,>=3.12"'
    ]
    assert render(checks).splitlines()[-1] == "1 problem(s)"


def test_an_unsupported_framework_release_and_a_missing_core_dependency_fail(tmp_path: Path) -> None:
    checks = run_checks(probe(tmp_path, version=versions(**{"lmms-eval": "0.8.1", "pyyaml": None})))
    assert failures(checks) == [
        'pyyaml: not installed (scifig needs it) — pip install "pyyaml>=6.0"',
        'lmms-eval: 0.8.1 is outside scifig\'s range <0.8,>=0.7.3 — pip install "lmms-eval<0.8,>=0.7.3"',
    ]


def test_a_framework_that_does_not_import_fails_naming_the_module(tmp_path: Path) -> None:
    import importlib

    def import_module(name: str) -> Any:
        if name == "filelock._api":
            raise ModuleNotFoundError("No module named 'filelock._api'")
        return importlib.import_module(name)

    checks = run_checks(probe(tmp_path, import_module=import_module))
    (failure,) = failures(checks)
    assert failure.startswith("lmms-eval: lmms-eval 0.7.")
    assert "`import filelock._api` fails: ModuleNotFoundError(\"No module named 'filelock._api'\")" in failure


def test_a_missing_extra_is_a_note_and_no_framework_at_all_a_failure(tmp_path: Path) -> None:
    checks = run_checks(probe(tmp_path, version=versions(**{"ms-vlmeval": None})))
    assert failures(checks) == []
    assert line(checks, "VLMEvalKit") == Check("note", "VLMEvalKit", 'not installed — pip install "scifig[vlmeval]"')
    assert (
        line(checks, "extra vlmeval").detail == 'not installed (ms-vlmeval) — pip install "scifig[vlmeval]" to use it'
    )

    checks = run_checks(probe(tmp_path, version=versions(**{"ms-vlmeval": None, "lmms-eval": None})))
    assert failures(checks) == ['framework: neither lmms-eval nor VLMEvalKit is installed — pip install "scifig[lmms]"']


def test_python_torch_and_chromium(tmp_path: Path) -> None:
    def broken_cuda() -> str:
        raise OSError("libcudart.so.13: cannot open shared object file")

    checks = run_checks(probe(tmp_path, python_version="3.9.18", cuda=broken_cuda, which=lambda name: None))
    assert failures(checks) == [
        "python: 3.9.18 (scifig needs >=3.10)",
        "torch: 2.14.1 is installed but does not load: OSError('libcudart.so.13: cannot open shared object file')",
    ]
    assert line(checks, "chromium").status == "note"  # only the report tests need it


def test_data_sources(tmp_path: Path) -> None:
    (tmp_path / "hub" / "datasets--jonathan-roberts1--GRAB" / "snapshots" / GRAB.revision).mkdir(parents=True)
    local = tmp_path / "scifibench"
    local.mkdir()
    environ = {"SCIFIG_JUDGE": "off", "SCIFIG_SCIFIBENCH_DATA": str(local), "SCIFIG_MMSCI_DATA": str(tmp_path / "no")}
    checks = run_checks(probe(tmp_path, environ=environ))
    pinned = f"Hub jonathan-roberts1/GRAB at pinned revision {GRAB.revision[:12]}, cached"
    assert line(checks, "data grab") == Check("ok", "data grab", pinned)
    assert line(checks, "data scifibench") == Check("ok", "data scifibench", f"SCIFIG_SCIFIBENCH_DATA={local} (local)")
    assert failures(checks) == [
        f"data mmsci: SCIFIG_MMSCI_DATA={tmp_path / 'no'}: {tmp_path / 'no' / 'mcq'} does not exist — point it at "
        "the data (`scifig curate mmsci "
        "--articles ARTICLES --out DIR` builds it), or unset it"
    ]


def cache_model(hub: Path, repo: str, files: tuple[str, ...] = ("config.json", "model.safetensors")) -> None:
    """``repo`` in the Hub cache ``hub`` as huggingface_hub lays it out (a snapshot named by ``refs/main``)."""
    folder = hub / f"models--{repo.replace('/', '--')}"
    commit = "0" * 40
    (folder / "snapshots" / commit).mkdir(parents=True)
    for name in files:
        (folder / "snapshots" / commit / name).write_text("{}")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)


def test_models_fetched_at_run_time_are_looked_up_in_the_cache_with_the_way_out(tmp_path: Path) -> None:
    """BERTScore's model (a benchmark's ``ModelSetting``) and the base model of each packaged fine-tuning config, from
    cache lookups only: not cached, a note with the way out (offline: it stops at once); cached or a local folder, ok;
    a folder that does not exist, a failure. Java (METEOR, CIDEr) is a note when absent."""
    hub = tmp_path / "hub"
    cache_model(hub, "Qwen/Qwen2-VL-2B-Instruct")
    cache_model(hub, "roberta-large", ("config.json",))  # no weights: not usable, so not cached

    def model_checks(**changes: Any) -> list[Check]:
        found = probe(tmp_path, **changes)
        return [*doctor.check_hub(found), *doctor.check_models(found), *doctor.check_java(found)]

    checks = model_checks(which=lambda name: None)
    assert line(checks, "hub cache") == Check(
        "ok",
        "hub cache",
        f"{hub} (models and data not in it are downloaded on first use; without network, set HF_HUB_OFFLINE=1)",
    )
    assert line(checks, "model bertscore") == Check(
        "note",
        "model bertscore",
        f"roberta-large not in the Hugging Face cache ({hub}), for MMSci captioning's BERTScore "
        "(SCIFIG_MMSCI_BERTSCORE_MODEL): downloaded on first use — to run offline, download once with network (hf "
        "download roberta-large) or set SCIFIG_MMSCI_BERTSCORE_MODEL to a local copy (a model folder), then set "
        "HF_HUB_OFFLINE=1",
    )
    assert [check for check in checks if check.name == "model finetune"] == [
        Check(
            "ok",
            "model finetune",
            f"Qwen/Qwen2-VL-2B-Instruct in the Hugging Face cache ({hub}), base model of scifig finetune --config "
            "qwen2_vl_2b_mmsci_lora",
        ),
        Check(
            "note",
            "model finetune",
            f"Qwen/Qwen2-VL-7B-Instruct not in the Hugging Face cache ({hub}), base model of scifig finetune --config "
            "qwen2_vl_7b_mmsci_lora: downloaded on first use — to run offline, download once with network (hf "
            "download Qwen/Qwen2-VL-7B-Instruct) or point a copy of the config's model: at a local copy (a model "
            "folder), then set HF_HUB_OFFLINE=1",
        ),
    ]
    assert line(checks, "java").status == "note" and "METEOR and CIDEr" in line(checks, "java").detail

    offline = {"SCIFIG_JUDGE": "off", "HF_HUB_OFFLINE": "1"}
    bertscore = line(model_checks(environ=offline), "model bertscore")
    assert bertscore.status == "note" and bertscore.detail.endswith(
        "(SCIFIG_MMSCI_BERTSCORE_MODEL): HF_HUB_OFFLINE is set, so it stops at once — download once with network "
        "(HF_HUB_OFFLINE unset: hf download roberta-large), or set SCIFIG_MMSCI_BERTSCORE_MODEL to a local copy (a "
        "model folder)"
    )
    cache_model(hub, "org/bert", ("config.json", "model.safetensors.index.json", "model-00001-of-00001.safetensors"))
    index = next(hub.glob("models--org--bert/snapshots/*/model.safetensors.index.json"))
    index.write_text('{"weight_map": {"a": "model-00001-of-00001.safetensors"}}')
    for value, expected in (
        ("org/bert", Check("ok", "model bertscore", f"org/bert in the Hugging Face cache ({hub}), for MMSci ")),
        (str(tmp_path), Check("ok", "model bertscore", f"local folder {tmp_path}, for MMSci captioning's ")),
        (str(tmp_path / "no"), Check("FAIL", "model bertscore", f"folder {tmp_path / 'no'} does not exist, for ")),
    ):
        environ = {"SCIFIG_JUDGE": "off", "SCIFIG_MMSCI_BERTSCORE_MODEL": value}
        found = line(model_checks(environ=environ), "model bertscore")
        assert (found.status, found.detail[: len(expected.detail)]) == (expected.status, expected.detail), found


def judge_environ(base_url: str) -> dict[str, str]:
    return {"SCIFIG_JUDGE_BASE_URL": base_url, "SCIFIG_JUDGE_MODEL": "fake-judge", "SCIFIG_JUDGE_API_KEY": KEY}


def test_the_judge_reachable_refusing_dead_or_misconfigured_and_the_key_never_printed(
    tmp_path: Path, openai_server
) -> None:
    server = openai_server(model="fake-judge")
    checks = run_checks(probe(tmp_path, environ=judge_environ(server.base_url)))
    host = server.base_url.split("//")[1].split("/")[0]
    assert line(checks, "judge") == Check("ok", "judge", f"fake-judge at {host} answers (HTTP 200, model listed)")
    assert server.models_headers[-1]["authorization"] == f"Bearer {KEY}"  # one request, with the key

    server.models_status = 401
    checks = run_checks(probe(tmp_path, environ=judge_environ(server.base_url)))
    assert failures(checks) == [
        f"judge: fake-judge at {host} refused the API key (HTTP 401) — check SCIFIG_JUDGE_API_KEY"
    ]

    server.stop()
    failed = failures(run_checks(probe(tmp_path, environ=judge_environ(f"http://user:{KEY}@{host}/v1"))))
    assert len(failed) == 1 and failed[0].startswith(f"judge: fake-judge at {host} is not reachable (ConnectError")
    assert failed[0].endswith("— start it or fix SCIFIG_JUDGE_BASE_URL")

    environ = {**judge_environ(f"ftp://user:{KEY}@{host}/v1")}
    text = render(run_checks(probe(tmp_path, environ=environ)))
    assert "judge  " in text and "configuration not usable" in text and text.endswith("1 problem(s)")
    for checked in (text, *failed):
        assert KEY not in checked


def shown(text: str, name: str) -> tuple[str, str]:
    """The status and detail of doctor's line ``name`` in its printed screen."""
    (found,) = [line for line in text.splitlines() if line[6:].split("  ")[0] == name]
    return found[:4].strip(), found[6:].removeprefix(name).strip()


@pytest.mark.slow
@pytest.mark.cli
def test_the_command_exits_1_on_a_problem_and_0_without_and_lists_plugins_as_plugins(tmp_path: Path) -> None:
    """The toy benchmark installed beside scifig (its package and ``.dist-info`` on the path, as pip puts them) is a
    plugin line, not a difference from the lock; a plugin whose entry point does not load fails with its reason. With
    an empty Hub cache and the Hub unreachable (``HF_ENDPOINT`` at a closed local port, ``HF_HUB_OFFLINE`` unset),
    the models fetched at run time are notes with the way out, read from the cache only (no request waits)."""
    scifig = str(Path(sys.executable).parent / "scifig")
    packages = install_toy(tmp_path / "packages")
    hub = tmp_path / "hub"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: a connection is refused at once
        env = {**offline_env(tmp_path), "SCIFIG_JUDGE": "off", "PYTHONPATH": str(packages), "HF_HUB_CACHE": str(hub)}
        env = {key: value for key, value in env.items() if key != "HF_HUB_OFFLINE"}
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{closed.getsockname()[1]}"
        done = subprocess.run([scifig, "doctor"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("scifig doctor — scifig ") and done.stdout.endswith("no problems\n")
    assert shown(done.stdout, "hub cache")[1].startswith(f"{hub} (models and data not in it are downloaded")
    status, detail = shown(done.stdout, "model bertscore")
    assert status == "note" and detail.startswith(f"roberta-large not in the Hugging Face cache ({hub})"), detail
    assert "(hf download roberta-large) or set SCIFIG_MMSCI_BERTSCORE_MODEL to a local copy" in detail
    assert "Qwen/Qwen2-VL-7B-Instruct not in the Hugging Face cache" in done.stdout
    assert done.stderr == ""  # VLMEvalKit's import-time log line is not shown
    tasks = packages / "toy_bench" / "tasks"
    assert shown(done.stdout, "plugin toybars") == (
        "ok",
        f"toy-bench 0.1, task folder {tasks}; settings SCIFIG_TOYBARS_DATA",
    )
    if Path(sys.prefix).resolve() == (REPO / ".venv").resolve():
        assert shown(done.stdout, "lock")[0] == "ok", done.stdout  # the plugin is not a difference from the lock
    assert "toy-bench" not in shown(done.stdout, "lock")[1]

    broken = packages / "broken_bench-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-bench\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[scifig.benchmarks]\nbrokenbench = broken_bench.description:BENCHMARK\n")
    done = subprocess.run(
        [scifig, "doctor"], env={**env, "SCIFIG_GRAB_DATA": str(tmp_path / "missing")}, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "FAIL  data grab" in done.stdout and done.stdout.endswith("2 problem(s)\n")
    status, reason = shown(done.stdout, "plugin brokenbench")
    assert status == "FAIL" and reason.startswith(
        "benchmark brokenbench (broken-bench 0.1, brokenbench = broken_bench.description:BENCHMARK) is left out: "
        "ModuleNotFoundError"
    ), reason
    assert shown(done.stdout, "plugin toybars")[0] == "ok"  # the other plugin still runs


SETUP = REPO / ".ci" / "setup"


def test_setup_removes_a_stray_distribution_but_never_a_benchmark_plugin(tmp_path: Path) -> None:
    """The selection ``.ci/setup`` uninstalls (its own command, run here with two distributions on the path): a
    distribution the lock does not name goes; one declaring a ``scifig.benchmarks`` entry point stays."""
    (selection,) = re.findall(r"\.venv/bin/python -c '([^']*\bunlocked\b[^']*)'", SETUP.read_text())
    site = tmp_path / "site"
    for name, entry_points in (("stray_dist", ""), ("plugin_bench", "[scifig.benchmarks]\npluginbench = a:B\n")):
        info = site / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(entry_points)
    done = subprocess.run(
        [sys.executable, "-c", selection],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    removed = done.stdout.split()
    assert "stray-dist" in removed and "plugin-bench" not in removed, removed


def test_from_a_checkout_doctor_says_whether_this_is_the_tested_environment(tmp_path: Path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==2.4.6 \\\n    --hash=sha256:00\n    # via scifig\nfilelock==3.32.7\n")
    same = run_checks(probe(tmp_path, lock=lock, installed=lambda: {"numpy": "2.4.6", "filelock": "3.32.7"}))
    assert line(same, "lock") == Check("ok", "lock", "this environment is .ci/requirements.lock (2 distributions)")
    drifted = probe(tmp_path, lock=lock, installed=lambda: {"numpy": "2.5.0", "six": "1.17.0"})
    assert line(run_checks(drifted), "lock") == Check(
        "note",
        "lock",
        "3 distribution(s) differ from the tested lock: filelock absent (lock 3.32.7), numpy 2.5.0 (lock 2.4.6), "
        "six 1.17.0 (lock absent) — bash .ci/setup restores it",
    )
    assert "lock" not in [check.name for check in run_checks(probe(tmp_path, lock=tmp_path / "none"))]  # a wheel


def test_a_shadowing_install_is_seen_as_python_sees_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filelock 4 earlier on the path (e.g. PYTHONPATH) is the one imported: every check reads that one."""
    shadow = tmp_path / "shadow" / "filelock-4.3.1.dist-info"
    shadow.mkdir(parents=True)
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: filelock\nVersion: 4.3.1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "shadow"))
    checks = run_checks(Probe(hub_cache=lambda: tmp_path / "hub", environ={"SCIFIG_JUDGE": "off"}))
    assert line(checks, "filelock").status == "FAIL"
    assert "filelock 4.3.1 (lock 3." in line(checks, "lock").detail


def test_settings_a_bad_value_fails_an_unknown_or_deprecated_variable_is_a_note(tmp_path: Path) -> None:
    environ = {"SCIFIG_JUDGE": "off", "SCIFIG_JUDGE_AUDIT": "2", "SCIFIG_JUDGE_MODLE": KEY, "SCIFIG_PROTOCOL": "paper"}
    checks = [check for check in run_checks(probe(tmp_path, environ=environ)) if check.name == "settings"]
    assert [(check.status, check.detail) for check in checks] == [
        ("FAIL", "SCIFIG_JUDGE_AUDIT='2': set a share between 0 and 1 (0 switches the audit off)"),
        ("note", "SCIFIG_JUDGE_MODLE is not a scifig setting and is ignored (did you mean SCIFIG_JUDGE_MODEL?)"),
        ("note", "SCIFIG_PROTOCOL is deprecated: use the task name (the _paper task) instead"),
    ]
    (fine,) = [check for check in run_checks(probe(tmp_path)) if check.name == "settings"]
    assert fine == Check("ok", "settings", f"1 of {len(listed())} set (`scifig config` shows them all)")


def test_an_lmms_eval_whose_patched_internals_changed_fails_naming_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scifig_tasks.lmms_eval import patches

    (download,) = [patch for patch in patches.PATCHES if patch.target.endswith("ConfigurableTask.download")]
    changed = replace(download, signatures={"": ("self", "no_such_parameter")})
    monkeypatch.setattr(patches, "PATCHES", (patches.PATCHES[0], changed))
    check = line(run_checks(probe(tmp_path)), "lmms-eval patches")
    assert check.status == "FAIL"
    assert "ConfigurableTask.download(self, no_such_parameter)" in check.detail
    assert "download(self, dataset_kwargs" in check.detail and "lmms-eval==0.7.3" in check.detail


def test_data_shows_the_pinned_revision_and_whether_the_hub_cache_holds_it(tmp_path: Path) -> None:
    """A cache holding only a newer ``main`` does not hold GRAB's pin; the revision setting names what is loaded
    instead; SciFIBench has no pin."""
    newer = "1" * 40
    grab = tmp_path / "hub" / "datasets--jonathan-roberts1--GRAB"
    (grab / "snapshots" / newer).mkdir(parents=True)
    (grab / "refs").mkdir()
    (grab / "refs" / "main").write_text(newer)
    checks = run_checks(probe(tmp_path))
    wanted = f"Hub jonathan-roberts1/GRAB at pinned revision {GRAB.revision[:12]}, not cached: downloaded on first use"
    assert line(checks, "data grab").status == "note" and line(checks, "data grab").detail.startswith(wanted)
    scifibench = line(checks, "data scifibench").detail
    assert scifibench.startswith("Hub jonathan-roberts1/SciFIBench unpinned (the newest revision, main), not cached")

    checks = run_checks(probe(tmp_path, environ={"SCIFIG_JUDGE": "off", "SCIFIG_GRAB_REVISION": "main"}))
    moved = "at revision main (SCIFIG_GRAB_REVISION; scores may differ from the pinned data), cached as 111111111111"
    assert line(checks, "data grab") == Check("ok", "data grab", f"Hub jonathan-roberts1/GRAB {moved}")
