"""Shared fixtures: the real sessions folder (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

SESSIONS_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "sessions"


def real_session_paths() -> list[Path]:
    """The real transcripts in ``../shared/data/sessions`` (empty when absent)."""
    if not SESSIONS_DIR.is_dir():
        return []
    return sorted(SESSIONS_DIR.glob("*.jsonl"))


@pytest.fixture
def sessions_dir() -> Path:
    if not SESSIONS_DIR.is_dir():
        pytest.skip(f"real sessions not available at {SESSIONS_DIR.resolve()}")
    return SESSIONS_DIR
