"""What the user wrote is a fact of the message's record: computed once, the same text
:func:`~windowkeeper.analysis.kinds.user_text` gives, read by the plan (the request to
restate), the user budgets and the handoff alike."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import kinds
from windowkeeper.analysis.record import Analyzer
from windowkeeper.compaction.boundaries import newest_request

# Pieces of user-role texts: harness blocks (closed, unclosed, with attributes), kept
# slash-command arguments, interrupt markers, harness openers and plain words.
_PIECES = st.sampled_from([
    "<system-reminder>remember x</system-reminder>", "<system-reminder>", "</system-reminder>",
    "<system>", "<system foo='1'>", "</system>", "<command-args>fix it</command-args>",
    "<command-name>/mcp</command-name>", "[Request interrupted by user]", "Stop hook feedback:",
    "Please fix the failing test.", " ", "\n", "<b>", "[x]", "PreToolUse:", "a < b",
])  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=8).map("".join)


def _message(role: str, text: str, image: bool) -> dict[str, Any]:
    if not image:
        return {"role": role, "content": text}
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "x"}}]
    return {"role": role, "content": parts}


_MESSAGES = st.builds(_message, st.sampled_from(["user", "user", "assistant", "system"]),
                      _TEXTS, st.booleans())  # fmt: skip


@given(st.lists(_MESSAGES, min_size=1, max_size=6))
def test_the_record_keeps_what_user_text_gives(messages: list[dict[str, Any]]) -> None:
    facts = Analyzer().analyze(messages)
    for message, record in zip(messages, facts, strict=True):
        assert record.user_text == kinds.user_text(message)
        assert record.user_text is record.user_text  # kept, not computed again
        if message["role"] != "user":
            assert record.user_text == ""
    for user in range(len(messages)):
        for start in range(user + 1):
            by_records = newest_request(messages, start, user, facts)
            assert by_records == newest_request(messages, start, user)


def test_a_record_computes_the_user_text_once(monkeypatch: Any) -> None:
    calls: list[object] = []
    real = kinds.user_text

    def counted(message: Any) -> str:
        calls.append(message)
        return real(message)

    monkeypatch.setattr("windowkeeper.analysis.record.user_text", counted)
    message = {"role": "user", "content": "<system-reminder>x</system-reminder>Fix it."}
    record = Analyzer().facts(message)
    assert record.user_text == record.user_text == "Fix it."
    assert calls == [message]


# The harness blocks as one lazy pattern: what ``kinds._without_blocks`` replaced.
_OLD_BLOCK = re.compile(
    r"<(" + "|".join(map(re.escape, kinds._SYNTHETIC_TAGS)) + r")(?:\s[^>]*)?>.*?(?:</\1>|\Z)",
    re.DOTALL,
)
_BLOCK_PIECES = st.sampled_from([
    "<system>", "</system>", "<system-reminder>", "</system-reminder>", "<system x='>'>",
    "<system\n>", "<systemx>", "<tool_result>", "</tool_result>", "<command-args>",
    "</command-args>", "<", ">", "/", " ", "\n", "a", "</", "<system-reminder a=b>",
])  # fmt: skip


@settings(max_examples=500)
@given(st.lists(_BLOCK_PIECES, max_size=12).map("".join))
def test_blocks_go_as_the_lazy_pattern_removed_them(text: str) -> None:
    assert kinds._without_blocks(text) == _OLD_BLOCK.sub("", text)
