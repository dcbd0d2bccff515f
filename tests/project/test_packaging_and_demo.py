"""The wheel ships the task YAMLs, templates and presets; ``scifig demo`` (README's main job) runs offline and ends
with the HTML report, checked in headless Chromium as the report tests do; pytest reads its settings from setup.cfg."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import scifig_tasks
from scifig_tasks.core import registry
from scifig_tasks.core.provenance import checkout
from tests.harness.demo_run import PER_TASK, DemoRun
from tests.harness.paths import REPO

GRAB_TASKS = ("functions", "properties", "series", "transforms")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scifig's wheel, built from this checkout."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("scifig-*.whl")
    return built


@pytest.mark.slow
@pytest.mark.cli
def test_wheel_ships_tasks_templates_presets_and_entry_points(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    task_files = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "scifig_tasks" / "benchmarks").glob("*/tasks/*")
        if path.is_file() and path.suffix in {".yaml", ".py", ".md", ""} and "__pycache__" not in path.parts
    }
    assert task_files and task_files <= names, task_files - names
    assert "scifig_tasks/benchmarks/grab/tasks/_default_template_yaml" in names
    assert "scifig_model_configs/judges/gpt-4o-mini.yaml" in names
    assert "scifig_tasks/data/clip/scifig_tiny_clip.json" in names
    assert {f"scifig_tasks/report/templates/samples.{kind}" for kind in ("html", "css", "js")} <= names
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[lmms_eval.models]\nscifig = scifig_tasks.lmms_eval.plugin:manifests" in text
    assert "scifig = scifig_tasks.commands.main:main" in text
    assert "plot_twist_default_data = curation.plot_twist.default:ensure_default_data" in text
    curate = text.split("[scifig.curate]\n", 1)[1].split("\n\n", 1)[0]  # each benchmark's `scifig curate` commands
    wanted = {"charxiv_full = curation.charxiv.cli:register", "grab = curation.grab.cli:register"}
    assert wanted <= set(curate.split("\n"))
    assert "scifig_tasks/benchmarks/mmsci/tasks/_caption_template_yaml" in names


MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|tmp|Users)/[\w.-]+")


def test_readme_first_screen_and_docs_name_no_machine_paths() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_screen = readme.split("\n## ", 1)[0]
    assert "scifig demo --out scifig-demo" in first_screen and "<!-- test-command -->" in first_screen
    assert "### What you will see" in first_screen and "](docs/report.png)" in first_screen
    shot = Image.open(REPO / "docs" / "report.png")
    assert shot.width >= 800 and np.asarray(shot.convert("L")).std() > 10  # a picture, not a blank page
    documents = [REPO / "README.md", *REPO.glob("scifig_tasks/lmms_eval/*/README.md"), *REPO.glob("tests/perf/*.py")]
    documents += [*REPO.glob("curation/*/README.md"), *REPO.glob("docs/*.md")]
    found = {path.name: MACHINE_PATH.findall(path.read_text(encoding="utf-8")) for path in documents}
    assert {name: paths for name, paths in found.items() if paths} == {}


def test_demo_scores_a_local_grab_set_through_lmms_eval(demo_run: DemoRun, tmp_path: Path) -> None:
    completed, out = demo_run, demo_run.out
    # quiet by default: the table and the report path; lmms-eval's own output goes to demo.log
    printed = (completed.stdout + completed.stderr).splitlines()
    assert len(printed) <= 40 and completed.stderr == "", printed
    assert "INFO" not in completed.stdout and "\x1b[" not in completed.stdout and "it/s" not in completed.stdout
    log = (out / "demo.log").read_text(encoding="utf-8")
    assert "lmms_eval" in log and "|grab" in log  # lmms-eval's log lines and its own table went there
    table = completed.stdout[completed.stdout.index("| task | n | accuracy | 95% CI |") :]
    rows = dict(re.findall(r"^\| (grab\w*) \| (\d+) \|", table, re.MULTILINE))
    assert rows == {"grab": str(4 * PER_TASK)} | {f"grab_{task}": str(PER_TASK) for task in GRAB_TASKS}
    (results_file,) = (out / "results").rglob("*_results.json")
    # the results file says what made it: scifig (version, commit of this checkout), the libraries, no judge
    environment = json.loads(results_file.read_text())["scifig_environment"]
    commit, modified = checkout()
    assert environment["scifig"] == {"version": scifig_tasks.__version__, "commit": commit, "modified": modified}
    assert environment["libraries"]["lmms-eval"] == importlib.metadata.version("lmms-eval")
    assert environment["libraries"]["matplotlib"] == importlib.metadata.version("matplotlib")
    assert environment["judge"] is None
    # the demo ends with the report of `scifig report`: its last line is the page to open
    report = out / "report"
    assert completed.stdout.rstrip().splitlines()[-1] == str((report / "report.html").resolve())
    accuracy = re.search(rf"^\| grab \| {4 * PER_TASK} \| (\d+\.\d)% \|", table, re.MULTILINE).group(1)
    assert f"| scifig_chance(seed=0) | {4 * PER_TASK} | {accuracy} (" in (report / "report.md").read_text()
    html = (report / "report.html").read_text()
    for figure in ("grab_bars.png", "grab_complexity.png"):
        assert (report / "figures" / figure).stat().st_size > 10_000 and f'src="figures/{figure}"' in html
    assert (report / "samples.html").exists() and 'href="samples.html"' in html
    pixels, dom = render_in_chromium(report / "report.html", tmp_path / "chromium")
    non_white = (pixels.min(axis=2) < 240).mean()
    coloured = (pixels.max(axis=2) - pixels.min(axis=2) > 60).mean()  # the figures' bars and lines
    assert non_white > 0.03 and coloured > 0.001, (non_white, coloured)
    assert dom.count("<table>") >= 5 and dom.count("scifig_chance(seed=0)") >= 5 and "Roberts et al. 2024" in dom
    assert '<img src="figures/grab_bars.png"' in dom and '<img src="figures/grab_complexity.png"' in dom
    # and so does the report, per results file
    environment_table = (report / "report.md").read_text().split("## Environment: what made these numbers")[1]
    grab_version = registry.benchmark("grab").version
    assert f"| {results_file.name} | grab {grab_version}, grab_functions {grab_version}," in environment_table
    assert f"scifig {scifig_tasks.__version__}, " in environment_table and "lmms-eval 0.7." in environment_table


def render_in_chromium(page: Path, work: Path) -> tuple[np.ndarray, str]:
    """Screenshot pixels (1280 x 3000) and the DOM of ``page`` in headless Chromium (as tests/report/test_report.py)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed (bash .ci/setup installs it)"
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu"]
    shot = work / "report.png"
    completed = subprocess.run(
        [
            *base,
            "--hide-scrollbars",
            f"--user-data-dir={work / 'profile'}",
            "--window-size=1280,3000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0 and shot.exists(), completed.stderr[-3000:]
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert pixels.shape[:2] == (3000, 1280)
    dom = subprocess.run(
        [*base, f"--user-data-dir={work / 'dom'}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    ).stdout
    return pixels, dom


def test_pytest_reads_its_configuration_from_setup_cfg(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.inipath == REPO / "setup.cfg"
    assert pytestconfig.getini("testpaths") == ["tests"]
    assert float(pytestconfig.getini("faulthandler_timeout")) == 900
    assert pytestconfig.option.strict_markers and pytestconfig.option.strict_config
    assert "[tool.pytest" not in (REPO / "pyproject.toml").read_text()  # configured in one place only


@pytest.mark.slow
@pytest.mark.cli
def test_curate_builds_plot_twist_through_the_scifig_command(tmp_path: Path) -> None:
    scifig = Path(sys.executable).parent / "scifig"
    listing = subprocess.run([str(scifig), "curate", "--help"], capture_output=True, text=True, check=True).stdout
    assert {"plot-twist", "scifibench", "scifibench-accept", "scifibench-from-scicap"} <= set(
        re.findall(r"[\w-]+", listing)
    )
    out = tmp_path / "pt"
    completed = subprocess.run(
        [str(scifig), "curate", "plot-twist", "--out", str(out), "--plots-per-type", "1", "--variants", "grid"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert f"use SCIFIG_PLOT_TWIST_DATA={out}" in completed.stdout


SCIFIG_IMPORTS = ("scifig_tasks", "curation", "scifig_model_configs", "scifig_finetune")


def venv_from_wheel(wheel: Path, root: Path) -> Path:
    """A fresh virtual environment with scifig installed from ``wheel`` (not editable) and the third-party packages
    of this environment (the lock) reachable through a ``.pth`` folder of links that leaves out scifig's own
    editable install; ``bin/lmms-eval`` is lmms-eval's command for it."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    locked = root / "locked"
    locked.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name
        ours = name in SCIFIG_IMPORTS or name.startswith(("__editable__", "scifig-")) or name.endswith(".pth")
        if not ours and name != "__pycache__":
            (locked / name).symlink_to(entry)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "locked.pth").write_text(f"{locked}\n")
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(install, check=True, capture_output=True)
    lmms_eval = venv / "bin" / "lmms-eval"
    lmms_eval.write_text(f"#!{python}\nimport sys\nfrom lmms_eval.cli.dispatch import main\nsys.exit(main())\n")
    lmms_eval.chmod(0o755)
    return venv


@pytest.mark.slow
@pytest.mark.cli
def test_installed_from_the_wheel_lmms_eval_vlmeval_and_presets_run_outside_the_checkout(
    wheel: Path, tmp_path: Path, openai_server
) -> None:
    from tests.harness.lmms import offline_env
    from tests.harness.vlmeval import run_vlmeval, vlmeval_scores

    venv = venv_from_wheel(wheel, tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = offline_env(tmp_path)

    def run(*command: str, **extra: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            list(command), cwd=outside, env={**env, **extra}, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        return done

    where = run(
        str(venv / "bin" / "python"),
        "-c",
        f"import importlib; print(*(importlib.import_module(n).__file__ for n in {SCIFIG_IMPORTS!r}))",
    )
    assert all(path.startswith(str(venv)) for path in where.stdout.split()), where.stdout
    assert run(str(venv / "bin" / "scifig"), "--version").stdout == f"scifig {scifig_tasks.__version__}\n"

    grab = outside / "grab-data"  # not ./grab: lmms-eval reads --tasks grab as a folder of YAMLs when one exists
    run(str(venv / "bin" / "scifig"), "curate", "grab", "--out", str(grab), "--limit", "8", "--dpi", "60")
    out = outside / "lmms-out"
    lmms_args = ["--model", "scifig_chance", "--tasks", "grab", "--output_path", str(out), "--log_samples"]
    run(str(venv / "bin" / "lmms-eval"), *lmms_args, SCIFIG_GRAB_DATA=str(grab))
    (results_file,) = out.rglob("*_results.json")
    results = json.loads(results_file.read_text())
    assert sum(results["n-samples"][task]["effective"] for task in results["group_subtasks"]["grab"]) == 8
    assert 0 <= results["groups"]["grab"]["accuracy,none"] <= 1
    environment = results["scifig_environment"]
    assert environment["scifig"] == {"version": scifig_tasks.__version__, "commit": None, "modified": False}

    server = openai_server()
    completed, work = run_vlmeval(
        outside,
        server.base_url,
        {**env, "SCIFIG_GRAB_DATA": str(grab)},
        {"grab": "SciFigGRAB"},
        scifig=[str(venv / "bin" / "scifig")],
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]
    scores = vlmeval_scores(work, "grab")
    assert scores["scifig_environment"]["scifig"]["commit"] is None
    assert scores["scifig_environment"]["libraries"]["ms-vlmeval"] == importlib.metadata.version("ms-vlmeval")
    assert server.count == 8

    presets = run(str(venv / "bin" / "scifig"), "presets").stdout
    assert all(path.stem in presets for path in (REPO / "model_configs" / "models").glob("*.yaml"))
