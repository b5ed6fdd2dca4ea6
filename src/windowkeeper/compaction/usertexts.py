"""Large user messages (SPEC §6 v3): verbatim up to a per-message and a total budget;
beyond it an excerpt (head and tail, the instruction lines of the part left out, and the
archive handle of the whole), so a pasted log never blocks a compaction.

The newest user message is what the agent must answer: it stays whole unless it alone
would not fit the window (then it too keeps only its excerpt, instruction lines verbatim).
Like the prune passes this is pure: the input list is returned when nothing changed,
never mutated, and every replaced original is archived under the handle its excerpt
names.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.instructions import excerpt
from ..analysis.record import MessageFacts
from ..core.config import CompressionConfig
from ..core.messages import Message
from ..core.report import ArchivedItem
from .plan import USER_MESSAGE, message_handle
from .prune import PassResult

EXCERPT_CHARS = 2_400
"""The most a shortened user message keeps (head, instruction lines, tail, marker)."""


@dataclass(frozen=True)
class UserBudget:
    """Tokens one user message may keep verbatim, and all of them together."""

    message_tokens: int
    total_tokens: int

    @property
    def excerpt_chars(self) -> int:
        """The size of an excerpt: never more than the per-message budget allows."""
        return max(400, min(EXCERPT_CHARS, self.message_tokens * 4 // 2))


def user_budget(config: CompressionConfig, context_length: int) -> UserBudget:
    """The budgets of ``config`` for a window of ``context_length`` tokens: all user
    messages together ``user_messages_ratio`` of it, one at most that and at least its
    ``user_message_min_tokens`` (a long task is no pasted log), else its
    ``user_message_ratio``."""
    total = int(context_length * config.user_messages_ratio)
    per = max(config.user_message_min_tokens, int(context_length * config.user_message_ratio))
    return UserBudget(min(per, total), total)


def within_budgets(facts: Sequence[MessageFacts], budget: UserBudget) -> bool:
    """Whether no user message is over the per-message budget and all of them together
    fit the total: then :func:`over_budget` chooses none, whatever it is asked about
    (told from the records' sizes, without reading any message's text)."""
    sizes = [f.tokens for f in facts if f.role == "user"]
    return not sizes or (max(sizes) <= budget.message_tokens and sum(sizes) <= budget.total_tokens)


def _shortenable(record: MessageFacts) -> bool:
    return record.role == "user" and not record.handoff and bool(record.text.strip())


def over_budget(
    facts: Sequence[MessageFacts], budget: UserBudget, indices: Collection[int], newest: int | None
) -> list[int]:
    """The user messages among ``indices`` (``newest`` aside) to shorten: every one over
    the per-message budget, then, while all the user messages kept are over the total,
    the largest of the rest (each only when its excerpt is smaller)."""
    sizes = {i: facts[i].tokens for i in indices if i != newest and _shortenable(facts[i])}
    short = excerpt_tokens(budget)
    chosen = {i for i, size in sizes.items() if size > budget.message_tokens}
    kept = sum(f.tokens for i, f in enumerate(facts) if f.role == "user" and i not in chosen)
    kept += len(chosen) * short
    for index in sorted(sizes, key=lambda i: (-sizes[i], i)):
        if kept <= budget.total_tokens or sizes[index] <= short:
            break
        if index not in chosen:
            chosen.add(index)
            kept -= sizes[index] - short
    return sorted(chosen)


def shorten_users(
    messages: list[Message],
    facts: Sequence[MessageFacts],
    chosen: Sequence[int],
    chars: int,
) -> PassResult:
    """``messages`` with the user messages at ``chosen`` shortened to their excerpt of
    ``chars`` characters (each original archived under the handle it names)."""
    out: list[Message] | None = None
    archived: list[ArchivedItem] = []
    for index in chosen:
        record = facts[index]
        handle = message_handle(record)
        content = _shortened(record.message.get("content"), record.text, chars, handle)
        if content is None:
            continue
        out = out if out is not None else list(messages)
        out[index] = {**record.message, "content": content}
        archived.append(ArchivedItem(handle, USER_MESSAGE, index, record.message))
    if out is None:
        return PassResult(messages)
    return PassResult(out, 0, tuple(archived))


def _shortened(content: Any, text: str, chars: int, handle: str) -> Any:
    """The content with its text cut to the excerpt (a list keeps its other parts, the
    text parts joined into one); ``None`` when the excerpt saves nothing."""
    short = excerpt(text, chars, handle)
    if len(short) >= len(text):
        return None
    if isinstance(content, str):
        return short
    parts: list[Any] = []
    placed = False
    for part in content if isinstance(content, list) else ():
        if not (isinstance(part, dict) and isinstance(part.get("text"), str)):
            parts.append(part)
        elif not placed:  # the text parts become one excerpt, where the first one was
            parts.append({**part, "text": short})
            placed = True
    return parts


def excerpt_tokens(budget: UserBudget) -> int:
    """About what one shortened user message costs (its text and the message's frame)."""
    return budget.excerpt_chars // 4 + 8
