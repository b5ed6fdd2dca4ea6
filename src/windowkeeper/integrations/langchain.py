"""LangChain v1: ``WindowkeeperMiddleware``, an agent middleware for ``create_agent``.

``wrap_model_call`` (and ``awrap_model_call``) sees the whole request: the system prompt
given to ``create_agent(system_prompt=...)`` (``request.system_message``, not part of
``state["messages"]``), the messages and the bound tools, so the window counts all three.
Before the model is called the conversation goes through the manager's preflight; when it
compacts, the model gets the compacted messages and the agent state is replaced by them
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` + the compacted list + the model's answer), so the
next turn continues from the compaction instead of compacting the same prefix again.
After the call the model's real ``input_tokens`` go to the manager (post-response
trigger), with the same persistence.

Conversion: LangChain messages -> canonical with ``convert_to_openai_messages`` (tool-call
ids kept); messages the compaction left alone are the original objects (same ids),
changed ones (handoff, pruned stubs) are new messages with the same tool-call ids. The
one-time compaction note on the system prompt is kept per thread, so the system prompt
stays byte-stable afterwards. Conversations are told apart by LangGraph's ``thread_id``.

Tested with langchain 1.x (``langchain.agents.create_agent``, langchain-core 1.x).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.messages import Message, ToolSchema, call_arguments, call_id, call_name, tool_calls
from ._common import Conversations, unread
from ._deps import missing

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
    )
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
        convert_to_openai_messages,
    )
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.config import get_config
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("langchain", exc) from exc

__all__ = ("WindowkeeperMiddleware",)


@dataclass(frozen=True)
class _Prepared:
    key: Hashable
    request: ModelRequest[Any]
    canonical: list[Message] | None
    """``None`` when the request could not be read (it goes to the model unchanged)."""
    compacted: bool


class WindowkeeperMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps a LangChain agent inside its context window.

    Takes the settings of :class:`~windowkeeper.integrations._common.Conversations`:
    a ready ``ContextManager`` (positional), or ``compressor=``, or ``context_length=`` /
    ``model=`` with ``config``, ``max_tokens``, ``summarizer``, ``token_counter`` and
    ``on_event``.
    """

    def __init__(self, manager: Any = None, **settings: Any) -> None:
        super().__init__()
        self.conversations = Conversations(manager, **settings)
        self._notes: dict[Hashable, tuple[str, str]] = {}

    # --- the hooks -----------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        prepared = self._prepare(request)
        return self._finish(prepared, handler(prepared.request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        # A compaction may call an LLM summarizer: keep it off the event loop.
        prepared = await asyncio.to_thread(self._prepare, request)
        response = await handler(prepared.request)
        return await asyncio.to_thread(self._finish, prepared, response)

    # --- one call ------------------------------------------------------------------

    def _prepare(self, request: ModelRequest[Any]) -> _Prepared:
        key = _thread_key()
        system = self._noted_system(key, request.system_message)
        originals: list[BaseMessage] = [*([system] if system else []), *request.messages]
        try:
            canonical = [dict(m) for m in convert_to_openai_messages(originals)]
        # LangChain's converter refuses malformed content blocks (ValueError, or a
        # KeyError/TypeError from inside it): the request goes to the model as it is.
        except (ValueError, KeyError, TypeError) as exc:
            return _Prepared(key, unread(request, _first_line(exc)), None, False)
        out = self.conversations.before(key, canonical, _schemas(request.tools))
        if out is canonical:
            if system is request.system_message:
                return _Prepared(key, request, canonical, False)
            return _Prepared(key, request.override(system_message=system), canonical, False)
        new_system, messages = self._split(key, out, canonical, originals)
        new = request.override(system_message=new_system, messages=messages)
        return _Prepared(key, new, out, True)

    def _finish(
        self, prepared: _Prepared, response: ModelResponse[Any]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        if prepared.canonical is None:
            return response
        usage = _usage(response.result)
        out = self.conversations.after(prepared.key, usage, prepared.canonical)
        if out is not prepared.canonical:
            originals = [
                *([prepared.request.system_message] if prepared.request.system_message else []),
                *prepared.request.messages,
            ]
            _, messages = self._split(prepared.key, out, prepared.canonical, originals)
        elif prepared.compacted:
            messages = list(prepared.request.messages)
        else:
            return response
        update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages, *response.result]
        return ExtendedModelResponse(response, Command(update={"messages": update}))

    # --- conversion and the system note --------------------------------------------

    def _split(
        self,
        key: Hashable,
        out: list[Message],
        canonical: list[Message],
        originals: Sequence[BaseMessage],
    ) -> tuple[SystemMessage | None, list[AnyMessage]]:
        """The compacted list as LangChain messages: the system message apart, untouched
        messages as the original objects."""
        by_identity = {id(m): i for i, m in enumerate(canonical)}
        converted: list[Any] = []
        for message in out:
            index = by_identity.get(id(message))
            same = index is not None and canonical[index] == message
            converted.append(originals[index] if same and index is not None else _lc(message))
        system = None
        if converted and isinstance(converted[0], SystemMessage):
            system = converted.pop(0)
            first = originals[0] if originals and isinstance(originals[0], SystemMessage) else None
            if first is not None and system.text != first.text:
                self._notes[key] = (first.text, system.text)
        return system, converted

    def _noted_system(self, key: Hashable, system: SystemMessage | None) -> SystemMessage | None:
        """The system prompt with this thread's compaction note, once one was added."""
        note = self._notes.get(key)
        if system is None or note is None or system.text != note[0]:
            return system
        return SystemMessage(content=note[1], id=system.id)


def _first_line(exc: Exception) -> Exception:
    """The converter's error in one line (its messages quote the whole block)."""
    if isinstance(exc, KeyError):
        return ValueError(f"LangChain cannot convert a content block without the key {exc}")
    text = str(exc).strip()
    return ValueError(text.splitlines()[0][:300] if text else type(exc).__name__)


def _thread_key() -> Hashable:
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a LangGraph run
        return None
    key = configurable.get("thread_id")
    return key if isinstance(key, Hashable) else None


def _schemas(tools: Sequence[Any]) -> list[ToolSchema]:
    schemas: list[ToolSchema] = []
    for tool in tools:
        try:
            schemas.append(dict(convert_to_openai_tool(tool)))
        except (TypeError, ValueError):  # a provider built-in tool: count its JSON
            name = json.dumps(tool, default=str)
            schemas.append({"type": "function", "function": {"name": name}})
    return schemas


def _usage(result: Sequence[BaseMessage]) -> dict[str, Any] | None:
    for message in result:
        usage = getattr(message, "usage_metadata", None)
        if isinstance(message, AIMessage) and usage:
            return {"prompt_tokens": usage.get("input_tokens", 0)}
    return None


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    text = call_arguments(call)
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"raw_arguments": text}
    return value if isinstance(value, dict) else {"raw_arguments": text}


def _lc(message: Message) -> BaseMessage:
    """A new LangChain message for a canonical message the compaction wrote."""
    role, content = message.get("role"), message.get("content")
    body: Any = "" if content is None else content
    if role in ("system", "developer"):
        return SystemMessage(content=body)
    if role == "tool":
        return ToolMessage(content=body, tool_call_id=str(message.get("tool_call_id")))
    if role == "assistant":
        calls = [
            {"name": call_name(c), "args": _arguments(c), "id": call_id(c), "type": "tool_call"}
            for c in tool_calls(message)
        ]
        return AIMessage(content=body, tool_calls=calls)
    return HumanMessage(content=body)
