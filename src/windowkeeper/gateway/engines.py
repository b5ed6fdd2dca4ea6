"""The engine one gateway branch runs: a context manager around a compressor that
records the compactions it makes (applied background ones included), so the gateway can
archive their originals after the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.messages import Message
from ..core.report import CompressionResult
from ..engine.compressor import ContextCompressor
from ..loop.background import SessionBackground
from ..loop.events import Event
from ..loop.manager import ContextManager
from ..summary.llm.summarizer import LLMSummarizer
from .settings import GatewaySettings


class RecordingCompressor(ContextCompressor):
    """The built-in compressor, remembering this request's compactions (input, result),
    applied background ones included, so their archived originals can be stored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.compacted: list[tuple[list[Message], CompressionResult]] = []

    def completed(self, messages: list[Message], result: CompressionResult) -> None:
        self.compacted.append((messages, result))


def new_manager(
    settings: GatewaySettings,
    window: int,
    model: str | None,
    clock: Callable[[], float],
    on_event: Callable[[Event, ContextCompressor], None],
    background: SessionBackground | None = None,
) -> tuple[ContextManager, RecordingCompressor]:
    """A manager around a fresh compressor that triggers at the hygiene threshold; its
    events go to ``on_event`` with the compressor."""
    summarizer = (
        LLMSummarizer(replace(settings.summary, fallback_model=model or None))
        if settings.summary is not None
        else None
    )
    compressor = RecordingCompressor(
        settings.compressor_config(),
        context_length=window,
        model=model,
        clock=clock,
        summarizer=summarizer,
        summary_context_length=settings.summary.context_length if settings.summary else None,
    )
    manager = ContextManager(
        compressor,
        clock=clock,
        max_attempts=settings.compression.max_attempts,
        on_event=lambda event: on_event(event, compressor),
        background=background,
    )
    return manager, compressor
