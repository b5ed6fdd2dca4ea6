"""Shared fixtures: the real sessions folder (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from realdata import SESSIONS_DIR


@pytest.fixture
def sessions_dir() -> Path:
    if not SESSIONS_DIR.is_dir():
        pytest.skip(f"real sessions not available at {SESSIONS_DIR}")
    return SESSIONS_DIR
