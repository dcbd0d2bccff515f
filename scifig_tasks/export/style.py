"""The frameworks' own code style, applied to everything an export writes, with the formatters and versions their
``.pre-commit-config.yaml`` pins (the ``export`` extra installs them):

* lmms-eval (the repository's ``.pre-commit-config.yaml``, unchanged from v0.7 to the main branch of December 2026):
  black 25.1.0 with ``--line-length=240``, then isort 6.0.1 with ``--profile black``; ``lmms_eval`` is its
  first-party package (isort finds it as the folder at the repository root).
* VLMEvalKit (``.pre-commit-config.yaml`` and ``setup.cfg`` of its repository, December 2026): isort 6.0.1 with the
  ``[isort]`` section of its ``setup.cfg``, yapf 0.43.0 with ``--style={column_limit=120}``, checked by flake8 7.1.2
  with ``--max-line-length=120 --ignore=W503``.

:func:`check_versions` refuses other versions: formatters change their output between releases, and a folder
formatted by another version fails the framework's pre-commit check.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scifig_tasks.export.vendoring import ExportError


@dataclass(frozen=True)
class Style:
    """One framework's pre-commit formatting: the pinned tools and their settings."""

    framework: str
    pins: Mapping[str, str]
    """Distribution -> the version the framework's pre-commit configuration pins."""
    isort: Mapping[str, Any] = field(default_factory=dict)
    black_line_length: int | None = None
    yapf_style: str | None = None
    flake8_args: tuple[str, ...] = ()

    def check_versions(self) -> None:
        """Each pinned tool installed at its pinned version, else one line saying what to install."""
        wrong = []
        for name, version in self.pins.items():
            try:
                found = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                found = None
            if found != version:
                wrong.append(f"{name}=={version} (found {found or 'none'})")
        if wrong:
            wanted = " ".join(f"{name}=={version}" for name, version in self.pins.items())
            raise ExportError(
                f"{self.framework}'s pre-commit formatting needs {', '.join(wrong)}: "
                f'pip install "scifig[export]" (or: pip install {wanted})'
            )

    def format(self, text: str, path: Path) -> str:
        """``text`` formatted as the framework's pre-commit hooks leave it (run twice: the result is their fixed
        point); ``path`` names the file in an error. A text already formatted in this process is not formatted again
        (exporting several benchmarks formats the shared core once)."""
        key = (self.framework, text)
        if key not in _FORMATTED:
            formatted = text
            for _ in range(2):
                formatted = self._once(formatted, path)
            _FORMATTED[key] = formatted
        return _FORMATTED[key]

    def _once(self, text: str, path: Path) -> str:
        import isort

        if self.black_line_length is not None:
            import black

            try:
                text = black.format_str(text, mode=black.Mode(line_length=self.black_line_length))
            except black.InvalidInput as exc:
                raise ExportError(f"{path}: black cannot parse it: {exc}") from None
        text = isort.code(text, **self.isort)
        if self.yapf_style is not None:
            from yapf.yapflib.yapf_api import FormatCode

            text, _ = FormatCode(text, style_config=self.yapf_style)
        return text


_FORMATTED: dict[tuple[str, str], str] = {}


LMMS_EVAL = Style(
    framework="lmms-eval",
    pins={"black": "25.1.0", "isort": "6.0.1"},
    isort={"profile": "black", "known_first_party": ["lmms_eval"]},
    black_line_length=240,
)

VLMEVAL_ISORT = {
    "line_length": 99,
    "multi_line_output": 0,
    "known_first_party": ["vlmeval"],
    "no_lines_before": ["STDLIB", "LOCALFOLDER"],
    "sections": ["FUTURE", "STDLIB", "THIRDPARTY", "FIRSTPARTY", "LOCALFOLDER"],
}
"""The ``[isort]`` section of VLMEvalKit's ``setup.cfg``."""

VLMEVAL = Style(
    framework="VLMEvalKit",
    pins={"isort": "6.0.1", "yapf": "0.43.0", "flake8": "7.1.2"},
    isort=VLMEVAL_ISORT,
    yapf_style="{based_on_style: pep8, column_limit: 120}",
    flake8_args=("--max-line-length=120", "--ignore=W503"),
)
