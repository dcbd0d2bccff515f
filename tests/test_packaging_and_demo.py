"""The wheel ships the task YAMLs, templates and presets; ``scifig demo`` (README's main job) runs offline."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

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
