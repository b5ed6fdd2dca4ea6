"""What every protocol the gateway speaks provides: one small interface, one file each.

A :class:`Protocol` turns a request body into a :class:`Parsed` request (its *units* —
chat messages, Responses items or Anthropic messages — and the canonical messages they
convert to), builds the upstream body for the messages the gateway decided to send,
reads usage from answers and streams, and writes errors in its own shape. The gateway's
flow (sessions, compaction, persistence, recall) is protocol-neutral.

JSON in and out is here too: bodies are parsed once with non-finite numbers refused (they
are not JSON, and a provider would reject or misread them) and serialized compactly.
"""

from __future__ import annotations

import abc
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ...core.errors import InvalidMessagesError
from ...core.messages import Message, ToolSchema
from ...core.optional import orjson

Target = Literal["openai", "anthropic"]


# --- JSON --------------------------------------------------------------------------------


def reject_constant(name: str) -> Any:
    """``parse_constant`` of the gateway's JSON: NaN and the infinities are refused."""
    raise InvalidMessagesError("request body", f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """``parse_float`` of the gateway's JSON: a number that overflows to infinity is
    refused (shared with :mod:`..bodytext`, whose scanners must read bodies alike)."""
    value = float(text)
    if not math.isfinite(value):
        raise InvalidMessagesError("request body", f"the number {text[:20]} is out of range")
    return value


def loads(raw: bytes) -> Any:
    """A request body; :class:`InvalidMessagesError` for invalid JSON, NaN/Infinity, numbers
    that overflow to infinity, or nesting too deep to parse."""
    try:
        return json.loads(raw, parse_constant=reject_constant, parse_float=finite_float)
    except InvalidMessagesError:
        raise
    except RecursionError:
        raise InvalidMessagesError("request body", "JSON nested too deeply") from None
    except ValueError as exc:
        raise InvalidMessagesError("request body", f"not valid JSON ({exc})") from None


# orjson writes a float below 1e-4 differently from ``repr`` ("0.00001" for "1e-05",
# "1e-7" for "1e-07"): where its output may hold one, the body is written by ``json``.
_SHORT_EXPONENT = re.compile(rb"e-\d(?!\d)")


def request_bytes(value: object) -> bytes:
    """What :func:`dumps` writes, byte for byte, written by orjson where it can: a request
    body sent upstream (design §11). What must hold: ``value`` holds no NaN or infinity
    (orjson writes them as ``null``); a request body's numbers were refused at parse when
    not finite (:func:`loads`), and windowkeeper's own messages hold no floats."""
    if orjson is not None:
        try:
            out: bytes = orjson.dumps(value)
        except TypeError:  # a lone surrogate, an integer over 64 bits, a non-str key
            return dumps(value)
        if b"0.0000" not in out and not _SHORT_EXPONENT.search(out):
            return out
    return dumps(value)


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate (half an emoji) is sent as its JSON escape."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


# --- requests ------------------------------------------------------------------------------


@dataclass
class Parsed:
    """One request: the body, its envelope, its units and (after conversion) canonical messages.

    ``system`` is what the protocol carries outside its units (Responses ``instructions``,
    Anthropic ``system``), compared as a whole when reusing an earlier conversion.
    ``continues`` names why the request cannot be compacted (``previous_response_id``).
    """

    protocol: Protocol
    raw: bytes
    body: dict[str, Any]
    model: str
    stream: bool
    units: list[Any]
    system: Any = None
    tools: list[ToolSchema] | None = None
    continues: str | None = None
    messages: list[Message] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    query: str = ""
    """The request's query string (``beta=true`` for Claude Code), forwarded as it is."""

    def upstream_path(self, suffix: str = "") -> str:
        path = self.protocol.path + suffix
        return f"{path}?{self.query}" if self.query else path

    """``ends[i]``: the unit index after canonical message ``i`` (0 for system messages)."""


def envelope(body: object) -> tuple[dict[str, Any], str]:
    """The body as an object and its model (InvalidMessagesError otherwise)."""
    if not isinstance(body, dict):
        raise InvalidMessagesError("request body", "expected a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidMessagesError("request body", "'model' must be a non-empty string")
    return body, model


def history_list(body: Mapping[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list):
        raise InvalidMessagesError(key, f"'{key}' must be a list")
    return value


def optional_tools(body: Mapping[str, Any]) -> list[ToolSchema] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InvalidMessagesError("tools", "expected an array of tool objects")
    return tools


def optional_stream(body: Mapping[str, Any]) -> bool:
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise InvalidMessagesError("stream", "expected true or false")
    return stream is True


@dataclass(frozen=True)
class RecallCall:
    call_id: str
    arguments: dict[str, Any]


class Protocol(abc.ABC):
    """One wire protocol (see the module docstring)."""

    name: ClassVar[str]
    target: ClassVar[Target]
    path: ClassVar[str]
    """The upstream path after the base URL."""
    history_key: ClassVar[str]
    """The body field holding the units (``messages`` / ``input``)."""
    system_key: ClassVar[str | None] = None
    """The body field holding the system (``instructions`` / ``system``), if any."""

    # --- requests ------------------------------------------------------------------------

    @abc.abstractmethod
    def parse(self, raw: bytes, body: Any) -> Parsed:
        """The request's envelope and units, validated (InvalidMessagesError)."""

    @abc.abstractmethod
    def system_messages(self, parsed: Parsed) -> list[Message]:
        """The canonical messages made from ``parsed.system`` (none or one)."""

    @abc.abstractmethod
    def convert(
        self, units: Sequence[Any], start: int, leading: bool
    ) -> tuple[list[Message], list[int]]:
        """Canonical messages for ``units[start:]`` and the unit index after each;
        ``leading``: nothing but system messages precede ``units[start]``."""

    def has_private(self, messages: Sequence[Message]) -> bool:
        """Whether client messages carry ``_`` keys that must not reach the upstream (the
        client's own bytes then cannot be forwarded as they are)."""
        return False

    def merges_forward(self, message: Message) -> bool:
        """Whether a following unit may still join ``message`` (it cannot be reused as is)."""
        return False

    def validated(self, made: list[Message]) -> Sequence[Message]:
        """Of the messages :meth:`convert` made, those that pass the estimate's check
        (``check_message``) whatever the client sent: validated by the conversion, or made
        so by it (the estimate need not check them again); none unless a protocol says so."""
        return ()

    @abc.abstractmethod
    def first_texts(self, parsed: Parsed) -> tuple[str, str]:
        """The texts of the system prompt and of the first user message (the fingerprint)."""

    @abc.abstractmethod
    def units_of(self, messages: Sequence[Message]) -> tuple[Any, list[Any], list[int]]:
        """``(system, units, ends)`` that canonical client messages were made from (for a
        session restored from the store)."""

    # --- upstream bodies -----------------------------------------------------------------

    @abc.abstractmethod
    def wire(
        self, messages: Sequence[Message], made: Sequence[Message] = ()
    ) -> tuple[Any, list[Any]]:
        """``(system, units)`` to send for canonical messages; ``made``: the client's
        history as :meth:`convert` made it (unchanged objects), whose originals a
        protocol that keeps them may send without converting them again."""

    def body_with(
        self, parsed: Parsed, system: Any, units: list[Any], extra_tools: list[Any]
    ) -> dict[str, Any]:
        """The client's body with these units (and system), plus tools the gateway adds."""
        body = {**parsed.body, self.history_key: units}
        if self.system_key is not None:
            if system is not None:
                body[self.system_key] = system
            else:
                body.pop(self.system_key, None)
        if extra_tools:
            body["tools"] = [*(parsed.tools or []), *extra_tools]
        return body

    def passthrough(self, parsed: Parsed) -> bytes:
        """The upstream body when the gateway changes nothing (the client's own bytes)."""
        return parsed.raw

    # --- answers -------------------------------------------------------------------------

    @abc.abstractmethod
    def usage(self, reply: object) -> dict[str, Any]:
        """``{"prompt_tokens": n, "completion_tokens": m}`` from an answer body (may be {})."""

    @abc.abstractmethod
    def tap(self, parsed: Parsed) -> StreamTap:
        """A tap that captures usage from this protocol's events."""

    @abc.abstractmethod
    def error_body(self, status: int, message: str, code: str | None = None) -> dict[str, Any]:
        """An error in this protocol's shape."""

    # --- recall --------------------------------------------------------------------------

    @abc.abstractmethod
    def tool_schema(self, schema: ToolSchema) -> dict[str, Any]:
        """A chat-style function schema in this protocol's tool format."""

    @abc.abstractmethod
    def reply_turn(self, reply: Mapping[str, Any]) -> Message | None:
        """The assistant's canonical message in an answer body."""

    @abc.abstractmethod
    def without_calls(self, reply: dict[str, Any], name: str) -> dict[str, Any]:
        """The answer body without the calls of tool ``name``."""

    @abc.abstractmethod
    def stream_filter(self, name: str) -> StreamFilter:
        """A filter that hides the calls of tool ``name`` from a stream (see streaming)."""


class StreamTap(abc.ABC):
    """Reads complete SSE events as they pass; keeps the usage; may drop an event."""

    usage: dict[str, Any]

    @abc.abstractmethod
    def keep(self, event: bytes) -> bool:
        """Whether the client should see ``event`` (inspect only events with usage)."""


class StreamFilter(abc.ABC):
    """Hides one tool's calls from a stream across several upstream rounds (recall)."""

    @abc.abstractmethod
    def feed(self, event: bytes) -> bytes:
        """What the client should see of ``event`` (possibly rewritten, possibly nothing)."""

    @abc.abstractmethod
    def calls(self) -> list[RecallCall]:
        """The hidden calls of the round that just ended."""

    @abc.abstractmethod
    def other_calls(self) -> bool:
        """Whether the round also made calls the client must run."""

    @abc.abstractmethod
    def turn(self) -> Message | None:
        """The round's assistant message (canonical), hidden calls included."""

    @abc.abstractmethod
    def next_round(self) -> None:
        """Start hiding the next round's opening events (one stream for the client)."""

    @abc.abstractmethod
    def finish(self) -> bytes:
        """Events the filter held back until the stream's end (its final events)."""

    usage: dict[str, Any]


def recall_calls_in(calls: Sequence[Mapping[str, Any]], name: str) -> list[RecallCall]:
    """The canonical tool calls of ``name`` as :class:`RecallCall` (bad arguments -> {})."""
    out = []
    for call in calls:
        function = call.get("function")
        if not isinstance(function, Mapping) or function.get("name") != name:
            continue
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        out.append(
            RecallCall(str(call.get("id")), arguments if isinstance(arguments, dict) else {})
        )
    return out
