"""OpenAI Agents SDK: a model-input filter and a compacting session, over Responses items.

- :func:`input_filter` for ``RunConfig(call_model_input_filter=...)``: before every model
  call the run's input items (and instructions, and the agent's tools, counted) go through
  the manager's preflight. The SDK keeps nothing a filter returns: every call hands it the
  run's full input again. So the filter remembers, per conversation, the items it
  compacted and the result, and substitutes the result when the next input starts with
  those items (:mod:`._prefix`): one long run compacts a prefix once, not on every call.
- :class:`CompactingSession` wraps any ``Session`` (``SQLiteSession``, a Redis or
  SQLAlchemy one, ...): after items are added it compacts the stored history when it
  reaches the trigger and stores the compacted items in place of the old ones, so the
  next run starts from the compaction. Use both for long runs across many turns.

Conversion is :mod:`windowkeeper.adapters.responses` (shared with the gateway's
``/v1/responses``): lossless for what is not compacted (the very item objects come back),
tool-call ids (``call_id``) and call/output pairs kept.

Tested with openai-agents 0.24 (``Runner`` with a scripted ``Model``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

from ..adapters.responses import from_responses, to_responses
from ..core.errors import InvalidMessagesError
from ..core.messages import Message, ToolSchema
from ._common import Conversations, unread
from ._deps import missing
from ._prefix import PrefixMemory, fingerprint

try:
    from agents import FunctionTool, Session
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("openai-agents", exc) from exc

__all__ = ("CompactingSession", "InputFilter", "input_filter")

log = logging.getLogger("windowkeeper.integrations.openai_agents")
KeyFn = Callable[[CallModelData[Any]], Hashable]


def _tool_schemas(tools: Sequence[Any]) -> list[ToolSchema]:
    """The agent's tools as Responses function tools (counted as they are)."""
    schemas: list[ToolSchema] = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            schemas.append(
                {"type": "function", "name": tool.name, "description": tool.description,
                 "parameters": tool.params_json_schema}
            )  # fmt: skip
        else:  # a hosted tool: its name is what the request carries
            schemas.append({"type": "function", "name": str(getattr(tool, "name", "tool"))})
    return schemas


def _items(items: Sequence[dict[str, Any]]) -> list[TResponseInputItem]:
    # The adapter writes Responses items as plain dicts, which is what the SDK's
    # TypedDict union describes.
    return cast("list[TResponseInputItem]", list(items))


class InputFilter:
    """``call_model_input_filter`` keeping every model call inside the window.

    Args:
        manager / settings: as :class:`~windowkeeper.integrations._common.Conversations`.
        key: which conversation a call belongs to (e.g. ``lambda d: d.context.user_id``);
            default: the instructions and the first user message.
    """

    def __init__(self, manager: Any = None, *, key: KeyFn | None = None, **settings: Any):
        self.conversations = Conversations(manager, **settings)
        self.prefixes = PrefixMemory()
        self.key = key

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        given = data.model_data
        try:
            history = from_responses(list(given.input), given.instructions)
        except InvalidMessagesError as exc:  # items the reader refuses: the API judges them
            return unread(given, exc, "model input")
        key = self.key(data) if self.key else fingerprint(history)
        sent = self.prefixes.apply(key, history)
        tools = _tool_schemas(getattr(data.agent, "tools", []) or [])
        out = self.conversations.before(key, sent, tools)
        if out is not sent:
            self.prefixes.remember(key, history, out)
        if out is history:
            return given
        instructions, items = to_responses(out)
        return ModelInputData(input=_items(items), instructions=instructions)


def input_filter(manager: Any = None, *, key: KeyFn | None = None, **settings: Any) -> InputFilter:
    """A :class:`InputFilter` (``RunConfig(call_model_input_filter=input_filter(...))``)."""
    return InputFilter(manager, key=key, **settings)


class CompactingSession:
    """Any Agents SDK ``Session``, with its history compacted when it reaches the trigger.

    Args:
        session: the session that stores the items.
        manager / settings: as :class:`~windowkeeper.integrations._common.Conversations`.
        tools: tool schemas sent with each request (counted; a session cannot see them).
    """

    def __init__(
        self,
        session: Session,
        manager: Any = None,
        *,
        tools: Sequence[ToolSchema] | None = None,
        **settings: Any,
    ) -> None:
        self.session = session
        self.conversations = Conversations(manager, **settings)
        self.tools = list(tools) if tools else None
        self._lock = asyncio.Lock()

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def session_settings(self) -> SessionSettings | None:
        return self.session.session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self.session.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.session.add_items(items)
        await self.compact()

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        await self.session.clear_session()

    async def compact(self) -> bool:
        """Compact the stored history when it reaches the trigger; True when it did.

        The compacted items replace the stored ones (clear, then add): the underlying
        session has no atomic replace, so a failure in between is raised, not hidden.
        """
        async with self._lock:
            stored = await self.session.get_items()
            try:
                history: list[Message] = from_responses(list(stored))
            except InvalidMessagesError as exc:  # kept as stored; the model judges them
                unread(stored, exc, f"session {self.session_id}")
                return False
            # A compaction may call an LLM summarizer: keep it off the event loop.
            out = await asyncio.to_thread(
                self.conversations.before, self.session_id, history, self.tools
            )
            if out is history:
                return False
            _, items = to_responses(out)
            await self.session.clear_session()
            await self.session.add_items(_items(items))
            log.info(
                "session %s: %d items compacted to %d", self.session_id, len(stored), len(items)
            )
            return True
