"""OpenAI Responses API items <-> canonical OpenAI chat messages (design §1, §12).

:func:`from_responses` turns a Responses ``input`` (a string or a list of items, e.g. the
OpenAI Agents SDK's ``TResponseInputItem`` dicts) and ``instructions`` into canonical
messages; :func:`to_responses` gives back ``(instructions, items)``. Lossless for what is
not compacted: each message keeps the caller's own item objects under the private
:data:`ITEMS_KEY` (never copied or modified; ``_`` keys never reach a provider, design §1),
and :func:`to_responses` emits those very objects while the message still says what they
say — unknown types and fields, reasoning with ``encrypted_content``, ids, ``phase``…
survive unchanged; ``to_responses(from_responses(input, instructions))`` returns
``instructions`` and the items themselves.

Mapping (one canonical message per item, except a model turn):

- ``instructions`` <-> a leading ``system`` message marked with :data:`INSTRUCTIONS_KEY`;
  leading ``system`` / ``developer`` items <-> such messages, later ones <-> ``user``.
- ``user`` message items <-> ``user`` messages; ``input_text`` / ``output_text`` parts <->
  ``text`` parts; other parts (``input_image``, ``input_file``…) stay as they are.
- a run of model output items (assistant ``message``, ``reasoning``, ``function_call``,
  ``custom_tool_call``, any other item a model emits, e.g. ``web_search_call``) <-> one
  ``assistant`` message: text as content (a lone text part as a string), calls as
  ``tool_calls`` (``call_id`` -> ``id``; a custom call's ``input`` -> ``arguments``),
  other items as opaque :data:`OPAQUE_PART` parts; reasoning only in the private key.
- ``function_call_output`` / ``custom_tool_call_output`` <-> ``tool`` messages; any other
  input item (``computer_call_output``, ``item_reference``…) <-> a ``user`` message whose
  content is one opaque part.

A changed message is rebuilt: parts and calls that did not change keep their original
items, changed ones are written anew. A changed model turn loses its reasoning items and
every id (the API rejects reasoning whose following item is missing or altered, and an
id names the original content); opaque items are always emitted as they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from ..core.errors import InvalidMessagesError
from ..core.jsonsafe import one_of
from ..core.messages import Message, content_text
from .made import Made
from .responses_items import CALLS as _CALLS
from .responses_items import OUTPUTS as _OUTPUTS
from .responses_items import SYSTEM_ROLES as _SYSTEM_ROLES
from .responses_items import checked_item, item_kind

Item: TypeAlias = dict[str, Any]

ITEMS_KEY = "_responses_items"
"""Private key: the list of original input items a canonical message was made from."""
INSTRUCTIONS_KEY = "_responses_instructions"
"""Private key: ``True`` on the system message that carries ``instructions``."""
OPAQUE_PART = "responses_item"
"""Content part type wrapping an item with no canonical meaning: ``{"type", "item"}``."""

_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


# --- Responses -> canonical -----------------------------------------------------------------


def from_responses(
    input: str | Sequence[Mapping[str, Any]] | None, instructions: object = None
) -> list[Message]:
    """Canonical messages for a Responses ``input`` and ``instructions``.

    Raises :class:`InvalidMessagesError` for input that is not a string or a list of item
    objects, a message without a valid role or content, or a call / call output without
    its required fields. ``instructions`` must be a string or ``None``.
    """
    out: list[Message] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise InvalidMessagesError("instructions", "must be a string")
        out.append({"role": "system", "content": instructions, INSTRUCTIONS_KEY: True})
    if input is None:
        return out
    if isinstance(input, str):
        return [*out, _message_from({"role": "user", "content": input}, "user", leading=False)]
    if not isinstance(input, Sequence):
        raise InvalidMessagesError("input", "must be a string or a list of items")
    items: Sequence[Mapping[str, Any]] = input  # type: ignore[assignment]  # str returned above
    messages, _ = from_items(items, leading=True)
    return out + messages


def from_items(
    items: Sequence[Mapping[str, Any]], start: int = 0, *, leading: bool = True
) -> tuple[list[Message], list[int]]:
    """Canonical messages for ``items[start:]`` and, for each, the index after its last
    item (for converting a history incrementally); ``leading``: only system messages
    precede ``items[start]``."""
    out: list[Message] = []
    ends: list[int] = []
    run: list[Mapping[str, Any]] = []
    for index in range(start, len(items)):
        item = checked_item(items[index], f"item {index}")
        kind = item_kind(item, f"item {index}")
        if kind == "model":
            run.append(item)
            continue
        if run:
            out.append(model_turn(run))
            ends.append(index)
            run = []
        leading = leading and all(m.get("role") in _SYSTEM_ROLES for m in out)
        out.append(_message_from(item, kind, leading=leading))
        ends.append(index + 1)
    if run:
        out.append(model_turn(run))
        ends.append(len(items))
    return out, ends


def _message_from(item: Mapping[str, Any], kind: str, *, leading: bool) -> Message:
    if kind == "output":
        content = item.get("output")
        return {
            "role": "tool",
            "tool_call_id": item["call_id"],
            "content": _parts_from(content) if isinstance(content, list) else content,
            ITEMS_KEY: [item],
        }
    if kind == "input":
        return {"role": "user", "content": [_opaque(item)], ITEMS_KEY: [item]}
    role = str(item.get("role", "user"))
    if kind == "system" and not leading:
        role = "user"
    content = item.get("content")
    converted = _parts_from(content) if isinstance(content, list) else content
    return {"role": role, "content": converted, ITEMS_KEY: [item]}


def model_turn(items: Sequence[Mapping[str, Any]]) -> Message:
    """The assistant message for one run of model output items (see the module doc)."""
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, str):
                parts.append({"type": "text", "text": content})
            elif isinstance(content, list):
                parts.extend(_parts_from(content))
        elif kind in _CALLS:
            payload = item["arguments"] if kind == "function_call" else item["input"]
            calls.append({"id": item["call_id"], "type": "function",
                          "function": {"name": item["name"], "arguments": payload}})  # fmt: skip
        elif kind != "reasoning":
            parts.append(_opaque(item))
    message: Message = {"role": "assistant", "content": _turn_content(parts)}
    if calls:
        message["tool_calls"] = calls
    message[ITEMS_KEY] = list(items)
    return message


def _turn_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]] | None:
    if not parts:
        return None
    text = parts[0].get("text")
    if len(parts) == 1 and parts[0].get("type") == "text" and isinstance(text, str):
        return text  # a text part without its text stays a part (validation names it)
    return parts


def _parts_from(parts: Sequence[Any]) -> list[Any]:
    return [_part_from(part) for part in parts]


def _part_from(part: Any) -> Any:
    if isinstance(part, Mapping) and one_of(part.get("type"), _TEXT_PARTS):
        text = part.get("text")
        if isinstance(text, str):
            return {"type": "text", "text": text}
    return part


def _opaque(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": OPAQUE_PART, "item": item}


# --- canonical -> Responses -----------------------------------------------------------------


def to_responses(
    messages: Sequence[Mapping[str, Any]], made: Sequence[Mapping[str, Any]] = ()
) -> tuple[str | None, list[Item]]:
    """``(instructions, input items)`` for canonical messages; never modifies them.

    A message still equal to what its original items convert to yields those item
    objects themselves; a changed one is rebuilt (see the module doc); a message without
    originals (a handoff, a stub result, a list from another source) is written anew.
    ``instructions`` is the text of the leading system message marked with
    :data:`INSTRUCTIONS_KEY`, or ``None``.

    ``made``: messages :func:`from_responses` / :func:`from_items` made, none changed
    since (the gateway's conversion of the client's history). A message that is one of
    those very objects is its items' conversion as it was made, so its items are sent
    without converting them again to compare; a changed copy (which shares its items
    list) with the same role is compared with what the conversion made instead of a new
    conversion.
    """
    instructions: str | None = None
    items: list[Item] = []
    custom: set[str] = set()
    pristine = Made(made, ITEMS_KEY)
    for message in messages:
        if message.get(INSTRUCTIONS_KEY) and instructions is None and not items:
            instructions = content_text(message.get("content"))
            continue
        emitted = message_items(message, custom, pristine)
        for item in emitted:
            if item.get("type") == "custom_tool_call":
                custom.add(str(item.get("call_id")))
        items.extend(emitted)
    return instructions, items


def message_items(
    message: Mapping[str, Any], custom: set[str] | None = None, made: Made | None = None
) -> list[Item]:
    """The input items for one canonical message (``custom``: call ids of custom tool
    calls emitted so far, which decide the type of a new tool result; ``made``: as for
    :func:`to_responses`)."""
    record = message.get(ITEMS_KEY)
    originals = list(record) if isinstance(record, list) else []
    if originals and _unchanged(message, originals, made.derived(record) if made else ()):
        return originals
    role = message.get("role")
    if role == "assistant":
        return _rebuild_turn(message, originals)
    first = originals[0] if originals else None
    if role == "tool":
        return [_tool_item(message, first, custom or set())]
    if first is not None and first.get("type", "message") == "message":
        base = {k: v for k, v in first.items() if k != "id"}
        return [{**base, "content": _parts_to(message.get("content"))}]
    units = [([_opaque(first)], first)] if first is not None else []
    system = role if role in _SYSTEM_ROLES else "user"
    return _aligned(_content_parts(message), units, lambda run: _new_items(run, system))


def _unchanged(
    message: Mapping[str, Any], originals: list[Any], made: Sequence[Mapping[str, Any]]
) -> bool:
    """True when ``message`` is exactly what its originals convert to (private keys
    aside). ``made``: what the conversion made from them (or nothing), which is what they
    convert to when it has the message's role (the role decides how a system item
    converts: a leading one keeps its role, a later one is a user message)."""
    role = message.get("role")
    if made and made[0] is message:
        return True
    if made and made[0].get("role") == role:
        derived = made[0]
    elif role == "assistant":
        derived = model_turn(originals)
    else:
        first = originals[0]
        derived = _message_from(first, item_kind(first, "item"), leading=role in _SYSTEM_ROLES)
    return all(message.get(k) == v for k, v in derived.items() if k != ITEMS_KEY) and all(
        k in derived or k.startswith("_") for k in message
    )


def _tool_item(
    message: Mapping[str, Any], original: Mapping[str, Any] | None, custom: set[str]
) -> Item:
    call_id = str(message.get("tool_call_id", ""))
    output = _parts_to(message.get("content"))
    if output is None:
        output = ""
    if original is not None and one_of(original.get("type"), _OUTPUTS):
        base = {k: v for k, v in original.items() if k != "id"}
        return {**base, "call_id": call_id, "output": output}
    kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
    return {"type": kind, "call_id": call_id, "output": output}


def _content_parts(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _rebuild_turn(message: Mapping[str, Any], originals: list[Any]) -> list[Item]:
    """A changed model turn: kept parts and calls from their originals (without ids), the
    rest anew; reasoning is dropped (see the module doc)."""
    units: list[tuple[list[Any], Item]] = []
    for item in originals:
        kind = item.get("type", "message")
        if kind == "message":
            own = _content_parts(model_turn([item]))
            units.append((own, {k: v for k, v in item.items() if k != "id"}))
        elif kind not in _CALLS and kind != "reasoning":
            units.append(([_opaque(item)], item))
    out = _aligned(_content_parts(message), units, lambda run: _new_items(run, "assistant"))
    calls = {item.get("call_id"): item for item in originals if item.get("type") in _CALLS}
    for call in message.get("tool_calls") or ():
        out.append(_call_item(call, calls.get(call.get("id"))))
    return out


def _aligned(parts: list[Any], units: list[tuple[list[Any], Item]], new: Any) -> list[Item]:
    """Each unit's item where its parts occur (in order) in ``parts``; the parts no unit
    accounts for become ``new(run)`` items in their place."""
    out: list[Item] = []
    cursor = 0
    for own, item in units:
        at = _find(parts, own, cursor)
        if at is None:
            continue
        out.extend(new(parts[cursor:at]))
        out.append(item)
        cursor = at + len(own)
    out.extend(new(parts[cursor:]))
    return out


def _find(parts: list[Any], own: list[Any], start: int) -> int | None:
    if not own:
        return None
    for at in range(start, len(parts) - len(own) + 1):
        if parts[at : at + len(own)] == own:
            return at
    return None


def _new_items(parts: list[Any], role: str) -> list[Item]:
    """Runs of ordinary parts as new messages of ``role``, opaque parts as their own items."""
    out: list[Item] = []
    run: list[Any] = []
    for part in [*parts, None]:
        if part is not None and not (isinstance(part, Mapping) and part.get("type") == OPAQUE_PART):
            run.append(part)
            continue
        if run:
            out.append(_new_message(run, role))
            run = []
        if part is not None:
            out.append(part["item"])
    return out


def _new_message(parts: list[Any], role: str) -> Item:
    if role == "assistant":  # the plain form: a string is valid for every assistant turn
        return {"type": "message", "role": role, "content": content_text(parts)}
    return {"type": "message", "role": role, "content": _parts_to(parts)}


def _call_item(call: Mapping[str, Any], original: Mapping[str, Any] | None) -> Item:
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name, arguments = function.get("name", ""), function.get("arguments", "")
    if original is not None:
        base = {k: v for k, v in original.items() if k != "id"}
        payload = "input" if original.get("type") == "custom_tool_call" else "arguments"
        return {**base, "name": name, payload: arguments}
    return {"type": "function_call", "call_id": call.get("id"), "name": name,
            "arguments": arguments}  # fmt: skip


def _parts_to(content: object) -> Any:
    """Canonical content as Responses content: strings stay, parts are converted."""
    if not isinstance(content, list):
        return content
    return [_part_to(part) for part in content]


def _part_to(part: Any) -> Any:
    if isinstance(part, str):
        return {"type": "input_text", "text": part}
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind == "text":
        return {**part, "type": "input_text"}
    if kind == "image_url":
        value = part.get("image_url")
        url = value.get("url") if isinstance(value, Mapping) else value
        detail = value.get("detail") if isinstance(value, Mapping) else None
        return {"type": "input_image", "image_url": url, "detail": detail or "auto"}
    if kind == OPAQUE_PART:
        return part.get("item")
    return dict(part)


def item_count(message: Mapping[str, Any]) -> int:
    """How many input items a canonical message made by :func:`from_responses` stands for
    (0 for the instructions message)."""
    originals = message.get(ITEMS_KEY)
    return len(originals) if isinstance(originals, list) else 0
