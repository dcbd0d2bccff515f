"""The README works as written: its first screen, its offline commands and every relative link of the documentation.

Rules held here:

* The first screen (the README's first :data:`FIRST_SCREEN` lines) says how to install (the lock's set-up and plain
  pip), how to run both frameworks (``lmms-eval --model ... --tasks scifibench,grab`` and ``scifig vlmeval``) and what
  a user will see (the report picture and the offline ``scifig demo``).
* A ``console`` block in the README holds only offline commands (the README says so): each of its ``$ `` lines is run
  here in an empty temporary folder, with the repository's ``.venv/bin`` first on ``PATH`` and no judge, key or
  protocol variable in the environment, and must exit 0. Commands that run the demo or lmms-eval are ``slow``.
* Every relative link in README.md and docs/*.md names a file or folder of the repository, and a ``#fragment`` names
  a heading of the page it points to (GitHub's anchor rule).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.demo_run import DemoRun
from tests.harness.paths import REPO

README = REPO / "README.md"
DOCUMENTS = [README, *sorted((REPO / "docs").glob("*.md"))]
FIRST_SCREEN = 60
OFFLINE_FENCE = "console"
SLOW_WORDS = ("scifig demo", "lmms-eval", "scifig eval", "scifig vlmeval")
"""Offline commands that start a whole evaluation: run only with the slow tests."""
REQUIRED_OFFLINE = ("scifig --version", "scifig doctor", "scifig presets", "scifig tasks", "scifig demo --out ")
CLEARED_PREFIXES = ("SCIFIG_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")
"""Environment variables removed before an offline command runs (a judge, keys, protocol switches, data paths)."""

FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def offline_commands(text: str) -> list[str]:
    """The ``$ `` lines of every ``console`` fenced block of ``text``, in order."""
    commands = []
    for block in FENCE.finditer(text):
        if block.group("info").strip() != OFFLINE_FENCE:
            continue
        commands += [line[2:].strip() for line in block.group("body").splitlines() if line.startswith("$ ")]
    return commands


def slugs(text: str) -> set[str]:
    """GitHub's heading anchors of a page (lower case, punctuation dropped, spaces to hyphens, -1 for twins)."""
    without_code = FENCE.sub("", text)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.finditer(without_code):
        slug = re.sub(r"[^\w\- ]", "", heading.group("title").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def links(path: Path) -> list[str]:
    """Every link and image target of a Markdown page, fenced code left out."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [match.group("target") or match.group("image") for match in LINK.finditer(text)]


def test_first_screen_installs_runs_both_frameworks_and_shows_the_report() -> None:
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    assert "bash .ci/setup" in first  # the lock
    assert 'pip install ".[lmms]"' in first and 'pip install ".[vlmeval]"' in first
    assert re.search(r"^lmms-eval --model \S+ .*--tasks scifibench,grab", first, re.MULTILINE)
    assert re.search(r"^scifig vlmeval .*--data ", first, re.MULTILINE)
    assert "](docs/report.png)" in first and (REPO / "docs" / "report.png").is_file()
    assert "$ scifig demo --out " in first


def test_the_offline_blocks_hold_the_commands_a_user_tries_first() -> None:
    commands = offline_commands(README.read_text(encoding="utf-8"))
    missing = [wanted for wanted in REQUIRED_OFFLINE if not any(c.startswith(wanted) for c in commands)]
    assert missing == []


def test_ci_reads_the_test_command_from_the_readme() -> None:
    """``.ci/run`` runs the lines between the test-command markers that are neither a comment nor a fence."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start, end = lines.index("<!-- test-command -->"), lines.index("<!-- /test-command -->")
    command = [line for line in lines[start:end] if not line.startswith(("<!--", "```"))]
    assert len(command) == 1 and command[0].startswith("bash .ci/setup && ")
    assert "python -m pytest tests" in command[0]
    # the suite runs with the toy benchmark installed as a plugin, installed into .venv before pytest starts
    toy = ".venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e tests/fixtures/toy_bench && "
    assert toy in command[0] and command[0].index(toy) < command[0].index("python -m pytest tests")


def _offline_cases() -> list[object]:
    cases = []
    for command in offline_commands(README.read_text(encoding="utf-8")):
        marks = [pytest.mark.slow] if any(word in command for word in SLOW_WORDS) else []
        cases.append(pytest.param(command, marks=marks, id=command))
    return cases


@pytest.mark.parametrize("command", _offline_cases())
@pytest.mark.slow
@pytest.mark.cli
def test_offline_command_runs(command: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if command.startswith("scifig demo --out "):  # the session's own demo run is this command (another --out)
        demo: DemoRun = request.getfixturevalue("demo_run")
        assert (demo.out / "report" / "report.html").is_file(), demo.stderr[-3000:]
        return
    environment = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED_PREFIXES)}
    venv_bin = REPO / ".venv" / "bin"
    bin_dir = venv_bin if venv_bin.is_dir() else Path(sys.executable).parent
    environment["PATH"] = f"{bin_dir}{os.pathsep}{environment.get('PATH', '')}"
    environment["HF_HUB_OFFLINE"] = environment["HF_DATASETS_OFFLINE"] = "1"
    completed = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, (command, completed.stdout[-2000:], completed.stderr[-3000:])


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_relative_links_point_to_files_that_exist(document: Path) -> None:
    broken = []
    for target in links(document):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, fragment = target.partition("#")
        destination = (document.parent / path_part).resolve() if path_part else document
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in slugs(destination.read_text("utf-8")):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title `x`\n\n[a](missing.md) [b](#title-x) ![c](pic.png)\n```\n[d](inside-code.md)\n```\n")
    assert links(page) == ["missing.md", "#title-x", "pic.png"]
    assert slugs(page.read_text()) == {"title-x"}
