"""The last rungs of the ladder (design §4): shortening the largest tool results, then
long tool-call arguments, then the longest assistant texts, when compaction alone cannot
bring a request under the window (a request that is not sent is worse than one with a
visible cut). User messages are never cut: the newest one stays verbatim.

Used by a forced compaction that must fit (the compressor) and by overflow recovery (the
context manager). Messages and pairing stay as they are; every cut leaves a visible
marker, so the model knows text is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.record import Analyzer, MessageFacts
from ..core.config import CompressionConfig
from ..core.messages import Message
from ..core.report import ArchivedItem
from ..core.tokens import estimate_tokens
from .prune import PassResult, PruneSettings, content_handle, truncate_tool_arguments

TRUNCATION_MARKER = (
    "\n[... {cut:,} characters cut here: the request exceeded the context window ...]\n"
)
TAIL_CUT_MARKER = (
    "\n[... {cut:,} characters cut here so the handoff keeps its budget; the whole output "
    "is archived (ref {handle}) ...]\n"
)
TAIL_KEEP_TOKENS = 500
"""The least a tail tool result keeps when it gives way to the handoff's floor: its
head and tail, enough for the start of a file view and the end of a test run."""


_MIN_KEEP_CHARS = 400


def truncate_tool_results(messages: list[Message], excess_tokens: int) -> tuple[list[Message], int]:
    """The last rung of the overflow ladder (design §4): shorten the largest tool results.

    Used only when compaction cannot bring a request under the window (typically one huge
    group of fresh tool results). Each result whose text (a string, or the text parts of a
    list) is longer than a common cap keeps its head and tail around a visible marker;
    messages and pairing stay as they are. The cap is found by water-filling so the cut
    totals about ``excess_tokens`` (~4 characters a token). Returns the messages (the input
    list itself when nothing was cut) and how many results were shortened.
    """
    return _truncate_texts(messages, excess_tokens, "tool")


def truncate_assistant_texts(
    messages: list[Message], excess_tokens: int
) -> tuple[list[Message], int]:
    """The rung after :func:`truncate_call_arguments`: the longest assistant texts keep
    their head and tail around a marker, by the same water-filling (tool calls, and the
    thinking a provider must get back unchanged, are not touched)."""
    return _truncate_texts(messages, excess_tokens, "assistant")


def _truncate_texts(
    messages: list[Message], excess_tokens: int, role: str
) -> tuple[list[Message], int]:
    sizes = {
        i: size
        for i, m in enumerate(messages)
        if m.get("role") == role and (size := _text_size(m.get("content")))
    }
    need = excess_tokens * 4
    cap = _water_level(sorted(sizes.values(), reverse=True), need)
    if cap is None:
        return messages, 0
    out = list(messages)
    count = 0
    for index, size in sizes.items():
        if size > cap:
            content = _shorten_content(messages[index]["content"], cap)
            out[index] = {**messages[index], "content": content}
            count += 1
    return (out, count) if count else (messages, 0)


def _text_size(content: object) -> int:
    """Characters of a tool result's text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    return sum(len(p["text"]) for p in content if _is_text_part(p))


def _is_text_part(part: object) -> bool:
    return isinstance(part, Mapping) and isinstance(part.get("text"), str)


def _shorten_content(content: Any, cap: int, marker: str = TRUNCATION_MARKER) -> Any:
    """``content`` with its text cut to about ``cap`` characters. A list's text parts become
    one shortened text part in place of the first (other parts, such as images, stay), so
    many short parts cannot each keep a head and grow by a marker."""
    if isinstance(content, str):
        return _shorten(content, cap, marker)
    text: str | None = "\n".join(p["text"] for p in content if _is_text_part(p))
    shortened: list[Any] = []
    for part in content:
        if not _is_text_part(part):
            shortened.append(part)
        elif text is not None:
            shortened.append({**part, "text": _shorten(text, cap, marker)})
            text = None
    return shortened


def truncate_call_arguments(
    messages: list[Message], config: CompressionConfig, analyzer: Analyzer | None = None
) -> tuple[list[Message], int]:
    """The rung after :func:`truncate_tool_results`: shorten long tool-call arguments
    (file bodies of writes and edits) everywhere, staying valid JSON. Returns the
    messages (the input list itself when nothing was cut) and how many calls changed.
    ``analyzer``: the session's records (pruning may have shortened the same calls)."""
    settings = PruneSettings(
        0, len(messages), args_over=config.args_truncate_over, args_head=config.args_head_chars,
        analyzer=analyzer,
    )  # fmt: skip
    result = truncate_tool_arguments(messages, settings)
    return result.messages, len(result.archived)


@dataclass(frozen=True)
class Cut:
    """One truncation rung that changed the request: what, how many, tokens before/after."""

    what: str
    count: int
    before: int
    after: int


def last_rungs(
    messages: list[Message],
    tokens: int,
    window: int,
    config: CompressionConfig,
    estimate: Callable[[list[Message]], int],
    analyzer: Analyzer | None = None,
) -> tuple[list[Message], int, tuple[Cut, ...]]:
    """The end of the overflow ladder, after compaction could not fit ``window``: shorten
    the largest tool results, then long call arguments, then the longest assistant texts,
    each only while still over."""
    Rung = Callable[[list[Message], int], tuple[list[Message], int]]
    rungs: tuple[tuple[str, Rung], ...] = (
        ("tool result", lambda m, t: truncate_tool_results(m, t - int(window * 0.9))),
        ("tool-call argument", lambda m, t: truncate_call_arguments(m, config, analyzer)),
        ("assistant message", lambda m, t: truncate_assistant_texts(m, t - int(window * 0.9))),
    )
    cuts: list[Cut] = []
    for what, rung in rungs:
        if tokens < window:
            break
        shorter, count = rung(messages, tokens)
        after = estimate(shorter) if count else tokens
        if after < tokens:  # a rung that does not help is not taken
            cuts.append(Cut(what, count, tokens, after))
            messages, tokens = shorter, after
    return messages, tokens, tuple(cuts)


def _water_level(sizes: list[int], need: int, least: int = _MIN_KEEP_CHARS) -> int | None:
    """The largest cap whose cut (sum of ``size - cap`` over larger sizes) reaches ``need``
    (never under ``least``)."""
    if need <= 0 or not sizes:
        return None
    for count in range(1, len(sizes) + 1):
        floor = sizes[count] if count < len(sizes) else 0
        level = (sum(sizes[:count]) - need) // count
        if level >= floor:
            return max(least, level)
    return least


def _shorten(text: str, cap: int, marker: str = TRUNCATION_MARKER) -> str:
    head = cap * 2 // 3
    tail = cap - head
    return f"{text[:head]}{marker.format(cut=len(text) - cap)}{text[len(text) - tail :]}"


def tail_results(facts: Sequence[MessageFacts], start: int) -> dict[int, int]:
    """Index -> text tokens of the tool results from ``start`` on that have text to give."""
    sizes = {i: _text_tokens(facts[i]) for i in range(start, len(facts)) if facts[i].role == "tool"}
    return {i: size for i, size in sizes.items() if size > TAIL_KEEP_TOKENS}


def _text_tokens(record: MessageFacts) -> int:
    """A result's tokens that a cut can reach: of a list (text and images), its text."""
    if isinstance(record.message.get("content"), str):
        return record.tokens
    return estimate_tokens(record.text)


def tail_slack(facts: Sequence[MessageFacts], start: int) -> int:
    """Tokens the tool results from ``start`` on can give before any is under its floor."""
    return sum(tokens - TAIL_KEEP_TOKENS for tokens in tail_results(facts, start).values())


def shorten_tail_results(
    messages: list[Message], facts: Sequence[MessageFacts], start: int, excess_tokens: int
) -> PassResult:
    """The tail's largest tool results cut to give about ``excess_tokens`` to the handoff
    (design §6: the handoff's floor before verbatim output the agent can read again).

    Water-filling over their token sizes, each keeping at least :data:`TAIL_KEEP_TOKENS`;
    a cut one keeps its head and tail around a marker with its archive handle, and the
    whole original is archived. ``facts``: the records of ``messages`` (same indices).
    User and assistant messages, and pairing, are never touched."""
    sizes = tail_results(facts, start)
    cap = _water_level(sorted(sizes.values(), reverse=True), excess_tokens, TAIL_KEEP_TOKENS)
    if cap is None:
        return PassResult(messages)
    out, archived = list(messages), []
    for index, tokens in sizes.items():
        if tokens <= cap:
            continue
        record = facts[index]
        handle = content_handle(record)
        keep = len(record.text) * cap // tokens
        marker = TAIL_CUT_MARKER.replace("{handle}", handle)
        content = _shorten_content(messages[index]["content"], keep, marker)
        out[index] = {**messages[index], "content": content}
        archived.append(ArchivedItem(handle, "tool_output", index, messages[index]))
    return PassResult(out, len(archived), tuple(archived))
