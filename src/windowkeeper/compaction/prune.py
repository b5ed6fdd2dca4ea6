"""Phase 1 of a compaction: prune old tool output without an LLM (design §4).

Three pure passes over ``messages[start:end]`` (the region outside the protected head
and tail). Each returns the input list itself when it changes nothing, never mutates
it, and records every replaced original as an :class:`ArchivedItem` whose handle the
replacement text carries.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..analysis.events import tool_event
from ..analysis.gist import DUPLICATE_TAG, gist, is_stub
from ..analysis.record import Analyzer, CallFacts, MessageFacts, memo_key
from ..analysis.specs import NamedLater, is_spec, stub_spec
from ..analysis.toolshapes import one_line
from ..core.jsonsafe import dumps, loads_or_none
from ..core.messages import (
    Message,
    call_arguments,
    is_image_part,
    tool_calls,
)
from ..core.report import ArchivedItem
from ..core.secrets import redact
from ..core.templates import template

IMAGE_PLACEHOLDER = "[image removed from an old tool result]"


@dataclass(frozen=True)
class PruneSettings:
    """The region ``[start, end)`` to prune and the limits; ``analyzer`` holds the
    session's message records (a fresh one when ``None``)."""

    start: int
    end: int
    min_chars: int = 200
    args_over: int = 500
    args_head: int = 200
    analyzer: Analyzer | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PassResult:
    messages: list[Message]
    changed: int = 0
    archived: tuple[ArchivedItem, ...] = ()


Pass = Callable[[list[Message], PruneSettings], PassResult]


def content_handle(record: MessageFacts) -> str:
    """The handle of a tool result's text, computed once per message."""
    handle: str = record.remember("content_handle", lambda: make_handle(record.text))
    return handle


# Characters encoded at a time when hashing: the hash never holds a whole large message
# as bytes (or a joined copy of it). Encoding a str in slices gives the same bytes as
# encoding it whole (a str holds code points; no pair spans a slice boundary). An ASCII
# slice encodes to as many bytes as it has characters (others reserve up to four a
# character while encoding), so ASCII text, most of it, goes in larger slices: fewer
# rounds of the loop for the same few kilobytes held.
_HASH_CHUNK = 1_024
_ASCII_HASH_CHUNK = 8_192


def make_handle(*parts: str) -> str:
    """A short stable reference for archived content: the hash of ``parts`` joined by
    ``\x1f`` (the same text, the same handle)."""
    digest = hashlib.blake2b(digest_size=5)
    for number, part in enumerate(parts):
        if number:
            digest.update(b"\x1f")
        step = _ASCII_HASH_CHUNK if part.isascii() else _HASH_CHUNK
        for start in range(0, len(part), step):
            digest.update(part[start : start + step].encode("utf-8", "replace"))
    return "wk" + digest.hexdigest()


def _calls_by_id(
    messages: list[Message], analyzer: Analyzer, end: int
) -> Callable[[str], CallFacts | None]:
    """The call of an id among those made before ``end`` (a result follows its call; an
    id made twice: the later call). Only the message of a call asked for is parsed: most
    calls' results are too short to be stubbed, and their arguments are never read here."""
    owners: dict[str, Message] = {}
    for index in range(min(end, len(messages))):
        message = messages[index]
        calls = message.get("tool_calls")
        # ``tool_calls`` and ``call_id`` inlined (every message before ``end`` is read)
        if calls and isinstance(calls, list) and message.get("role") == "assistant":
            for call in calls:
                if isinstance(call, dict):
                    made = call.get("id")
                    owners[made if isinstance(made, str) else ""] = message

    def find(wanted: str) -> CallFacts | None:
        owner = owners.get(wanted)
        if owner is None:
            return None
        # The owner made a call of this id (the last of them wins): a loop, not an
        # early-stopped generator (closing one raises and clears GeneratorExit).
        found: CallFacts | None = None
        for made in analyzer.facts(owner).calls:
            if made.id == wanted:
                found = made
        return found

    return find


def _dedupe_candidates(messages: list[Message], settings: PruneSettings) -> set[int]:
    """Indices of large tool outputs whose length another large tool output shares, from
    the first of those in the region on (only equal-length outputs can be identical, so
    only those are ever hashed).

    An output is replaced when a later one is identical, so only a group's outputs from
    its first one in the region on can decide anything: those before it lie before the
    region (never replaced), and a group with none in it, or with no output after its
    first one there, replaces nothing (none of its outputs is hashed).
    """
    by_length: dict[int, list[int]] = {}
    least = settings.min_chars
    for index, message in enumerate(messages):
        # The role first: most messages are not tool results (a str subclass is a str).
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if isinstance(content, str) and len(content) >= least:
            by_length.setdefault(len(content), []).append(index)
    found: set[int] = set()
    start, end = settings.start, settings.end
    for group in by_length.values():
        # Most lengths are one output's: nothing to compare, and no output of such a group
        # is read further (a stub left by pruning counts for none: it is left out here).
        if len(group) < 2:
            continue
        group = [i for i in group if not is_stub(str(messages[i]["content"]))]
        # indices ascending: the first one in the region, and every later one
        first = len(group)
        for number, index in enumerate(group):
            if start <= index < end:
                first = number
                break
        if len(group) - first > 1:
            found.update(group[first:])
    return found


def dedupe_tool_outputs(messages: list[Message], settings: PruneSettings) -> PassResult:
    """Pass 1: an older copy of an identical large tool output becomes a short marker."""
    candidates = _dedupe_candidates(messages, settings)
    # handle -> the later output it was first seen with. A handle is a 40-bit digest: two
    # different outputs of one length could share it, so a copy is one only when the texts
    # are equal too (a memcmp, and only when the handles already match).
    seen: dict[str, str] = {}
    out: list[Message] | None = None
    archived: list[ArchivedItem] = []
    for index in sorted(candidates, reverse=True):
        message = messages[index]
        content = str(message["content"])
        # The record's handle: pass 2 stubs the copy kept (and the archive names it) by it.
        records = settings.analyzer
        handle = content_handle(records.facts(message)) if records else make_handle(content)
        kept = seen.get(handle)
        if kept is None:
            seen[handle] = content
            continue
        if kept != content:
            continue
        if not settings.start <= index < settings.end:
            continue
        out = out if out is not None else list(messages)
        out[index] = {
            **message,
            "content": f"{DUPLICATE_TAG} (ref {handle}): identical to a later result, "
            f"which is kept in full]",
        }
        archived.append(ArchivedItem(handle, "tool_output", index, message))
    if out is None:
        return PassResult(messages)
    return PassResult(out, len(archived), tuple(reversed(archived)))


def _describe(
    call: CallFacts | None, name: str, result: MessageFacts, named: Collection[str]
) -> str:
    content = result.text
    if call is None:
        return f"[{name}] ({len(content):,} chars result)"
    event = tool_event(call, result)  # its exit code: the result's (a shell's), else None
    line = one_line(call.action, content, event.exit_code)
    # A spec output's stub keeps its excerpt: what the work must meet stays in sight.
    return line + (stub_spec(event) if is_spec(event, named) else gist(event))


def _named_documents(messages: list[Message], analyzer: Analyzer, end: int) -> NamedLater:
    """Documents the user named before ``end`` (a read of one is a spec output), found
    when a document read first asks."""

    def texts() -> Iterator[str]:
        for message in messages[:end]:
            if message.get("role") == "user":
                yield analyzer.facts(message).text[:20_000]

    return NamedLater(texts)


def _strip_images(content: list[Any]) -> list[Any] | None:
    if not any(is_image_part(p) for p in content):
        return None
    return [{"type": "text", "text": IMAGE_PLACEHOLDER} if is_image_part(p) else p for p in content]


def summarize_tool_outputs(messages: list[Message], settings: PruneSettings) -> PassResult:
    """Pass 2: long old tool results become one informative line; old images become text."""
    analyzer = settings.analyzer or Analyzer()
    calls = _calls_by_id(messages, analyzer, settings.end)
    named = _named_documents(messages, analyzer, settings.end)
    out: list[Message] | None = None
    archived: list[ArchivedItem] = []
    for index in range(settings.start, min(settings.end, len(messages))):
        message = messages[index]
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        replacement: str | list[Any] | None = None
        handle = ""
        if isinstance(content, list):
            replacement = _strip_images(content)
            if replacement is not None:
                handle = make_handle(dumps(content, ensure_ascii=False, default=str))
        elif isinstance(content, str) and len(content) > settings.min_chars:
            if is_stub(content):
                continue
            call = calls(str(message.get("tool_call_id")))
            name = call.name if call else str(message.get("name") or "tool")
            record = analyzer.facts(message)
            handle = content_handle(record)
            # The stub names the command it replaced: no secret in what we write (design §5).
            replacement = f"{redact(_describe(call, name, record, named))} (ref {handle})"
            if len(replacement) >= len(content):
                continue  # a short spec output: its stub would be no shorter
        if replacement is None:
            continue
        out = out if out is not None else list(messages)
        out[index] = {**message, "content": replacement}
        archived.append(ArchivedItem(handle, "tool_output", index, message))
    if out is None:
        return PassResult(messages)
    return PassResult(out, len(archived), tuple(archived))


def elision_marker(omitted: int, total: int) -> str:
    return template("args_elided.txt").strip().format(omitted=omitted, total=total)


_MARKER_FLOOR = len(elision_marker(0, 0))
"""The shortest marker: leaves no longer than ``head`` plus this are never shortened."""


def _shrink(value: Any, head: int) -> tuple[Any, bool]:
    if isinstance(value, str):
        if len(value) <= head + _MARKER_FLOOR or value.endswith("⟧"):
            return value, False
        marker = elision_marker(len(value) - head, len(value))
        if len(value) > head + len(marker):
            return value[:head] + marker, True
        return value, False
    if isinstance(value, list):
        items = [_shrink(v, head) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if isinstance(value, dict):
        pairs = {k: _shrink(v, head) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
    return value, False


# What ``json.dumps(value, ensure_ascii=False)`` builds on each call (an encoder with those
# settings), made once.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def truncate_arguments(arguments: str, head: int, parsed: object = None) -> str:
    """Shorten long string leaves of JSON arguments; the result stays valid JSON.

    Non-JSON arguments and arguments with nothing to shorten are returned unchanged (the
    same string object), so repeated application is stable. ``parsed``: the arguments
    already parsed (a JSON object), when the caller has them.
    """
    value = parsed if parsed is not None else loads_or_none(arguments)  # depth-bounded
    if value is None:
        return arguments
    shrunk, changed = _shrink(value, head)
    if not changed:
        return arguments
    text = _ENCODE(shrunk)
    return text if len(text) < len(arguments) else arguments


def truncate_tool_arguments(messages: list[Message], settings: PruneSettings) -> PassResult:
    """Pass 3: huge tool-call arguments are shortened leaf by leaf, staying valid JSON."""
    analyzer = settings.analyzer or Analyzer()
    out: list[Message] | None = None
    archived: list[ArchivedItem] = []
    key = memo_key("shortened_calls", settings.args_over, settings.args_head)
    for index in range(settings.start, min(settings.end, len(messages))):
        message = messages[index]
        if not message.get("tool_calls") or not _long_arguments(message, settings.args_over):
            continue
        record = analyzer.facts(message)
        shorten = functools.partial(_shortened_calls, message, settings)
        new_calls: list[Any] | None = record.remember(key, shorten)
        if new_calls is None:
            continue
        out = out if out is not None else list(messages)
        out[index] = {**message, "tool_calls": new_calls}
        # The arguments as sent (each call's ``raw_arguments``), read without parsing the
        # calls: shortening needs no call recognized.
        raw = "\x00".join(call_arguments(call) for call in tool_calls(message))
        archived.append(ArchivedItem(make_handle(raw), "tool_arguments", index, message))
    if out is None:
        return PassResult(messages)
    return PassResult(out, 0, tuple(archived))


def _long_arguments(message: Message, over: int) -> bool:
    """Whether a call of ``message`` has arguments over ``over`` characters (only those
    are shortened: the others' calls are not parsed for it)."""
    # ``tool_calls`` and ``call_arguments`` inlined, in a loop: every call message of the
    # region is asked, and most have no long arguments (no list of its calls is made).
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return False
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        if type(function) is dict or isinstance(function, Mapping):
            args = function.get("arguments")
            if isinstance(args, str) and len(args) > over:
                return True
    return False


def _shortened_calls(message: Message, settings: PruneSettings) -> list[Any] | None:
    """The message's tool calls with long arguments shortened; ``None`` when none was
    (computed once per message: pruning and the must-fit rungs both ask). Each long
    argument is parsed here, once: the record keeps no parse of long arguments, and
    shortening needs no call recognized (the record's calls are not made for it)."""
    calls = tool_calls(message)
    new_calls = []
    for call in calls:
        function = call.get("function")
        args = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(function, dict) and isinstance(args, str) and len(args) > settings.args_over:
            short = truncate_arguments(args, settings.args_head)
            if short is not args:
                call = {**call, "function": {**function, "arguments": short}}
        new_calls.append(call)
    if all(a is b for a, b in zip(new_calls, calls, strict=True)):
        return None
    return new_calls


PASSES: tuple[Pass, ...] = (dedupe_tool_outputs, summarize_tool_outputs, truncate_tool_arguments)


def prune(messages: list[Message], settings: PruneSettings) -> PassResult:
    """Run every prune pass in order; ``changed`` counts pruned tool outputs."""
    current = messages
    changed = 0
    archived: list[ArchivedItem] = []
    for run in PASSES:
        result = run(current, settings)
        current = result.messages
        changed += result.changed
        archived.extend(result.archived)
    return PassResult(current, changed, tuple(archived))
