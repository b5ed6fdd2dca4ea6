"""Where the real transcripts live (``../shared/data/sessions``); absent in a bare clone."""

from __future__ import annotations

from pathlib import Path

SESSIONS_DIR = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "sessions"
).resolve()


def real_session_paths() -> list[Path]:
    """The real transcripts, or an empty list when the folder is absent."""
    if not SESSIONS_DIR.is_dir():
        return []
    return sorted(SESSIONS_DIR.glob("*.jsonl"))
