"""Pydantic AI: a history processor, and a capability that also counts tools.

- :func:`history_processor` returns a ``(ctx, messages) -> messages`` history processor,
  the contract both majors share: 2.x takes it as
  ``Agent(capabilities=[ProcessHistory(history_processor(...))])``, 1.x as
  ``Agent(history_processors=[history_processor(...)])``. A processor sees only the
  messages, so pass the agent's tool schemas as ``tools=`` to count them.
- :class:`WindowkeeperCapability` (2.x) is the same compaction as a capability: it sees
  the request's tool definitions and instructions and counts them in the window.

Both replace the run's history with the compaction (``ctx.messages``), so the run goes on
from it and ``result.all_messages()`` holds it for the next run: the same prefix is not
compacted again. Tool call/return pairs stay together (the compressor cuts only between
tool groups and repairs pairing as a logged fallback); tool-call ids are kept. Parts the
compaction leaves alone are the original part objects; whole messages too when unchanged.

Tested with pydantic-ai-slim 2.x (``FunctionModel``); the processor's signature is the
documented 1.x one as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ..core.messages import Message, ToolSchema, call_arguments, call_id, call_name, tool_calls
from ._common import Conversations, unread
from ._deps import missing

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        BaseToolCallPart,
        BaseToolReturnPart,
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        ModelResponsePart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("pydantic-ai", exc) from exc

__all__ = ("WindowkeeperCapability", "history_processor")

KeyFn = Callable[[RunContext[Any]], Hashable]
_ORIGIN = "_pydantic_ai_origin"  # (message index, part index or None): where it came from
_OTHER = "_pydantic_ai_parts"  # response parts with no canonical place (thinking, files)


class _Compactor:
    """The shared core: canonical conversion, the manager, and conversion back."""

    def __init__(self, manager: Any, key: KeyFn | None, settings: dict[str, Any]) -> None:
        self.conversations = Conversations(manager, **settings)
        self.key = key

    def compact(
        self,
        ctx: RunContext[Any],
        history: list[ModelMessage],
        tools: Sequence[ToolSchema] | None,
        instructions: str | None = None,
    ) -> list[ModelMessage]:
        # A history Pydantic AI cannot serialize itself (a tool call whose args are
        # neither text nor an object: TypeError or ValueError from ``args_as_json_str``)
        # goes to the model as it is; its own request building judges it.
        try:
            canonical = to_canonical(history)
        except (TypeError, ValueError) as exc:
            return unread(history, exc, "history")
        extra = [{"role": "system", "content": instructions}] if instructions else []
        sent = [*extra, *canonical]
        key = self.key(ctx) if self.key else None
        out = self.conversations.before(key, sent, tools)
        if out is sent:
            return history
        return from_canonical(out[len(extra) :] if extra else out, canonical, history)


def history_processor(
    manager: Any = None,
    *,
    tools: Sequence[ToolSchema] | None = None,
    key: KeyFn | None = None,
    **settings: Any,
) -> Callable[[RunContext[Any], list[ModelMessage]], list[ModelMessage]]:
    """A history processor keeping the run inside the window (see the module docstring).

    Args:
        manager / settings: as :class:`~windowkeeper.integrations._common.Conversations`
            (a ContextManager, ``compressor=``, ``context_length=``, ``config`` ...).
        tools: the agent's tool schemas (OpenAI function format), counted in the window.
        key: the conversation a run belongs to (e.g. ``lambda ctx: ctx.deps.user_id``);
            without it one processor is one conversation.
    """
    compactor = _Compactor(manager, key, settings)
    schemas = list(tools) if tools else None

    def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return compactor.compact(ctx, messages, schemas)

    process.compactor = compactor  # type: ignore[attr-defined]  # for status and tests
    return process


class WindowkeeperCapability(AbstractCapability[Any]):
    """Pydantic AI 2.x capability: :func:`history_processor` that also counts the
    request's tool definitions and instructions (same settings)."""

    def __init__(self, manager: Any = None, *, key: KeyFn | None = None, **settings: Any):
        self.compactor = _Compactor(manager, key, settings)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        parameters = request_context.model_request_parameters
        tools: list[ToolSchema] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or "",
                    "parameters": tool.parameters_json_schema,
                },
            }
            for tool in [*parameters.function_tools, *parameters.output_tools]
        ]
        instructions = "\n\n".join(p.content for p in parameters.instruction_parts or [])
        history = list(request_context.messages)
        out = self.compactor.compact(ctx, history, tools, instructions or None)
        if out is not history:
            request_context.messages = list(out)
            ctx.messages[:] = out  # persistent: the run continues from the compaction
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds live objects; not spec-serializable


# --- Pydantic AI messages -> canonical --------------------------------------------------


def to_canonical(history: Sequence[ModelMessage]) -> list[Message]:
    """Canonical messages for a Pydantic AI history; each remembers its origin."""
    out: list[Message] = []
    for index, message in enumerate(history):
        if isinstance(message, ModelResponse):
            out.append(_assistant(message, index))
            continue
        for number, part in enumerate(message.parts):
            converted = _request_part(part)
            if converted is not None:
                out.append({**converted, _ORIGIN: (index, number)})
    return out


def _request_part(part: ModelRequestPart) -> Message | None:
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        if isinstance(part.content, str):
            return {"role": "user", "content": part.content}
        texts = [c if isinstance(c, str) else f"[{type(c).__name__}]" for c in part.content]
        return {"role": "user", "content": "\n".join(texts)}
    if isinstance(part, BaseToolReturnPart):
        result = part.model_response_str()
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": result}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is None:
            return {"role": "user", "content": part.model_response()}
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
    content = getattr(part, "content", None)
    return {"role": "user", "content": content if isinstance(content, str) else str(part)}


def _assistant(message: ModelResponse, index: int) -> Message:
    texts = [p.content for p in message.parts if isinstance(p, TextPart)]
    calls = [
        {
            "id": p.tool_call_id,
            "type": "function",
            "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
        }
        for p in message.parts
        if isinstance(p, BaseToolCallPart)
    ]
    other = [p for p in message.parts if not isinstance(p, TextPart | BaseToolCallPart)]
    out: Message = {
        "role": "assistant",
        "content": "\n\n".join(texts) or None,
        _ORIGIN: (index, None),
    }
    if calls:
        out["tool_calls"] = calls
    if other:
        out[_OTHER] = other
    return out


# --- canonical -> Pydantic AI messages --------------------------------------------------


def from_canonical(
    out: Sequence[Message], canonical: Sequence[Message], history: Sequence[ModelMessage]
) -> list[ModelMessage]:
    """The compacted list as Pydantic AI messages: untouched parts and messages are the
    original objects, the rest new parts (tool names found from their calls)."""
    untouched = {id(m) for m in canonical}
    names = {call_id(c): call_name(c) for m in out for c in tool_calls(m)}
    result: list[ModelMessage] = []
    pending: list[tuple[ModelRequestPart, tuple[int, int] | None]] = []
    for message in out:
        origin = message.get(_ORIGIN) if id(message) in untouched else None
        if message.get("role") == "assistant":
            _flush(pending, history, result)
            result.append(history[origin[0]] if origin else _response(message))
        else:
            pending.append(
                (history[origin[0]].parts[origin[1]] if origin else _part(message, names), origin)
            )
    _flush(pending, history, result)
    return result


def _flush(
    pending: list[tuple[ModelRequestPart, tuple[int, int] | None]],
    history: Sequence[ModelMessage],
    result: list[ModelMessage],
) -> None:
    """One request of the pending parts: the original request when they are all of it."""
    if not pending:
        return
    parts = [part for part, _ in pending]
    sources = {origin[0] for _, origin in pending if origin is not None}
    whole = len(sources) == 1 and all(origin is not None for _, origin in pending)
    original = history[next(iter(sources))] if whole else None
    if isinstance(original, ModelRequest) and list(original.parts) == parts:
        result.append(original)
    else:
        result.append(ModelRequest(parts=parts))
    pending.clear()


def _part(message: Message, names: dict[str, str]) -> ModelRequestPart:
    role, content = message.get("role"), message.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    if role == "tool":
        identifier = str(message.get("tool_call_id"))
        return ToolReturnPart(
            tool_name=names.get(identifier, "tool"), content=text, tool_call_id=identifier
        )
    if role in ("system", "developer"):
        return SystemPromptPart(content=text)
    return UserPromptPart(content=text)


def _response(message: Message) -> ModelResponse:
    parts: list[ModelResponsePart] = list(message.get(_OTHER) or [])
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append(TextPart(content=content))
    parts += [
        ToolCallPart(tool_name=call_name(c), args=call_arguments(c), tool_call_id=call_id(c))
        for c in tool_calls(message)
    ]
    return ModelResponse(parts=parts)
