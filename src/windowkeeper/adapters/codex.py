"""Codex rollout transcripts (``~/.codex/sessions/**/rollout-*.jsonl``) -> canonical messages.

A rollout line is ``{"timestamp", "type", "payload"}``:

- ``response_item``: a Responses API item the model saw or produced (messages,
  ``function_call`` / ``function_call_output``, ``custom_tool_call``, ``reasoning``...).
  These are the conversation; they are converted by :mod:`windowkeeper.adapters.responses`
  (the same conversion the gateway's ``/v1/responses`` uses), so tool-call ids
  (``call_id``) and every item field are kept.
- Codex sends several user-role items in a row (permissions, environment context, the
  prompt): adjacent same-role turns are merged so roles alternate; a merged message no
  longer stands for one item, so it drops its item reference and is written anew by
  :func:`~windowkeeper.adapters.responses.to_responses` (every other message gives back
  its very items).
- ``compacted``: Codex's own compaction; its summary (``payload.message``) becomes a user
  message at that point, as Codex hands it to the model. Everything before it is kept
  too, so a replay sees the whole session.
- ``session_meta`` (its ``instructions``, when present, become the system prompt),
  ``turn_context`` (the model), ``event_msg`` (UI events that repeat the items) and
  ``ghost_snapshot`` items (undo snapshots, never sent) carry no conversation.

The older rollout layout (a first line with ``id``/``timestamp``/``instructions``, then
bare items, and ``record_type`` state lines) is read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import one_of
from ..core.messages import Conversation
from .jsonl import json_objects
from .responses import ITEMS_KEY, from_responses
from .turns import merge_adjacent

__all__ = ("looks_like_codex", "parse_codex", "rollout_items")

_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_SKIPPED_ITEMS = frozenset({"ghost_snapshot"})


def looks_like_codex(value: object) -> bool:
    """True for a Codex rollout line (one parsed line), current or older layout."""
    if not isinstance(value, Mapping) or "role" in value:
        return False
    if one_of(value.get("type"), _LINE_TYPES) and "payload" in value:
        return True
    return "record_type" in value or {"id", "timestamp", "instructions"} <= value.keys()


def rollout_items(text: str) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """The Responses items of a rollout in order (a compaction summary as a user message
    item), its instructions and its model."""
    items: list[dict[str, Any]] = []
    instructions: str | None = None
    model: str | None = None
    for number, value in json_objects(text, "a Codex rollout"):
        kind, payload = value.get("type"), value.get("payload")
        if kind == "session_meta" or (number == 1 and "instructions" in value):
            meta = payload if isinstance(payload, Mapping) else value
            given = meta.get("instructions")
            instructions = given if isinstance(given, str) and given.strip() else instructions
        elif kind == "turn_context" and isinstance(payload, Mapping):
            model = payload.get("model") if isinstance(payload.get("model"), str) else model
        elif kind == "compacted" and isinstance(payload, Mapping):
            items.append(_summary_item(payload, number))
        elif kind == "response_item" and isinstance(payload, dict):
            if not one_of(payload.get("type"), _SKIPPED_ITEMS):
                items.append(payload)
        elif _bare_item(value):
            items.append(value)  # the older layout: a bare item
    return items, instructions, model


def _bare_item(value: Mapping[str, Any]) -> bool:
    kind = value.get("type")
    if kind is None or "payload" in value or "record_type" in value:
        return False
    return not one_of(kind, _SKIPPED_ITEMS) and not one_of(kind, _LINE_TYPES)


def _summary_item(payload: Mapping[str, Any], number: int) -> dict[str, Any]:
    message = payload.get("message")
    if not isinstance(message, str):
        raise InvalidMessagesError(f"line {number}", "compacted line without a 'message' text")
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": message}]}


def parse_codex(text: str) -> Conversation:
    """The conversation of a Codex rollout (see the module docstring)."""
    items, instructions, model = rollout_items(text)
    messages = merge_adjacent(from_responses(items, instructions), drop=(ITEMS_KEY,))
    return Conversation(messages, model=model)
