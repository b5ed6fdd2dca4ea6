"""Masking a compaction's texts once each (``masked_analysis``'s ``masks``): agents re-run
the same commands and get the same outputs, so a text equal to one already masked is
looked up. The results must equal masking every text afresh."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.events import Analysis
from windowkeeper.core import secrets
from windowkeeper.core.messages import Message
from windowkeeper.summary.redact import Masks, masked_analysis, redact_message

_PIECES = (
    "run it again", "password=hunter2secret", "https://user:pa55word@db.example.com/x",
    "Authorization: Bearer abcdefgh12345678", "token: none", "ls -la", "\n", " ",
    "--api-key sk-abcdefghijklmnop1234", "AKIAABCDEFGHIJKLMNOP", "plain words",
)  # fmt: skip
texts = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join)


def _assistant(text: str, command: str) -> Message:
    call = {"id": "c1", "type": "function",
            "function": {"name": "bash", "arguments": f'{{"command": "{command}"}}'}}  # fmt: skip
    return {"role": "assistant", "content": text, "tool_calls": [call]}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(texts, texts, st.booleans()), min_size=1, max_size=6))
def test_looked_up_masks_equal_fresh_ones(rows: list[tuple[str, str, bool]]) -> None:
    seen: Masks = {}
    for text, command, as_tool in rows:
        message: Message = (
            {"role": "tool", "tool_call_id": "c1", "content": text}
            if as_tool
            else _assistant(text, command.replace('"', ""))
        )
        fresh = redact_message(message)
        assert redact_message(message, (), seen) == fresh
        assert redact_message(dict(message), (), seen) == fresh  # an equal copy: looked up
        for keep in ((), (0,)):
            assert redact_message(message, keep, seen) == redact_message(message, keep)


def test_a_text_seen_before_is_masked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ruled: list[str] = []  # the texts the rules ran on (past the gate)
    real = secrets._masked

    def counted(text: str, *rest: Any) -> str:
        ruled.append(text)
        return real(text, *rest)

    monkeypatch.setattr(secrets, "_masked", counted)
    output = "connecting to postgres://app:s3cretpass@db.internal:5432/app\nok"
    messages: list[Message] = [
        {"role": "user", "content": "fix the connection"},
        *(
            message
            for _ in range(3)
            for message in (
                _assistant("run it", "python run.py"),
                {"role": "tool", "tool_call_id": "c1", "content": output},
            )
        ),
    ]
    masks: Masks = {}
    masked = masked_analysis(Analysis(messages), masks)
    assert ruled.count(output) == 1  # three tool results, one masking
    assert masks[output] != output and "s3cretpass" not in masks[output]
    assert "run it" not in masks  # a text the gate rules out is not kept
    # what each message masked on its own gives
    ruled.clear()
    assert [r.message for r in masked.facts] == [redact_message(m) for m in messages]
    assert ruled.count(output) == 3
