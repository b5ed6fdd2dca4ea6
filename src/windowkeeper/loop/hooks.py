"""Compaction hooks: ``pre_compress`` before anything leaves the window, ``post_compress`` after.

* ``pre_compress(messages_to_drop)`` lets a memory provider save facts from exactly the
  messages a compaction is about to summarize (for the built-in compressor, its plan's
  middle; for other engines, the whole list).
* ``post_compress(result)`` returns extra messages whose text is re-injected after the
  handoff: bounded live state such as the current todo list or the current text of the
  files the agent modified last. All blocks together stay within a token budget (default
  2,000); blocks that do not fit are cut with a visible marker or dropped.

Where live state goes (what must hold: tool pairing and role alternation never break):
it is appended as text to the handoff message, right after the handoff's end marker. The
handoff is already a legal message at a legal place, so adding text to it changes no role
and no pairing; it stays outside the summary body, so a later compaction summarizes it as
ordinary (stale) context instead of carrying it forward as fact. When an engine produced
no recognizable handoff, the block becomes a new user message at the end, or is appended
to the last message when that is already a user message.

Hooks are user code: a hook that raises is logged with its traceback and reported as an
event by the caller; it never breaks the compaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..analysis.kinds import end_marker, is_handoff, live_state_header
from ..core.messages import Message, content_text
from ..core.report import CompressionResult
from ..core.tokens import estimate_tokens

log = logging.getLogger("windowkeeper.loop.hooks")

DEFAULT_LIVE_STATE_BUDGET = 2_000
LIVE_STATE_HEADER = live_state_header()
_CUT_MARKER = "\n[... cut to fit the live-state budget ...]"


class CompressionHook:
    """Base class of compaction hooks; override either method (both default to no-ops)."""

    def pre_compress(self, messages_to_drop: Sequence[Message]) -> None:
        """Called before a compaction with the messages it will summarize away."""

    def post_compress(self, result: CompressionResult) -> Sequence[Message] | None:
        """Called after a completed compaction; extra messages whose text is re-injected."""
        return None


@dataclass
class LiveStateHook(CompressionHook):
    """Re-injects the current todo list and the current text of recently modified files.

    Args:
        todo: returns the current plan/todo text (or ``None``).
        recent_files: returns paths modified most recently, newest first.
        read_file: reads a file's current text (user-supplied: the agent's sandbox).
        max_files: how many of ``recent_files`` to include.
    """

    todo: Callable[[], str | None] | None = None
    recent_files: Callable[[], Sequence[str]] | None = None
    read_file: Callable[[str], str] | None = None
    max_files: int = 3

    def post_compress(self, result: CompressionResult) -> Sequence[Message] | None:
        blocks: list[Message] = []
        plan = self.todo() if self.todo else None
        if plan:
            blocks.append({"role": "user", "content": f"### Current plan\n{plan}"})
        if self.recent_files and self.read_file:
            for path in list(self.recent_files())[: self.max_files]:
                text = self.read_file(path)
                blocks.append({"role": "user", "content": f"### {path} (current)\n{text}"})
        return blocks


@dataclass(frozen=True)
class HookFailure:
    """A hook that raised: which hook, which phase, the exception type (no message text)."""

    hook: str
    phase: str
    error_type: str


@dataclass
class HookRunner:
    """Runs hooks safely and collects their failures for the caller to report."""

    hooks: Sequence[CompressionHook] = ()
    budget_tokens: int = DEFAULT_LIVE_STATE_BUDGET
    failures: list[HookFailure] = field(default_factory=list)

    def pre_compress(self, messages_to_drop: Sequence[Message]) -> None:
        for hook in self.hooks:
            try:
                hook.pre_compress(messages_to_drop)
            # Hooks are user code (memory providers): any failure is logged with its
            # traceback and reported; it must never stop the compaction.
            except Exception as exc:
                self._failed(hook, "pre_compress", exc)

    def post_compress(self, result: CompressionResult) -> list[str]:
        """Text blocks from every hook, in hook order (not yet budgeted)."""
        blocks: list[str] = []
        for hook in self.hooks:
            try:
                extra = hook.post_compress(result) or ()
                blocks.extend(text for m in extra if (text := content_text(m.get("content"))))
            # User code, as above: logged with traceback, reported, never fatal.
            except Exception as exc:
                self._failed(hook, "post_compress", exc)
        return blocks

    def _failed(self, hook: CompressionHook, phase: str, exc: Exception) -> None:
        name = type(hook).__name__
        log.error("compaction hook %s.%s failed; continuing", name, phase, exc_info=exc)
        self.failures.append(HookFailure(name, phase, type(exc).__name__))

    def take_failures(self) -> list[HookFailure]:
        failures, self.failures = self.failures, []
        return failures


def budget_blocks(blocks: Sequence[str], budget_tokens: int) -> str:
    """Join ``blocks`` under the header within ``budget_tokens``; empty when none fit."""
    remaining = budget_tokens - estimate_tokens(LIVE_STATE_HEADER)
    kept: list[str] = []
    for block in blocks:
        cost = estimate_tokens(block) + 1
        if cost <= remaining:
            kept.append(block)
            remaining -= cost
            continue
        room = (remaining - estimate_tokens(_CUT_MARKER) - 1) * 4  # ~4 chars per token
        if room >= 200:  # a cut block is worth keeping only with some substance
            kept.append(block[:room] + _CUT_MARKER)
        break
    return "\n\n".join([LIVE_STATE_HEADER, *kept]) if kept else ""


def insert_live_state(messages: list[Message], text: str) -> list[Message]:
    """A new list with ``text`` placed as the module docstring says; ``messages`` untouched."""
    if not text:
        return messages
    for index, message in enumerate(messages):
        if is_handoff(message):
            out = list(messages)
            out[index] = _after_end_marker(message, text)
            return out
    if messages and messages[-1].get("role") == "user":
        return [*messages[:-1], _appended(messages[-1], text)]
    return [*messages, {"role": "user", "content": text}]


def _after_end_marker(message: Message, text: str) -> Message:
    """The handoff with ``text`` just before its end marker.

    Inside the handoff framing, so a later compaction drops it with the handoff (and
    ``handoff_body`` leaves it out of the previous summary) instead of carrying it on as
    if it were the original message's content.
    """
    content = message.get("content")
    marker = end_marker()
    copy = dict(message)
    if isinstance(content, str):
        cut = content.find(marker)
        cut = len(content) if cut < 0 else cut
        copy["content"] = f"{content[:cut]}{text}\n\n{content[cut:]}"
    elif isinstance(content, list):
        at = next((i for i, p in enumerate(content) if marker in content_text([p])), None)
        if at is None:
            copy["content"] = [*content, {"type": "text", "text": text}]
        else:
            part = content[at]
            old = str(part.get("text", ""))
            cut = old.find(marker)
            new_part = {**part, "text": f"{old[:cut]}{text}\n\n{old[cut:]}"}
            copy["content"] = [*content[:at], new_part, *content[at + 1 :]]
    else:
        copy["content"] = text
    return copy


def _appended(message: Message, text: str) -> Message:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": text}]}
    existing = content if isinstance(content, str) else ""
    return {**message, "content": f"{existing}\n\n{text}" if existing else text}
