"""Prompt and marker templates shipped in ``windowkeeper/templates`` (read once each)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def template(name: str) -> str:
    """A prompt/marker template shipped in ``windowkeeper/templates``."""
    return (resources.files("windowkeeper") / "templates" / name).read_text(encoding="utf-8")
