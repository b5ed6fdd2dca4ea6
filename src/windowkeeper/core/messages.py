"""OpenAI-format messages: the canonical shape, validation and reading from files.

Messages are plain dicts (design §1). Validation runs once at the edge; everything
inside the package may then rely on the shape checked here. Defects that can be
repaired (a tool result whose call is gone, a call without a result) are not errors
here: the sanitizer repairs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .errors import InvalidMessagesError
from .jsonsafe import MAX_JSON_DEPTH, check_depth, dumps, loads_or_none, value_depth_exceeds

Message: TypeAlias = dict[str, Any]
ToolSchema: TypeAlias = dict[str, Any]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})
IN_PLACE_KEY = "_in_place"
"""Private key: ``True`` on a system message that stands between turns where the client
sent it (an Anthropic mid-conversation system message). It is an instruction like the
system prompt: compaction keeps it verbatim, never summarizes it (core/invariants.py)."""


def is_in_place_instruction(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "system" and message.get(IN_PLACE_KEY) is True


@dataclass(frozen=True)
class Conversation:
    """A conversation read from a file: messages plus the request's tools and model, if any."""

    messages: list[Message]
    tools: list[ToolSchema] | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --- content helpers -------------------------------------------------------------------


def is_image_part(part: object) -> bool:
    """True for an OpenAI ``image_url``, Responses ``input_image`` or Anthropic ``image`` part."""
    # Called for every part of every message: plain dicts skip the ABC check, and a type
    # that is not a string (a list, from hostile input) cannot be hashed into the set.
    if type(part) is not dict and not isinstance(part, Mapping):
        return False
    kind = part.get("type")
    return isinstance(kind, str) and kind in IMAGE_PART_TYPES


def content_text(content: object) -> str:
    """The text of a message content: the string itself, or the text parts joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping):
                value = part.get("text")
                if isinstance(value, str):
                    texts.append(value)
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return ""


def message_text(message: Mapping[str, Any]) -> str:
    """The text content of a message (tool calls not included)."""
    return content_text(message.get("content"))


def image_count(message: Mapping[str, Any]) -> int:
    """Number of image parts in a message's content."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for part in content if is_image_part(part))


def tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message's tool calls (empty for non-assistant messages or none)."""
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return []
    return [call for call in calls if isinstance(call, dict)]


def call_id(call: Mapping[str, Any]) -> str:
    value = call.get("id")
    return value if isinstance(value, str) else ""


def call_name(call: Mapping[str, Any]) -> str:
    function = call.get("function")
    # A plain dict first: the ABC check costs many times a type check, per call.
    if type(function) is dict or isinstance(function, Mapping):
        name = function.get("name")
        if isinstance(name, str):
            return name
    return "tool"


def call_arguments(call: Mapping[str, Any]) -> str:
    function = call.get("function")
    if type(function) is dict or isinstance(function, Mapping):
        args = function.get("arguments")
        if isinstance(args, str):
            return args
    return ""


def parsed_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments parsed as a JSON object, or ``{}`` when they are not one.

    Arguments nested deeper than :data:`~windowkeeper.core.jsonsafe.MAX_JSON_DEPTH` count
    as text that is not JSON (never parsed into a value a recursive walk could choke on).
    """
    value = loads_or_none(call_arguments(call) or "{}")
    return value if isinstance(value, dict) else {}


def strip_private_keys(message: Mapping[str, Any]) -> Message:
    """A copy without the in-process ``_`` metadata keys (design §1)."""
    return {key: value for key, value in message.items() if not key.startswith("_")}


# --- validation ------------------------------------------------------------------------


def _parts_defect(parts: list[Any]) -> str | None:
    for number, part in enumerate(parts):
        if isinstance(part, str):
            continue
        # A plain dict first: the ABC check costs many times a type check, per part.
        if not (type(part) is dict or isinstance(part, Mapping)) or not isinstance(
            part.get("type"), str
        ):
            return f"content part {number} must be an object with a string 'type'"
    return None


def _calls_defect(calls: object) -> str | None:
    if not isinstance(calls, list):
        return f"'tool_calls' must be a list, got {_kind(calls)}"
    for number, call in enumerate(calls):
        if not (type(call) is dict or isinstance(call, Mapping)):
            return f"tool call {number} must be an object, got {_kind(call)}"
        if not isinstance(call.get("id"), str) or not call.get("id"):
            return f"tool call {number} has no string 'id'"
        function = call.get("function")
        if not (type(function) is dict or isinstance(function, Mapping)):
            return f"tool call {number} has no 'function' object"
        if not isinstance(function.get("name"), str):
            return f"tool call {number} function has no string 'name'"
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            return f"tool call {number} arguments must be a JSON string, got {_kind(arguments)}"
    return None


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def input_defect(message: object) -> str | None:
    """What makes ``message`` unusable to the engine, or ``None``.

    Looser than :func:`validate_message`, and cheap: the engine takes what library callers
    pass without a full validation (tool pairing it repairs, depth it bounds itself), but
    it relies on these shapes, so anything else is refused with a line that says so
    instead of failing somewhere inside a pass. Runs once per message a compressor or a
    manager first sees, so the common case (plain dicts and strings) takes type checks
    only.
    """
    if not isinstance(message, dict):
        return f"expected a message object, got {_kind(message)}"
    get = message.get
    if not isinstance(get("role"), str):
        return "message has no string 'role'"
    content = get("content")
    if content is not None and type(content) is not str:
        defect = _content_defect(content)
        if defect is not None:
            return defect
    calls = get("tool_calls")
    if calls is not None and not (
        type(calls) is list and all(type(c) is dict or isinstance(c, Mapping) for c in calls)
    ):
        return "'tool_calls' must be a list of objects"
    call = get("tool_call_id")
    if call is not None and not isinstance(call, str):
        return "'tool_call_id' must be a string"
    return None


def _content_defect(content: object) -> str | None:
    if not isinstance(content, list):
        return f"content must be a string, null or a list of parts, got {_kind(content)}"
    # Plain dicts first: an ABC check costs many times a type check, per part.
    if not all(type(p) is dict or isinstance(p, str | Mapping) for p in content):
        return "content parts must be objects (or strings)"
    return None


def check_input(messages: object, label: str = "message") -> None:
    """Refuse a list the engine cannot take (see :func:`input_defect`), naming the first
    unusable message."""
    if not isinstance(messages, list | tuple):
        raise InvalidMessagesError("input", f"messages must be a list, got {_kind(messages)}")
    for index, message in enumerate(messages):
        check_message(message, f"{label} {index}")


def check_message(message: object, where: str) -> None:
    """Refuse one message the engine cannot take (see :func:`input_defect`)."""
    defect = input_defect(message)
    if defect is not None:
        raise InvalidMessagesError(
            where,
            f"{defect}; pass OpenAI-style chat messages (validate_messages names each defect)",
        )


def validate_message(message: object, where: str) -> Message:
    """Check one message's shape; return it typed, or raise :class:`InvalidMessagesError`.

    A message whose arrays and objects nest more than ``MAX_JSON_DEPTH`` (100) levels is
    refused (tool-call arguments are text and are not counted).
    """
    if not isinstance(message, dict):
        raise InvalidMessagesError(where, f"expected a message object, got {_kind(message)}")
    check_depth(message, where, limit=MAX_JSON_DEPTH)
    return _validate_shape(message, where)


def _validate_shape(message: dict[str, Any], where: str) -> Message:
    defect = _shape_defect(message)
    if defect is not None:
        raise InvalidMessagesError(where, defect)
    return message


def _shape_defect(message: dict[str, Any]) -> str | None:
    """What :func:`validate_message` refuses in a message's shape, or ``None``; the
    location is named by the caller, only for a defect (a list's messages are checked
    without making a location string for each)."""
    role = message.get("role")
    if not isinstance(role, str):
        return "message has no string 'role'"
    if role not in ROLES:
        return f"unknown role {role!r} (expected one of: {', '.join(sorted(ROLES))})"
    content = message.get("content")
    if isinstance(content, list):
        defect = _parts_defect(content)
        if defect is not None:
            return defect
    elif content is not None and not isinstance(content, str):
        return f"content must be a string, null or a list of parts, got {_kind(content)}"
    tool_call_id = message.get("tool_call_id")
    if role == "tool":
        if not isinstance(tool_call_id, str) or not tool_call_id:
            return "tool message without 'tool_call_id'"
    elif tool_call_id is not None and not isinstance(tool_call_id, str):
        # What validation passes the engine must take (input_defect refuses this): a
        # gateway request once reached the estimate with it and failed there (a 500).
        return "'tool_call_id' must be a string"
    if "tool_calls" in message and message["tool_calls"] is not None:
        if role != "assistant":
            return f"'tool_calls' on a {role} message"
        return _calls_defect(message["tool_calls"])
    return None


def validate_messages(
    messages: object, *, label: str = "message", bounded_depth: bool = True, first: int = 0
) -> list[Message]:
    """Validate a whole message list (``label`` names positions in errors, counted from
    ``first``: the list may be the tail of a longer one).

    ``bounded_depth``: refuse messages nested more than ``MAX_JSON_DEPTH`` levels (one walk
    over the list, ~1.5 µs a message); pass ``False`` only for messages whose depth is
    known to be bounded (a parse that bounded it, :func:`windowkeeper.core.jsonsafe.loads`,
    or a walk of the caller's).
    """
    if not isinstance(messages, list):
        raise InvalidMessagesError("input", f"'messages' must be a list, got {_kind(messages)}")
    if bounded_depth and value_depth_exceeds(messages, MAX_JSON_DEPTH + 1):  # then find which
        for index, message in enumerate(messages, first):
            check_depth(message, f"{label} {index}", limit=MAX_JSON_DEPTH)
    for index, message in enumerate(messages, first):
        if not isinstance(message, dict):
            defect: str | None = f"expected a message object, got {_kind(message)}"
        else:
            defect = _shape_defect(message)
        if defect is not None:
            raise InvalidMessagesError(f"{label} {index}", defect)
    return list(messages)


_SYSTEM_ROLES = ("system", "developer")


def conversation_warnings(messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """One line for each defect of a valid conversation that is worth telling its owner.

    A system message after the conversation started (a compaction summarizes it like any
    other turn, and providers that want the system prompt first reject it), and a
    conversation without any user message (nothing says what the model is to do). The
    library (``ContextManager`` events) and the CLI (``warning:`` lines) say the same.
    """
    found: list[str] = []
    started = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in _SYSTEM_ROLES:
            started = True
        elif started and not is_in_place_instruction(message):
            found.append(
                f"message {index}: a {role} message after the conversation started; a "
                "compaction summarizes it like any other turn, and providers that want the "
                "system prompt first reject it: move it to the start or send it as a user "
                "message"
            )
            break
    if messages and not any(m.get("role") == "user" for m in messages):
        found.append(
            "the conversation has no user message: nothing says what the model is to do, "
            "and a compaction has no request to keep; add the task as a user message"
        )
    return tuple(found)


# --- reading ---------------------------------------------------------------------------


def to_json(value: object) -> str:
    """Compact-enough JSON text that always encodes as UTF-8.

    Readable (non-ASCII kept as is) unless the value holds a lone surrogate (half an
    emoji cut by some client): that text is escaped instead, which round-trips exactly.
    """
    text = dumps(value, ensure_ascii=False)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return dumps(value)
    return text


def safe_text(text: str) -> str:
    """``text`` with lone surrogates replaced, for places that need valid UTF-8 only."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def dump_jsonl(messages: Iterable[Mapping[str, Any]]) -> str:
    """Messages as JSONL, without in-process ``_`` keys."""
    return "".join(to_json(strip_private_keys(m)) + "\n" for m in messages)


def roles(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(m.get("role")) for m in messages]
