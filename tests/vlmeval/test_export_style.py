"""``style.VLMEVAL.format`` alone gives text that VLMEvalKit's flake8, isort and yapf leave unchanged, on the code
they disagree about (an import isort wraps at 99 columns and yapf joins at 120; a docstring line past 120 columns),
while ``LMMS_EVAL`` formats without settling. In process: the slow export test checks the whole exported tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.export.style import LMMS_EVAL, VLMEVAL

SOURCE = '''"""A module."""
from vlmeval.dataset.utils.scifig.judge.client import JudgeClient, JudgeConfig, get_judge, task_scope_of_the_caller


def f(value):
    """{LONG}"""
    return JudgeClient, JudgeConfig, get_judge, task_scope_of_the_caller, value
'''.replace("{LONG}", "A docstring line that a renaming made longer than VLMEvalKit's flake8 allows " + "words " * 8)


def test_vlmeval_format_passes_its_three_tools() -> None:
    pytest.importorskip("yapf")
    import isort
    import pycodestyle
    from yapf.yapflib.yapf_api import FormatCode

    text = VLMEVAL.format(SOURCE, Path("example.py"))
    assert isort.check_code(text, **VLMEVAL.isort)
    assert FormatCode(text, style_config=VLMEVAL.yapf_style)[0] == text
    guide = pycodestyle.StyleGuide(max_line_length=VLMEVAL.line_limit, ignore=list(VLMEVAL.flake8_ignore), quiet=True)
    checker = pycodestyle.Checker(lines=text.splitlines(keepends=True), options=guide.options)
    assert checker.check_all() == 0, text
    assert "# yapf: disable" in text and max(len(line) for line in text.splitlines()) <= 120
    assert VLMEVAL.format(text, Path("example.py")) == text  # a fixed point


def test_lmms_eval_style_does_not_settle() -> None:
    pytest.importorskip("black")
    assert not LMMS_EVAL.settle and VLMEVAL.settle and VLMEVAL.line_limit == 120
    assert "# yapf" not in LMMS_EVAL.format(SOURCE, Path("example.py"))
