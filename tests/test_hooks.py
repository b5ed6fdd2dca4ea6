"""Compaction hooks: memory flush before, bounded live state after, failures never fatal."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from factories import long_session
from windowkeeper.analysis.kinds import end_marker, handoff_body, is_handoff
from windowkeeper.compaction.handoff import unwrap
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message, content_text
from windowkeeper.core.report import CompressionResult
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.hooks import (
    LIVE_STATE_HEADER,
    CompressionHook,
    LiveStateHook,
    budget_blocks,
    insert_live_state,
)
from windowkeeper.loop.manager import ContextManager


class Memory(CompressionHook):
    def __init__(self) -> None:
        self.saved: list[list[Message]] = []

    def pre_compress(self, messages_to_drop: Sequence[Message]) -> None:
        self.saved.append(list(messages_to_drop))


def test_pre_compress_gets_exactly_the_summarized_messages() -> None:
    compressor = ContextCompressor(context_length=32_000)
    memory = Memory()
    manager = ContextManager(compressor, hooks=[memory])
    messages = long_session(rounds=40)
    plan = compressor.plan(messages)
    manager.compress(messages)
    assert memory.saved == [messages[plan.head_end : plan.tail_start]]


def test_post_compress_live_state_follows_the_handoff() -> None:
    files = {"payments/refunds.py": "def refund():\n    return 42\n"}
    hook = LiveStateHook(
        todo=lambda: "- [x] reproduce\n- [ ] fix refund rounding",
        recent_files=lambda: list(files),
        read_file=files.__getitem__,
    )
    summary_only = CompressionConfig(prune_only_ratio=0.01)
    manager = ContextManager(ContextCompressor(summary_only, context_length=32_000), hooks=[hook])
    out = manager.compress(long_session(rounds=40))
    carrier = next(m for m in out if is_handoff(m))
    text = content_text(carrier["content"])
    assert LIVE_STATE_HEADER in text and "fix refund rounding" in text
    assert "return 42" in text and violations(out) == []
    # the live state sits inside the handoff framing but outside its body: a later
    # compaction drops it with the handoff and never carries it as summary
    assert text.index(LIVE_STATE_HEADER) < text.index(end_marker())
    assert unwrap(carrier) is None
    assert LIVE_STATE_HEADER not in (handoff_body(text) or "")


def test_live_state_respects_the_budget() -> None:
    blocks = ["a" * 20_000, "b" * 100]
    text = budget_blocks(blocks, 2_000)
    assert estimate_tokens(text) <= 2_000 and "cut to fit" in text
    assert budget_blocks([], 2_000) == ""


def test_insert_without_a_handoff_keeps_alternation() -> None:
    ending_with_tool = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]
    out = insert_live_state(ending_with_tool, "STATE")
    assert out[-1] == {"role": "user", "content": "STATE"} and violations(out) == []
    ending_with_user = [{"role": "user", "content": "go"}]
    out = insert_live_state(ending_with_user, "STATE")
    assert len(out) == 1 and out[0]["content"] == "go\n\nSTATE"
    assert ending_with_user[0]["content"] == "go"  # input untouched
    assert insert_live_state(ending_with_user, "") is ending_with_user


class Broken(CompressionHook):
    def pre_compress(self, messages_to_drop: Sequence[Message]) -> None:
        raise RuntimeError("memory store offline")

    def post_compress(self, result: CompressionResult) -> Sequence[Message] | None:
        raise KeyError("todo")


def test_failing_hooks_are_reported_and_never_break_compaction(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[Event] = []
    summary_only = CompressionConfig(prune_only_ratio=0.01)
    manager = ContextManager(ContextCompressor(summary_only, context_length=32_000),
                             hooks=[Broken()], on_event=events.append)  # fmt: skip
    messages = long_session(rounds=40)
    with caplog.at_level(logging.ERROR, logger="windowkeeper.loop.hooks"):
        out = manager.compress(messages)
    assert out is not messages and violations(out) == []
    failed = [e for e in events if e.kind is EventKind.HOOK_FAILED]
    assert [e.reason for e in failed] == ["pre_compress", "post_compress"]
    assert "RuntimeError" in failed[0].message and "offline" not in failed[0].message
    assert "Traceback" in caplog.text or caplog.records[0].exc_info is not None
