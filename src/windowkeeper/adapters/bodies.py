"""Writing compacted messages back in the shape they were read in.

``compress`` reads a conversation in one of the :class:`~windowkeeper.adapters.formats.Format`
shapes and writes the same shape: JSONL as JSONL, a JSON array as a JSON array, an
OpenAI Chat Completions body as an OpenAI body and an Anthropic Messages body as an
Anthropic body, every other field of the body (model, tools, ``max_tokens``, ``stream``,
metadata, ...) kept as it was. Transcripts (Claude Code, Codex) have no request shape to
go back to and are written as canonical JSONL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import InvalidMessagesError
from ..core.messages import dump_jsonl, strip_private_keys, to_json
from .anthropic_write import to_anthropic
from .formats import Format

__all__ = ("render_like",)


def render_like(fmt: Format, original: str | None, messages: Sequence[Mapping[str, Any]]) -> str:
    """``messages`` as text in the shape ``fmt`` (the shape ``original`` was read in).

    ``original`` is the input text, needed for request bodies (their other fields are
    copied from it); ``None`` (a stored session) writes JSONL.
    """
    if fmt is Format.JSON:
        return to_json([strip_private_keys(m) for m in messages]) + "\n"
    if fmt not in (Format.OPENAI, Format.ANTHROPIC) or original is None:
        return dump_jsonl(messages)
    try:
        body = json.loads(original)
    except ValueError as exc:  # it was parsed once already: only a caller error gets here
        raise InvalidMessagesError("input", "the request body is not JSON") from exc
    if not isinstance(body, dict):
        raise InvalidMessagesError("input", "the request body is not a JSON object")
    return to_json(_body(fmt, body, messages)) + "\n"


def _body(
    fmt: Format, body: dict[str, Any], messages: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The request body with its messages (and Anthropic ``system``) replaced, in place of
    the originals so the key order stays the same."""
    if fmt is Format.OPENAI:
        return {**body, "messages": [strip_private_keys(m) for m in messages]}
    system, turns = to_anthropic(messages)
    out = {**body, "messages": turns}
    if system is None:
        out.pop("system", None)
    else:
        out["system"] = system
    return out
