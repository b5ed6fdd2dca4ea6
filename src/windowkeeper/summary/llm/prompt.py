"""The LLM summarizer's request text: templates, turn serialization, bounding, chunks.

The prompt is assembled from ``templates/summary_*.txt`` (our own wording; the first
line of each is a version line). Turns are rendered as labelled *data* between marker
lines; any marker text inside the data is defused so a turn cannot close the block.

Bounding, so the summary call itself cannot overflow (design §5):
- every serialized message is redacted first, then cut to head + tail with a visible
  marker when it is longer than the per-message limit;
- tool-call arguments are cut to ~1,200 chars;
- the whole prompt must fit :class:`InputCap` (characters, and tokens when the summary
  model's window is known); :func:`take_chunk` picks how many records fit next to a
  given previous summary, so oversized inputs are summarized in several calls.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ...core.messages import call_arguments, call_name, tool_calls
from ...core.templates import template
from ...core.tokens import estimate_tokens
from ..protocol import WRITTEN_TITLES, SummaryRequest, written_budget
from ..redact import redact

TEMPLATE_TAG = "windowkeeper-template"
PER_MESSAGE_LIMIT = 6_000
PER_MESSAGE_HEAD = 4_000
PER_MESSAGE_TAIL = 1_500
ARGS_LIMIT = 1_500
ARGS_HEAD = 1_200
FOCUS_LIMIT = 1_000
INPUT_WINDOW_SHARE = 0.6
"""Share of the summary model's window the prompt may use; the rest is for the answer."""
PREVIOUS_SHARE = 0.4
"""Largest share of the input cap a previous summary may take (the rest is for new turns)."""

DATA_OPEN = "<<<BEGIN CONVERSATION DATA>>>"
DATA_CLOSE = "<<<END CONVERSATION DATA>>>"
NOTES_OPEN = "<<<BEGIN PREVIOUS SUMMARY>>>"
NOTES_CLOSE = "<<<END PREVIOUS SUMMARY>>>"
KEPT_OPEN = "<<<BEGIN KEPT TURNS>>>"
KEPT_CLOSE = "<<<END KEPT TURNS>>>"
KEPT_SHARE = 0.25
"""Largest share of the input cap the kept turns may take (their newest records first)."""

_THINK_BLOCK = re.compile(
    r"<(think|thinking|reasoning)\b[^>]*>.*?(?:</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL
)
_ORPHAN_CLOSE = re.compile(r"^.*?</(?:think|thinking|reasoning)\s*>", re.IGNORECASE | re.DOTALL)


# --- templates --------------------------------------------------------------------------


@cache
def prompt_template(name: str) -> str:
    """A ``summary_*`` template without its version line."""
    text = template(f"summary_{name}.txt")
    first, _, rest = text.partition("\n")
    return (rest if first.startswith(TEMPLATE_TAG) else text).strip()


def template_version(name: str) -> str:
    """The version word of a template's first line (e.g. ``"v1"``), or ``""``."""
    first = template(f"summary_{name}.txt").partition("\n")[0]
    return first.split()[-1] if first.startswith(TEMPLATE_TAG) else ""


@cache
def section_guidance() -> dict[str, str]:
    """Per-section guidance from ``summary_sections.txt`` (``Title :: text`` lines)."""
    guidance: dict[str, str] = {}
    for line in prompt_template("sections").splitlines():
        title, sep, text = line.partition("::")
        if sep:
            guidance[title.strip()] = text.strip()
    return guidance


# --- text bounding ----------------------------------------------------------------------


def strip_think(text: str) -> str:
    """``text`` without ``<think>``/``<thinking>``/``<reasoning>`` blocks.

    An unclosed opening tag hides everything after it; a closing tag without an opener
    (some servers drop the opener) hides everything before it.
    """
    if "<" not in text:
        return text
    text = _THINK_BLOCK.sub("", text)
    return _ORPHAN_CLOSE.sub("", text, count=1).strip()


def bound_text(
    text: str,
    limit: int = PER_MESSAGE_LIMIT,
    head: int = PER_MESSAGE_HEAD,
    tail: int = PER_MESSAGE_TAIL,
) -> str:
    """``text`` itself, or its head and tail around a visible omission marker."""
    if len(text) <= limit:
        return text
    omitted = len(text) - head - tail
    return f"{text[:head]}\n…[{omitted:,} chars of this message omitted]…\n{text[-tail:]}"


def _defuse(text: str) -> str:
    # The block markers all start with "<<<"; data must never be able to end a block.
    return text.replace("<<<", "‹‹‹") if "<<<" in text else text


# --- serialization ----------------------------------------------------------------------


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    kind = part.get("type")
    if kind in {"image_url", "input_image", "image"}:
        url = _image_url(part)
        return f"[image: {url}]" if url.startswith(("http://", "https://")) else "[image]"
    text = part.get("text")
    if isinstance(text, str):
        return text
    return f"[{kind if isinstance(kind, str) and kind else 'attachment'}]"


def _image_url(part: Mapping[str, Any]) -> str:
    value = part.get("image_url")
    if isinstance(value, Mapping):
        value = value.get("url")
    if value is None and isinstance(part.get("source"), Mapping):
        value = part["source"].get("url")
    return value if isinstance(value, str) else ""


def _content(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_part_text(p) for p in content) if t)
    return ""


def _label(message: Mapping[str, Any], handle: str = "") -> str:
    role = str(message.get("role") or "unknown")
    mark = f" · {handle}" if handle else ""
    if role == "tool":
        name = message.get("name")
        suffix = f" ({name})" if isinstance(name, str) and name else ""
        return f"[tool result for {message.get('tool_call_id') or '?'}{suffix}{mark}]"
    return f"[{role}{mark}]"


def _calls(message: Mapping[str, Any]) -> str:
    lines = []
    for call in tool_calls(message):
        args = redact(call_arguments(call))
        if len(args) > ARGS_LIMIT:
            args = f"{args[:ARGS_HEAD]}…[{len(args) - ARGS_HEAD:,} more chars]"
        lines.append(f"  {call_name(call)}({args})")
    return "\n[tool calls]\n" + "\n".join(lines) if lines else ""


def serialize_turn(
    message: Mapping[str, Any], limit: int = PER_MESSAGE_LIMIT, handle: str = ""
) -> str:
    """One message as a labelled, redacted, bounded record (``handle``: the archive
    handle the record is recalled by, shown in its label).

    Reasoning fields are never serialized; think blocks in assistant text are stripped.
    """
    text = _content(message.get("content"))
    if message.get("role") == "assistant":
        text = strip_think(text)
    record = f"{_label(message, handle)}: {text.strip()}{_calls(message)}"
    head = limit * PER_MESSAGE_HEAD // PER_MESSAGE_LIMIT
    tail = limit * PER_MESSAGE_TAIL // PER_MESSAGE_LIMIT
    return _defuse(bound_text(redact(record), limit, head, tail))


def serialize_turns(
    turns: Sequence[Mapping[str, Any]],
    limit: int = PER_MESSAGE_LIMIT,
    handles: Sequence[str] = (),
) -> list[str]:
    """Every turn as a record; ``handles``: the archive handle of each turn, when known."""
    marks = list(handles) if len(handles) == len(turns) else [""] * len(turns)
    return [serialize_turn(m, limit, h) for m, h in zip(turns, marks, strict=True)]


# --- sizes and chunks -------------------------------------------------------------------


@dataclass(frozen=True)
class InputCap:
    """How large one summary prompt may be: characters, and tokens when the window is known."""

    chars: int
    tokens: int | None = None

    @classmethod
    def for_model(cls, max_input_chars: int, context_length: int | None) -> InputCap:
        tokens = int(context_length * INPUT_WINDOW_SHARE) if context_length else None
        return cls(max_input_chars, tokens)

    @property
    def record_limit(self) -> int:
        """Per-message limit: the default, smaller when the cap is small."""
        chars = self.chars if self.tokens is None else min(self.chars, self.tokens * 3)
        return max(1_000, min(PER_MESSAGE_LIMIT, chars // 4))

    def fits(self, text: str) -> bool:
        if len(text) > self.chars:
            return False
        return self.tokens is None or estimate_tokens(text) <= self.tokens


def bound_previous(summary: str, cap: InputCap) -> str:
    """A redacted previous summary, cut to its share of the cap when it is huge."""
    limit = int(cap.chars * PREVIOUS_SHARE)
    if cap.tokens is not None:
        limit = min(limit, int(cap.tokens * PREVIOUS_SHARE) * 3)
    limit = max(1_000, limit)
    head = limit * 3 // 4
    return bound_text(redact(summary.strip()), limit, head, limit - head - 100)


def take_chunk(records: Sequence[str], start: int, overhead: str, cap: InputCap) -> int:
    """End index of the records, from ``start``, that fit next to ``overhead``.

    ``overhead`` is the prompt built without any records. At least one record is always
    taken, so the loop over chunks terminates.
    """
    chars = len(overhead)
    tokens = estimate_tokens(overhead)
    end = start
    while end < len(records):
        record = records[end]
        more_chars, more_tokens = len(record) + 2, estimate_tokens(record) + 1
        over_chars = chars + more_chars > cap.chars
        over_tokens = cap.tokens is not None and tokens + more_tokens > cap.tokens
        if end > start and (over_chars or over_tokens):
            break
        chars, tokens, end = chars + more_chars, tokens + more_tokens, end + 1
    return end


# --- the prompt -------------------------------------------------------------------------


def _structure(budget_tokens: int) -> str:
    guidance = section_guidance()
    sections = "\n".join(
        f"## {title}\n{guidance.get(title, '')}".rstrip() for title in WRITTEN_TITLES
    )
    budget = written_budget(budget_tokens)
    return prompt_template("structure").format(sections=sections, budget=f"{budget:,}")


def _block(opening: str, closing: str, body: str, intro: str) -> str:
    return f"{intro}\n{opening}\n{body}\n{closing}"


def kept_records(request: SummaryRequest, cap: InputCap) -> list[str]:
    """The turns kept verbatim after the handoff, serialized, the newest that fit within
    their share of the cap: the model writes its notes as of their end (design §5)."""
    records = serialize_turns(request.kept_after, cap.record_limit)
    room, taken = int(cap.chars * KEPT_SHARE), 0
    if cap.tokens is not None:
        room = min(room, int(cap.tokens * KEPT_SHARE) * 3)
    for index in range(len(records) - 1, -1, -1):
        taken += len(records[index]) + 2
        if taken > room:
            return records[index + 1 :]
    return records


def build_prompt(
    request: SummaryRequest,
    records: Sequence[str],
    previous: str | None,
    kept: Sequence[str] = (),
) -> str:
    """The single user message of one summary call.

    ``records`` are already serialized (redacted, bounded); ``previous`` is the redacted,
    bounded running or previous summary, or ``None`` for a first summary; ``kept``: the
    serialized turns kept after the handoff (:func:`kept_records`).
    """
    turns_block = _block(
        DATA_OPEN, DATA_CLOSE, "\n\n".join(records),
        "CONVERSATION EXCERPT (data to summarise, oldest first):",
    )  # fmt: skip
    budget = written_budget(request.budget_tokens)
    parts = [prompt_template("preamble").format(budget=f"{budget:,}")]
    if not request.has_user_turn:
        parts.append(prompt_template("no_user"))
    if previous:
        notes = _block(NOTES_OPEN, NOTES_CLOSE, _defuse(previous), "PREVIOUS SUMMARY:")
        parts.append(
            prompt_template("update").format(previous_block=notes, turns_block=turns_block)
        )
    else:
        parts.append(prompt_template("first").format(turns_block=turns_block))
    if kept:
        intro = prompt_template("kept")
        parts.append(_block(KEPT_OPEN, KEPT_CLOSE, "\n\n".join(kept), f"KEPT TURNS: {intro}"))
    parts.append(_structure(request.budget_tokens))
    parts.append(prompt_template("date").format(today=request.today.isoformat()))
    if request.focus_topic and request.focus_topic.strip():
        topic = _defuse(redact(" ".join(request.focus_topic.split())[:FOCUS_LIMIT]))
        parts.append(prompt_template("focus").format(topic=topic))
    return "\n\n".join(parts)
