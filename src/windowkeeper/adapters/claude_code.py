"""Claude Code session transcripts (``~/.claude/projects/**/*.jsonl``) -> canonical messages.

Claude Code writes one JSON event a line. Only ``user`` and ``assistant`` events carry
conversation (an Anthropic Messages ``message``); the rest (``progress``, ``system``
notices such as ``compact_boundary``, ``file-history-snapshot``, ``queue-operation``,
``summary`` titles) are bookkeeping and are skipped. What the reader must undo:

- One API response is streamed as several lines, one content block each, sharing
  ``message.id``; tool results of parallel calls may be written between them. Blocks of
  one id are gathered into one assistant turn, in file order.
- ``parentUuid`` is not a usable chain: parallel tool calls fork it and a compaction
  restarts it, so the transcript is read in file order.
- Sidechain events (``isSidechain``) in a main session are a sub-agent's own
  conversation and are left out; a sub-agent's transcript (every event a sidechain) is
  read as its own conversation.
- Claude Code's own compaction summary (``isCompactSummary``) stays where it is, as the
  user message the model saw; everything before it is kept too, so a replay sees the
  whole session.
- Synthetic user notes (interruptions, local-command caveats, meta text) sit next to
  real user text; adjacent same-role turns are merged so roles alternate. Whitespace-only
  assistant text blocks are dropped, text-only part lists become strings, and
  ``thinking`` blocks are kept only in the in-process ``_anthropic_thinking`` key (as
  :mod:`windowkeeper.adapters.anthropic` does), so they are never written out.

- Results of parallel calls are written as the tools finish; they are put back in call
  order.

Tool-call ids are the transcript's ``tool_use`` ids, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.invariants import group_end
from ..core.jsonsafe import one_of
from ..core.messages import Conversation, Message, call_id, tool_calls
from .anthropic import THINKING_KEY, from_anthropic
from .jsonl import json_objects
from .turns import merge_adjacent

_EVENT_KEYS = frozenset({"uuid", "sessionId", "leafUuid", "parentUuid"})
_MESSAGE_EVENTS = frozenset({"user", "assistant"})
_SYNTHETIC_MODEL = "<synthetic>"


def looks_like_claude_code(value: object) -> bool:
    """True for a Claude Code transcript event (one parsed line)."""
    return (
        isinstance(value, Mapping)
        and "role" not in value
        and isinstance(value.get("type"), str)
        and bool(_EVENT_KEYS & value.keys())
    )


def parse_claude_code(text: str) -> Conversation:
    """The conversation of a Claude Code transcript (see the module docstring)."""
    events = [event for _, event in json_objects(text, "a Claude Code event")]
    messages = [e for e in events if one_of(e.get("type"), _MESSAGE_EVENTS) and _has_message(e)]
    main = [e for e in messages if not e.get("isSidechain")]
    turns = _turns(main or messages)
    converted = from_anthropic(None, turns)
    tidied = merge_adjacent([_tidy(m) for m in converted])
    kept = [m for m in tidied if not _empty(m)]
    return Conversation(_results_in_call_order(kept), model=_model(messages))


def _has_message(event: Mapping[str, Any]) -> bool:
    message = event.get("message")
    return isinstance(message, Mapping) and one_of(message.get("role"), _MESSAGE_EVENTS)


def _turns(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic turns: the blocks of one assistant ``message.id`` gathered in one turn."""
    turns: list[dict[str, Any]] = []
    by_id: dict[str, int] = {}
    for event in events:
        message = event["message"]
        role = message["role"]
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = list(content)
        else:
            continue
        identifier = message.get("id") if role == "assistant" else None
        if isinstance(identifier, str) and identifier in by_id:
            turns[by_id[identifier]]["content"].extend(blocks)
            continue
        if isinstance(identifier, str):
            by_id[identifier] = len(turns)
        turns.append({"role": role, "content": blocks})
    return turns


def _is_plain_text(part: object) -> bool:
    return (
        isinstance(part, Mapping) and part.get("type") == "text" and set(part) == {"type", "text"}
    )


def _tidy(message: Message) -> Message:
    """Whitespace-only assistant text dropped; a list of plain text parts as one string."""
    content = message.get("content")
    if not isinstance(content, list) or message.get("role") == "tool":
        return message
    parts = content
    if message.get("role") == "assistant":
        parts = [p for p in parts if not (_is_plain_text(p) and not str(p["text"]).strip())]
    if all(_is_plain_text(p) for p in parts):
        text = "\n\n".join(str(p["text"]) for p in parts)
        new_content: Any = text if text or message.get("role") != "assistant" else None
        return {**message, "content": new_content}
    return message if parts is content else {**message, "content": parts}


def _results_in_call_order(messages: list[Message]) -> list[Message]:
    """Results of parallel calls, written as they finished, put back in call order."""
    out = list(messages)
    for index, message in enumerate(messages):
        order = {call_id(c): n for n, c in enumerate(tool_calls(message))}
        if len(order) < 2:
            continue
        end = group_end(messages, index)
        group = sorted(
            messages[index + 1 : end], key=lambda m: order.get(m["tool_call_id"], len(order))
        )
        out[index + 1 : end] = group
    return out


def _empty(message: Message) -> bool:
    """A turn with nothing in it (e.g. an assistant turn that was only whitespace)."""
    return (
        message.get("role") in _MESSAGE_EVENTS
        and message.get("content") in (None, "", [])
        and not message.get("tool_calls")
        and not message.get(THINKING_KEY)
    )


def _model(events: Sequence[Mapping[str, Any]]) -> str | None:
    """The newest real model named by an assistant event."""
    for event in reversed(events):
        model = event["message"].get("model")
        assistant = event["message"].get("role") == "assistant"
        if assistant and isinstance(model, str) and model and model != _SYNTHETIC_MODEL:
            return model
    return None
