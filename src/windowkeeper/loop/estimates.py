"""Cheap, incremental request estimates for the context manager's preflight check.

The preflight runs before every request of a session that may hold thousands of
messages, so it must cost in proportion to what changed, not to the whole history:
:class:`EstimateCache` reuses each message's estimate while the same object stays at
its index.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from ..core.messages import Message, ToolSchema, check_input, check_message
from ..core.tokens import TextCounter, message_tokens, tool_schema_tokens

Lookup: TypeAlias = Callable[[Message], "int | None"]
"""Tokens another stage already counted (and checked) for a message, else ``None``."""


class EstimateCache:
    """Token estimates of the messages last seen, reused for the longest leading run of a
    new list that equals the old one.

    The comparison of the two lists runs in C and stops at the first difference (objects
    that are the same are equal at once), so an unchanged or grown history costs no Python
    work per old message; after a difference, an estimate is reused while the same object
    sits at its index. A dict mutated in place is not re-estimated: callers replace
    messages, they never edit them (design §1).
    """

    def __init__(self, image_tokens: int, count: TextCounter | None = None) -> None:
        self.image_tokens = image_tokens
        self.count = count
        self.known: Callable[[int, TextCounter | None], Lookup | None] | None = None
        """Where to look up the tokens another stage already counted for a checked message
        at the given prices (the compaction's analysis: its output's new messages); it
        answers ``None`` when it can hold none (an empty analysis: a session's first
        request asks nothing per message)."""
        self._messages: list[Message] = []
        self._tokens: list[int] = []
        self._sums: list[int] = [0]
        """``_sums[i]``: tokens of ``_messages[:i]``."""
        self._schema_key: tuple[int, int] | None = None
        self._schema_tokens = 0

    def schemas(self, tools: Sequence[ToolSchema] | None) -> int:
        """Tokens of the tool schemas, recomputed only when another list is given."""
        key = (id(tools), len(tools)) if tools else None
        if key != self._schema_key:
            self._schema_key, self._schema_tokens = key, tool_schema_tokens(tools)
        return self._schema_tokens

    def counted(self) -> Iterator[tuple[Message, int]]:
        """Each message of the list last estimated, with its estimate."""
        return zip(self._messages, self._tokens, strict=True)

    def total(self, messages: Sequence[Message], checked: Sequence[Message] = ()) -> int:
        """Tokens of ``messages``; each message is checked (``check_message``) when it is first
        estimated, but for the one at its index in ``checked``: a list the caller validated
        (``validate_messages`` refuses whatever the check does, ``test_validation_agrees``)."""
        if not isinstance(messages, list | tuple):
            check_input(messages)  # raises: not a list
        if not self._messages:
            return self._first(messages, checked)
        known, tokens, sums = self._messages, self._tokens, self._sums
        same = min(len(messages), len(known))
        if list(messages[:same]) != known[:same]:
            pairs = zip(messages, known, strict=False)  # the shorter one decides
            same = next(i for i, (new, old) in enumerate(pairs) if not (new is old or new == old))
        del sums[same + 1 :]
        # A message that moved (the tail a summary keeps behind it) is found by object:
        # checked and counted already. ``old`` keeps the last list's messages (and so
        # their ids) alive while ``moved`` is read.
        moved: dict[int, int] | None = None
        lookup: Lookup | None = None
        old: list[Message] = []
        for index in range(same, len(messages)):
            message = messages[index]
            if index >= len(known) or known[index] is not message:  # else: the same object
                if moved is None:  # the first new message: what may know it, asked once
                    old = list(known)
                    moved = dict(zip(map(id, old), tokens, strict=True))
                    if self.known is not None:
                        lookup = self.known(self.image_tokens, self.count)
                estimate = moved.get(id(message)) if moved else None
                if estimate is None and lookup is not None:
                    estimate = lookup(message)
                if estimate is None:
                    if index >= len(checked) or checked[index] is not message:
                        check_message(message, f"message {index}")
                    estimate = message_tokens(
                        message, image_tokens=self.image_tokens, count=self.count
                    )
                if index < len(known):
                    known[index], tokens[index] = message, estimate
                else:
                    known.append(message)
                    tokens.append(estimate)
            sums.append(sums[-1] + tokens[index])
        del known[len(messages) :], tokens[len(messages) :]
        return sums[-1]

    def _first(self, messages: Sequence[Message], checked: Sequence[Message]) -> int:
        """:meth:`total` when no list was estimated yet (a session's first request: every
        message new, nothing moved, no other stage's count to ask), without the per-index
        book-keeping: the same checks in the same order, then the counts."""
        if len(checked) < len(messages) or not all(map(operator.is_, messages, checked)):
            for index, message in enumerate(messages):
                if index >= len(checked) or checked[index] is not message:
                    check_message(message, f"message {index}")
        image_tokens, count = self.image_tokens, self.count
        tokens = [message_tokens(m, image_tokens=image_tokens, count=count) for m in messages]
        self._messages, self._tokens = list(messages), tokens
        self._sums = [0, *itertools.accumulate(tokens)]
        return self._sums[-1]


def _gate_chars(text: str) -> int:
    # Four "characters" per non-ASCII character: a CJK character is a whole token, so the
    # gate's chars/4 must never read such text as a quarter of its real size.
    return len(text) if text.isascii() else 4 * len(text)


def rough_chars(message: Mapping[str, Any], image_tokens: int) -> int:
    """Characters of a message without serializing it (the cheap preflight gate); text
    outside ASCII counts four times, so chars/4 never underestimates dense scripts."""
    content = message.get("content")
    chars = _gate_chars(content) if isinstance(content, str) else 0
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                chars += _gate_chars(text) if isinstance(text, str) else image_tokens * 4
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        chars += _gate_chars(arguments) if isinstance(arguments, str) else 0
    return chars


def usage_of(response: object) -> dict[str, Any]:
    """The usage of a response: a dict's ``usage`` key or an SDK object's ``.usage``."""
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if usage is None:
        usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    if isinstance(usage, Mapping):
        return dict(usage)
    fields = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {k: v for k in fields if isinstance(v := getattr(usage, k, None), int)}


def prompt_tokens_of(usage: Mapping[str, Any]) -> int:
    """Real ``prompt_tokens`` (0 when missing, not an int, or the -1 sentinel)."""
    value = usage.get("prompt_tokens")
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(0, value)
