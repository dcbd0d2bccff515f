"""Where the tests find the checkout: the repository root and the shared fixture files, from a test at any depth."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The checkout's root (README.md, pyproject.toml, scifig_tasks/)."""
FIXTURES = REPO / "tests" / "fixtures"
"""Data files the tests read (each folder's README says where they come from)."""
