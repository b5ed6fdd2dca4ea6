"""LiteLLM proxy: ``WindowkeeperHook``, a ``CustomLogger`` whose ``async_pre_call_hook``
compacts ``data["messages"]`` before the proxy calls the model.

Register it in the proxy's config (``litellm_settings: callbacks:
my_hooks.windowkeeper_hook`` where ``my_hooks.py`` holds
``windowkeeper_hook = WindowkeeperHook()``), or append it to ``litellm.callbacks``.

The window of a conversation: ``context_length=`` when given, else
``context_lengths[model]`` (for proxy aliases), else the model's window from LiteLLM's
model map; a model none of these knows is sent unchanged (logged once), never failed.

The proxy is stateless: each request carries the client's whole history. The hook keeps,
per conversation, the history it compacted and the result, and substitutes the result
when the next request starts with that history (see :mod:`._prefix`), so a compaction
persists across turns. A conversation is the request's ``litellm_session_id`` /
``metadata.session_id`` / ``user``, else its model, system prompt and first user message.

Only chat completions (``call_type`` ``completion`` / ``acompletion`` with a message
list) are compacted; every other call passes through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Mapping
from typing import Any

from ..core.errors import ConfigError, InvalidMessagesError
from ..core.messages import Message, strip_private_keys, validate_messages
from ..summary.llm.backends import import_litellm
from ._common import Conversations, unread
from ._deps import missing
from ._prefix import PrefixMemory, fingerprint

import_litellm()  # first: keeps LiteLLM's model map off the network
try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("litellm", exc) from exc

__all__ = ("WindowkeeperHook",)

log = logging.getLogger("windowkeeper.integrations.litellm")
_CHAT_CALLS = frozenset({"completion", "acompletion"})


class WindowkeeperHook(CustomLogger):
    """Compacts chat requests passing through a LiteLLM proxy.

    Args:
        manager: a ready ContextManager (every request is then one conversation).
        context_lengths: windows by model name, for aliases LiteLLM's map does not know.
        **settings: as :class:`~windowkeeper.integrations._common.Conversations`
            (``compressor=``, ``context_length=``, ``config``, ``max_tokens``,
            ``summarizer``, ``token_counter``, ``on_event``).
    """

    def __init__(
        self,
        manager: Any = None,
        *,
        context_lengths: Mapping[str, int] | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()
        self.conversations = Conversations(
            manager, per_model=True, context_lengths=context_lengths, **settings
        )
        self.prefixes = PrefixMemory()
        self._unknown: set[str] = set()

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        """The proxy's pre-call hook: ``data`` with its messages compacted when needed."""
        if call_type not in _CHAT_CALLS or not isinstance(data.get("messages"), list):
            return data
        # A compaction may call an LLM summarizer: keep it off the proxy's event loop.
        return await asyncio.to_thread(self.compact_request, data)

    def compact_request(self, data: dict[str, Any]) -> dict[str, Any]:
        """The request body with its messages compacted (``data`` itself when unchanged)."""
        model = str(data.get("model") or "")
        try:
            history = validate_messages(data["messages"])
        except InvalidMessagesError as exc:
            return unread(data, exc)
        key = (model, conversation_key(data, history))
        sent = self.prefixes.apply(key, history)
        try:
            out = self.conversations.before(key, sent, _tools(data), model=model)
        except ConfigError as exc:
            if model not in self._unknown:
                self._unknown.add(model)
                log.warning("requests for %r are not compacted: %s", model, exc)
            return data
        if out is not sent:
            self.prefixes.remember(key, history, out)
        if out is history:
            return data
        return {**data, "messages": [strip_private_keys(m) for m in out]}


def _tools(data: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    tools = data.get("tools")
    if isinstance(tools, list) and all(isinstance(t, dict) for t in tools):
        return tools
    return None


def conversation_key(data: Mapping[str, Any], history: list[Message]) -> Hashable:
    """Who a request belongs to (see the module docstring)."""
    metadata = data.get("metadata")
    for value in (
        data.get("litellm_session_id"),
        metadata.get("session_id") if isinstance(metadata, Mapping) else None,
        data.get("user"),
    ):
        if isinstance(value, str) and value:
            return value
    return fingerprint(history)
