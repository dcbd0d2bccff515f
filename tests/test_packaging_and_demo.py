"""The wheel ships the task YAMLs, templates and presets; ``scifig demo`` (README's main job) runs offline and ends
with the HTML report, checked in headless Chromium as the report tests do; pytest reads its settings from setup.cfg."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[1]


def test_wheel_ships_tasks_templates_presets_and_entry_points(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("scifig-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    task_files = {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "scifig_tasks" / "lmms_eval").rglob("*")
        if path.is_file() and path.suffix in {".yaml", ".py", ".md", ""} and "__pycache__" not in path.parts
    }
    assert task_files and task_files <= names, task_files - names
    assert "scifig_tasks/lmms_eval/grab/_default_template_yaml" in names
    assert "scifig_model_configs/judges/gpt-4o-mini.yaml" in names
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[lmms_eval.models]\nscifig = scifig_tasks.lmms_eval.plugin:manifests" in text
    assert "scifig = scifig_tasks.cli:main" in text
    assert "plot_twist_default_data = curation.plot_twist.default:ensure_default_data" in text
    assert "[scifig.curate]\ngrab = curation.grab.cli:register" in text
    assert "scifig_tasks/lmms_eval/mmsci/_caption_template_yaml" in names


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


def test_demo_scores_a_local_grab_set_through_lmms_eval(tmp_path: Path, lmms_env) -> None:
    scifig = Path(sys.executable).parent / "scifig"
    completed = subprocess.run(
        [str(scifig), "demo", "--out", str(tmp_path / "demo"), "--per-task", "3"],
        env=lmms_env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    table = completed.stdout[completed.stdout.index("| task | n | accuracy | 95% CI |") :]
    rows = dict(re.findall(r"^\| (grab\w*) \| (\d+) \|", table, re.MULTILINE))
    assert rows == {
        "grab": "12",
        "grab_functions": "3",
        "grab_properties": "3",
        "grab_series": "3",
        "grab_transforms": "3",
    }
    assert list((tmp_path / "demo" / "results").rglob("*_results.json"))
    # the demo ends with the report of `scifig report`: its last line is the page to open
    report = tmp_path / "demo" / "report"
    assert completed.stdout.rstrip().splitlines()[-1] == str((report / "report.html").resolve())
    accuracy = re.search(r"^\| grab \| 12 \| (\d+\.\d)% \|", table, re.MULTILINE).group(1)
    assert f"| scifig_chance(seed=0) | 12 | {accuracy} (" in (report / "report.md").read_text()
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


def render_in_chromium(page: Path, work: Path) -> tuple[np.ndarray, str]:
    """Screenshot pixels (1280 x 3000) and the DOM of ``page`` in headless Chromium (as tests/test_report.py)."""
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
