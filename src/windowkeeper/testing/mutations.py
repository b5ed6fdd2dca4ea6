"""Mutations of a conversation file, for the CLI's hostile-input checks.

Used by ``tests/test_cli_mutations.py`` and ``scripts/cli_mutations.py``. Each mutation
takes the lines of a JSONL conversation and a ``random.Random`` and returns the bytes of
a damaged file: lines dropped, duplicated, swapped, cut or replaced by garbage; lines
that are not messages; nesting past any limit; huge numbers and lines; a broken file
(empty, truncated mid-byte, BOM and CRLF); and damage a parser accepts but an API would
refuse (orphan tool results, calls without results, malformed calls, null contents,
unknown content parts, lone surrogates). :func:`reshape` then writes the result as one of
the other shapes the CLI reads (a JSON array, an OpenAI or an Anthropic request body).
Deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

__all__ = ("MUTATIONS", "SHAPES", "Mutation", "reshape")

Mutation = Callable[[list[str], random.Random], bytes]


def _join(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _pick(lines: list[str], rng: random.Random) -> int:
    return rng.randrange(len(lines))


def _insert(lines: list[str], rng: random.Random, *extra: dict[str, Any]) -> bytes:
    index = _pick(lines, rng)
    return _join(lines[:index] + [json.dumps(m) for m in extra] + lines[index:])


def _messages(lines: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """(index, message) of the lines that parse as a message object."""
    found = []
    for index, line in enumerate(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "role" in value:
            found.append((index, value))
    return found


def _replace(
    lines: list[str], rng: random.Random, role: str, change: Callable[[Any], Any]
) -> bytes:
    """One message of ``role`` (any role when none has it) changed by ``change``."""
    candidates = [(i, m) for i, m in _messages(lines) if m.get("role") == role] or _messages(lines)
    if not candidates:
        return garbage(lines, rng)
    index, message = rng.choice(candidates)
    out = list(lines)
    out[index] = json.dumps(change(dict(message)))
    return _join(out)


def drop(lines: list[str], rng: random.Random) -> bytes:
    index = _pick(lines, rng)
    return _join(lines[:index] + lines[index + 1 :])


def duplicate(lines: list[str], rng: random.Random) -> bytes:
    index = _pick(lines, rng)
    return _join(lines[: index + 1] + lines[index:])


def reorder(lines: list[str], rng: random.Random) -> bytes:
    out = list(lines)
    a, b = _pick(out, rng), _pick(out, rng)
    out[a], out[b] = out[b], out[a]
    return _join(out)


def cut(lines: list[str], rng: random.Random) -> bytes:
    out = list(lines)
    index = _pick(out, rng)
    out[index] = out[index][: max(1, len(out[index]) // 2)]
    return _join(out)


def garbage(lines: list[str], rng: random.Random) -> bytes:
    index = _pick(lines, rng)
    head, tail = _join(lines[:index]), _join(lines[index + 1 :])
    return head + bytes(rng.randrange(256) for _ in range(64)) + b"\n" + tail


def not_a_message(lines: list[str], rng: random.Random) -> bytes:
    out = list(lines)
    out[_pick(out, rng)] = rng.choice(['[1, 2]', '"text"', '{"content": "no role"}',
                                       '{"role": "robot", "content": "x"}',
                                       '{"role": "user", "content": 42}'])  # fmt: skip
    return _join(out)


def deep_content(lines: list[str], rng: random.Random) -> bytes:
    out = list(lines)
    out[_pick(out, rng)] = '{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    return _join(out)


def deep_arguments(lines: list[str], rng: random.Random) -> bytes:
    arguments = "[" * 5_000 + "]" * 5_000
    call = {"id": "deep1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return _insert(lines, rng, {"role": "assistant", "content": None, "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": "deep1", "content": "ok"},
                   {"role": "user", "content": "go on"})  # fmt: skip


def huge_number(lines: list[str], rng: random.Random) -> bytes:
    out = list(lines)
    out[_pick(out, rng)] = '{"role": "user", "content": "x", "n": ' + "7" * 5_000 + "}"
    return _join(out)


def broken_file(lines: list[str], rng: random.Random) -> bytes:
    """Empty, blank, truncated at a random byte (maybe inside a UTF-8 sequence), or with a
    byte-order mark and CRLF line ends."""
    whole = _join(lines)
    roll = rng.randrange(4)
    if roll == 0:
        return b""
    if roll == 1:
        return b"\n  \n\t\n"
    if roll == 2:
        return whole[: rng.randrange(1, max(2, len(whole)))]
    return b"\xef\xbb\xbf" + whole.replace(b"\n", b"\r\n")


def huge_line(lines: list[str], rng: random.Random) -> bytes:
    text = "".join(rng.choice("abc def\n") for _ in range(1_000)) * 1_500  # 1.5 MB
    return _insert(lines, rng, {"role": "user", "content": text})


def orphan_result(lines: list[str], rng: random.Random) -> bytes:
    return _insert(lines, rng, {"role": "tool", "tool_call_id": f"ghost_{rng.randrange(99)}",
                                "content": "a.txt\n" * rng.randrange(1, 400)})  # fmt: skip


def missing_result(lines: list[str], rng: random.Random) -> bytes:
    """A call whose result never comes (the results of one call dropped, or a new call)."""
    tools = [i for i, m in _messages(lines) if m.get("role") == "tool"]
    if tools and rng.random() < 0.7:
        index = rng.choice(tools)
        return _join(lines[:index] + lines[index + 1 :])
    call = {"id": "lost1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return _insert(lines, rng, {"role": "assistant", "content": "", "tool_calls": [call]})


def malformed_call(lines: list[str], rng: random.Random) -> bytes:
    """A tool call with a wrong-typed part: an id that is a number, no function, a null
    name, arguments that are an object, or ``tool_calls`` that is not a list."""
    shapes: list[Any] = [
        [{"id": 7, "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        [{"id": "m1", "type": "function"}],
        [{"id": "m1", "type": "function", "function": {"name": None, "arguments": "{}"}}],
        [{"id": "m1", "type": "function", "function": {"name": "bash", "arguments": {"a": 1}}}],
        {"id": "m1"}, [], [None], "call",
    ]  # fmt: skip
    calls = rng.choice(shapes)
    return _insert(lines, rng, {"role": "assistant", "content": None, "tool_calls": calls},
                   {"role": "tool", "tool_call_id": "m1", "content": "ok"})  # fmt: skip


_BROKEN_IMAGE = "data:image/png;base64,!!"


def odd_content(lines: list[str], rng: random.Random) -> bytes:
    """A message's content null, empty, a lone surrogate, a dict, a list of unknown or
    typeless parts, a broken image, or a list of numbers."""
    choices: list[Any] = [
        None, "", "\ud800 lone \udfff", {"text": "a dict"}, [{"type": "input_audio"}],
        [{"text": "no type"}], [{"type": "image_url", "image_url": {"url": _BROKEN_IMAGE}}],
        [{"type": "text"}], [1, 2, 3], [{"type": "text", "text": None}],
    ]  # fmt: skip
    value = rng.choice(choices)
    role = rng.choice(("user", "assistant", "tool", "system"))
    return _replace(lines, rng, role, lambda m: {**m, "content": value})


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (drop, duplicate, reorder, cut, garbage, not_a_message, deep_content,
              deep_arguments, huge_number, broken_file, huge_line, orphan_result,
              missing_result, malformed_call, odd_content)
}  # fmt: skip
"""Every mutation by name."""

SHAPES = ("jsonl", "json", "openai", "anthropic")
"""The file shapes :func:`reshape` writes."""


def reshape(data: bytes, shape: str) -> bytes:
    """``data`` (a mutated JSONL file) as ``shape``: unchanged for ``jsonl``; else the
    lines that still parse as a JSON array, an OpenAI request body, or an Anthropic one
    (system messages lifted out, the rest passed as they are). Lines that do not parse are
    kept raw between the others, so the damage survives (as broken JSON)."""
    if shape == "jsonl":
        return data
    text = data.decode("utf-8", "surrogateescape")
    items: list[str] = [line for line in text.splitlines() if line.strip()]
    system: list[str] = []
    if shape == "anthropic":
        system = [line for line in items if '"role": "system"' in line]
        items = [line for line in items if line not in system]
    array = "[" + ",\n".join(items) + "]"
    if shape == "json":
        body = array
    elif shape == "openai":
        body = '{"model": "gpt-4o", "messages": ' + array + "}"
    else:
        parts = json.dumps([{"type": "text", "text": _system_text(line)} for line in system])
        head = '{"model": "claude-sonnet-4", "max_tokens": 1024, "system": ' + parts
        body = head + ', "messages": ' + array + "}"
    return body.encode("utf-8", "surrogateescape")


def _system_text(line: str) -> str:
    try:
        value = json.loads(line)
    except ValueError:
        return line
    content = value.get("content") if isinstance(value, dict) else None
    return content if isinstance(content, str) else json.dumps(content)
