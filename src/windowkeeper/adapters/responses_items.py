"""What a Responses input item is, and whether it is well formed (see :mod:`.responses`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import one_of

SYSTEM_ROLES = frozenset({"system", "developer"})
CALLS = frozenset({"function_call", "custom_tool_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def item_kind(item: Mapping[str, Any], where: str) -> str:
    """``system`` / ``user`` / ``model`` / ``output`` / ``input``: what an item is."""
    kind = item.get("type", "message")
    if not isinstance(kind, str):
        raise InvalidMessagesError(where, "an item's 'type' must be a string")
    if kind == "message":
        role = item.get("role")
        if role == "assistant":
            return "model"
        if one_of(role, SYSTEM_ROLES):
            return "system"
        if role == "user":
            return "user"
        raise InvalidMessagesError(where, f"message role must be user, assistant, system or "
                                   f"developer, got {role!r}")  # fmt: skip
    if kind in OUTPUTS:
        return "output" if isinstance(item.get("call_id"), str) else "input"
    if kind == "item_reference" or kind.endswith(("_output", "_response")):
        return "input"
    return "model"  # reasoning, calls, and whatever else a model emits


def checked_item(item: object, where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise InvalidMessagesError(where, "expected an item object")
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):  # nor hashable, when a list or object
        raise InvalidMessagesError(where, "an item's 'type' must be a string")
    if kind in CALLS:
        payload = "arguments" if kind == "function_call" else "input"
        if not (_nonempty(item.get("call_id")) and isinstance(item.get("name"), str)
                and isinstance(item.get(payload), str)):  # fmt: skip
            raise InvalidMessagesError(
                where, f"a {kind} needs a string 'call_id', 'name' and '{payload}'"
            )
    elif kind in OUTPUTS:
        if "call_id" in item and not _nonempty(item.get("call_id")):
            raise InvalidMessagesError(where, f"a {kind} needs a non-empty string 'call_id'")
        if not isinstance(item.get("output"), str | list):
            raise InvalidMessagesError(where, f"a {kind} needs an 'output' string or list")
    elif kind in (None, "message"):
        content = item.get("content")
        if not isinstance(content, str | list):
            raise InvalidMessagesError(where, "message content must be a string or a list")
        for number, part in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                raise InvalidMessagesError(where, f"content part {number} needs a string 'type'")
    return item


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value)
