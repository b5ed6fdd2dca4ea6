"""A tiny engine plugin used by test_plugins (registered through a faked entry point)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from windowkeeper.core.messages import Message
from windowkeeper.core.report import CompressionReport, CompressionResult, Outcome
from windowkeeper.engine.base import ContextEngine


class EchoEngine(ContextEngine):
    """Never compresses: returns the input list itself."""

    name = "echo"

    def __init__(self, context_length: int = 8_000, **_: Any) -> None:
        self.context_length = context_length

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False

    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> CompressionResult:
        return CompressionResult(messages, CompressionReport(Outcome.NOOP))

    def update_from_response(self, usage: Mapping[str, Any] | None) -> None:
        return None

    def get_status(self) -> dict[str, Any]:
        return {"context_length": self.context_length, "threshold_tokens": self.context_length}


class NotAnEngine:
    def __init__(self, **_: Any) -> None:
        pass


def crashing_factory(**_: Any) -> ContextEngine:
    raise RuntimeError("plugin bug")
