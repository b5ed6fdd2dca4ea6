"""The pluggable context engine contract (design §4).

The built-in engine is :class:`~windowkeeper.engine.compressor.ContextCompressor`. Other engines
are plugins registered under the entry-point group ``windowkeeper.engines`` and used only
when named in configuration.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Protocol

from ..core.messages import Message, ToolSchema
from ..core.report import CompressionResult


class ToolProvider(Protocol):
    """Tools an engine exposes to the model (for example ``recall`` over the archive)."""

    def schemas(self) -> list[ToolSchema]: ...

    def call(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """The tool's text answer, or ``None`` when ``name`` is not one of this provider's."""
        ...


class ContextEngine(abc.ABC):
    """What an agent loop needs from a context engine.

    Contract every implementation must keep:

    * ``compress`` never mutates its input and returns the input list itself when it
      changes nothing (no-op, skip or abort), so callers and prompt caches can tell.
    * Only real ``prompt_tokens`` (via ``update_from_response``) or an explicit count
      drive ``should_compress``; completion and reasoning tokens never do.
    * ``handle_tool_call`` answers the tools listed by ``get_tool_schemas`` and returns
      text for the model (never raises for bad arguments).
    """

    name: str = "engine"

    @abc.abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether a compaction should run now."""

    @abc.abstractmethod
    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> CompressionResult:
        """Compact ``messages``; see the class docstring for the contract."""

    @abc.abstractmethod
    def update_from_response(self, usage: Mapping[str, Any] | None) -> None:
        """Record the provider's usage of the last response."""

    @abc.abstractmethod
    def get_status(self) -> dict[str, Any]:
        """Counts and thresholds for display (never message text)."""

    def update_model(  # noqa: B027 - optional hook, a no-op by default
        self,
        *,
        model: str | None = None,
        context_length: int | None = None,
        max_tokens: object = None,
        provider: str | None = None,
    ) -> None:
        """The agent switched model (or fell back to another one)."""

    def on_session_start(self, session_id: str) -> None:  # noqa: B027 - optional hook
        """A session begins (or resumes)."""

    def on_session_end(self, session_id: str) -> None:  # noqa: B027 - optional hook
        """A session ends."""

    def on_session_reset(self) -> None:  # noqa: B027 - optional hook
        """The conversation was cleared (``/new``)."""

    def get_tool_schemas(self) -> list[ToolSchema]:
        """Tools the engine offers the model (e.g. ``recall``)."""
        return []

    def handle_tool_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one of the engine's tools."""
        return f"error: the context engine has no tool named {name!r}"
