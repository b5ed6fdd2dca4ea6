"""What every integration shares: one :class:`ContextManager` per conversation.

Every integration is built the same way: a ready :class:`ContextManager`, or a ready
:class:`ContextCompressor`, or the compressor's settings (``context_length=``, or a
``model=`` whose window installed metadata such as LiteLLM's model map knows, plus
``config``, ``max_tokens``, ``summarizer``, ``token_counter``). The defaults are the
command line's: the default :class:`CompressionConfig` and the extractive summarizer.

A framework may run several conversations through one hook (LangGraph threads, Agents
SDK sessions, proxy callers). Built from settings, each conversation key gets its own
manager, so guard state and deferrals never leak between them; a ready manager or
compressor is one conversation's and is used for every key.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from ..core.config import CompressionConfig
from ..core.errors import ConfigError, InvalidMessagesError
from ..core.messages import Message, ToolSchema
from ..core.tokens import TextCounter
from ..engine.compressor import ContextCompressor
from ..loop.events import EventCallback
from ..loop.manager import ContextManager
from ..summary.feasibility import resolve_context_length
from ..summary.protocol import Summarizer

__all__ = ("Conversations", "unread")

log = logging.getLogger("windowkeeper.integrations")
T = TypeVar("T")

MAX_CONVERSATIONS = 1_000


class Conversations:
    """The managers of the conversations one integration serves (see the module docstring).

    Args:
        manager / compressor: a ready manager or compressor (one conversation).
        context_length: the model's window; else looked up for ``model``.
        model: the model name (per-model thresholds; window lookup).
        max_tokens: output reservation subtracted from the window.
        config: compressor tunables (default: the CLI's defaults).
        summarizer: writes the handoff (default: the extractive one).
        token_counter: exact local counts (default: the rough estimate).
        on_event: receives every manager's events.
        per_model: without ``context_length``, look each conversation's window up by
            the model its first call names (a proxy serves many models): in
            ``context_lengths`` first, then in installed model metadata.
    """

    def __init__(
        self,
        manager: ContextManager | None = None,
        *,
        compressor: ContextCompressor | None = None,
        context_length: int | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        config: CompressionConfig | None = None,
        summarizer: Summarizer | None = None,
        token_counter: TextCounter | None = None,
        on_event: EventCallback | None = None,
        per_model: bool = False,
        context_lengths: Mapping[str, int] | None = None,
    ) -> None:
        if manager is not None and compressor is not None:
            raise ConfigError("give either a ContextManager or a ContextCompressor, not both")
        if compressor is not None:
            manager = ContextManager(compressor, on_event=on_event)
        self._shared = manager
        self._settings: dict[str, Any] = {
            "config": config, "model": model, "max_tokens": max_tokens,
            "summarizer": summarizer, "token_counter": token_counter,
        }  # fmt: skip
        self._on_event = on_event
        self._windows = dict(context_lengths or {})
        self._managers: OrderedDict[Hashable, ContextManager] = OrderedDict()
        self.context_length = context_length
        if manager is None and not (per_model and context_length is None):
            self.context_length = _window(context_length, model)

    def manager(self, key: Hashable = None, *, model: str | None = None) -> ContextManager:
        """The conversation's manager (created on first use; the oldest of more than
        ``MAX_CONVERSATIONS`` idle ones is forgotten). Built ``per_model`` without a
        ``context_length``, each new conversation's window is the window of ``model``."""
        if self._shared is not None:
            return self._shared
        found = self._managers.get(key)
        if found is None:
            model = model or self._settings["model"]
            window = self.context_length or self._windows.get(model or "") or _window(None, model)
            compressor = ContextCompressor(
                self._settings["config"], context_length=window,
                max_tokens=self._settings["max_tokens"], model=model,
                summarizer=self._settings["summarizer"],
                token_counter=self._settings["token_counter"],
            )  # fmt: skip
            found = self._managers[key] = ContextManager(compressor, on_event=self._on_event)
            while len(self._managers) > MAX_CONVERSATIONS:
                self._managers.popitem(last=False)
        self._managers.move_to_end(key)
        return found

    def before(
        self,
        key: Hashable,
        messages: list[Message],
        tools: Sequence[ToolSchema] | None,
        *,
        model: str | None = None,
    ) -> list[Message]:
        """Before a model call: the messages to send (the input list itself when nothing
        was compacted). ``tools`` are the schemas sent with the call (counted)."""
        manager = self.manager(key, model=model)
        manager.tools = list(tools) if tools else None
        try:
            return manager.preflight(messages)
        except InvalidMessagesError as exc:
            return unread(messages, exc)

    def after(
        self, key: Hashable, usage: Mapping[str, Any] | None, messages: list[Message]
    ) -> list[Message]:
        """After a model call with the provider's usage: the working list to continue
        with (``messages`` itself unless real ``prompt_tokens`` called for a compaction)."""
        try:
            return self.manager(key).after_response(usage, messages)
        except InvalidMessagesError as exc:
            return unread(messages, exc)


def unread(messages: T, exc: Exception, what: str = "request") -> T:
    """``messages`` unchanged, with one warning: input an integration cannot read (the
    engine refuses its shape, or the framework's own converter refuses it) goes to the
    model as it is. The model or its provider judges it; compacting is never why an
    agent's call fails."""
    log.warning("%s not compacted (the model will judge it): %s", what, exc)
    return messages


def _window(context_length: int | None, model: str | None) -> int:
    if context_length is not None:
        if context_length <= 0:
            raise ConfigError(f"context_length must be a positive integer, got {context_length}")
        return context_length
    known = resolve_context_length(model) if model else None
    if known is None:
        named = f"of model {model!r} " if model else ""
        raise ConfigError(
            f"the context window {named}is unknown: pass context_length=N (or a "
            "ContextCompressor / ContextManager)"
        )
    return known
