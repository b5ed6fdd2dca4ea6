"""Property tests: invariants hold for random valid conversations."""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from factories import call, image_part
from windowkeeper.analysis.kinds import in_progress_header, is_handoff, is_real_user, live_text
from windowkeeper.compaction.handoff import system_note
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text
from windowkeeper.core.report import DiscardReason, Outcome, Tier
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.engine.compressor import ContextCompressor

Message = dict[str, Any]

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40
)
_big = st.integers(min_value=0, max_value=6_000).map(lambda n: "log line\n" * (n // 9))


@st.composite
def user_message(draw: st.DrawFn) -> Message:
    if draw(st.integers(0, 9)) == 0:  # a user turn without text (an empty or file-only send)
        file_only = [{"type": "file", "file": {"file_id": "f"}}]
        blank = draw(st.sampled_from(["", None, " \n", file_only, [image_part()]]))
        return {"role": "user", "content": blank}
    text = draw(_text) + " " + draw(st.sampled_from(["fix it", "why?", "never push", "ok"]))
    if draw(st.booleans()):
        parts: list[Any] = [{"type": "text", "text": text}]
        if draw(st.booleans()):
            parts.append(image_part())
        return {"role": "user", "content": parts}
    return {"role": "user", "content": text}


@st.composite
def tool_round(draw: st.DrawFn, counter: list[int]) -> list[Message]:
    calls = []
    results = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        counter[0] += 1
        cid = f"call_{counter[0]}"
        name = draw(st.sampled_from(["bash", "Read", "edit_file", "grep", "lookup"]))
        arg = draw(st.sampled_from(["x", "y" * 700, "src/app.py"]))
        calls.append(call(cid, name, command=arg, path=arg))
        content: Any = draw(
            st.one_of(_big, st.just(None), st.just([{"type": "text", "text": "ok"}]))
        )
        if draw(st.integers(0, 9)) == 0:
            content = [{"type": "text", "text": "shot"}, image_part()]
        results.append({"role": "tool", "tool_call_id": cid, "content": content})
    text = draw(st.one_of(st.none(), _text))
    return [{"role": "assistant", "content": text, "tool_calls": calls}, *results]


@st.composite
def conversation(draw: st.DrawFn) -> list[Message]:
    counter = [0]
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(st.one_of(_text, st.none()))})
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        messages.append(draw(user_message()))
        for _ in range(draw(st.integers(min_value=0, max_value=5))):
            messages.extend(draw(tool_round(counter)))
        messages.append({"role": "assistant", "content": draw(_text)})
    if draw(st.booleans()):
        messages.pop()  # ends on a user message or a tool result
        if messages[-1]["role"] == "assistant":
            messages.append(draw(user_message()))
    if draw(st.booleans()) and messages[-1]["role"] != "assistant":
        counter[0] += 1
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(f"call_{counter[0]}", "bash", command="sleep")],
            }
        )
    return messages


EXAMPLES = settings(
    max_examples=int(os.environ.get("WK_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""How many random conversations each property test draws (both compaction paths)."""


def _newest_user(messages: list[Message]) -> Message | None:
    for message in reversed(messages):
        if is_real_user(message):
            return message
    return None


@EXAMPLES
@given(
    messages=conversation(),
    window=st.sampled_from([2_000, 8_000, 32_000]),
    first_n=st.integers(0, 3),
)
# Found by this test in CI: two user messages without text around the handoff.
@example(
    messages=[
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call_1", "bash", command="x", path="x")]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": [{"type": "text", "text": "shot"}, image_part()]},
        {"role": "assistant", "content": "0"},
        {"role": "user", "content": ""},
    ],
    window=2_000,
    first_n=1,
)  # fmt: skip
# Also found here: an image-only send restated with the earlier request, twice over.
@example(
    messages=[
        {"role": "user", "content": "0 fix it"},
        {"role": "assistant", "content": "0"},
        {"role": "user", "content": [image_part()]},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call_1", "bash", command="x", path="x")]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": [{"type": "text", "text": "shot"}, image_part()]},
        {"role": "assistant", "content": None,
         "tool_calls": [call("call_2", "bash", command="x", path="x")]},
        {"role": "tool", "tool_call_id": "call_2",
         "content": [{"type": "text", "text": "shot"}, image_part()]},
        {"role": "assistant", "content": "0"},
    ],
    window=2_000,
    first_n=1,
)  # fmt: skip
def test_compaction_invariants(messages: list[Message], window: int, first_n: int) -> None:
    assert violations(messages) == []
    snapshot = copy.deepcopy(messages)
    config = CompressionConfig(protect_first_n=first_n, summary_min_tokens=300)
    comp = ContextCompressor(config, context_length=window)
    result = comp.compress(messages, force=True)
    assert messages == snapshot  # input never mutated
    check_result(comp, messages, result)


def check_result(comp: ContextCompressor, messages: list[Message], result: Any) -> None:
    """The invariants of a compaction's output, whichever path produced it."""
    out = result.messages
    assert violations(out) == [], violations(out)
    if result.report.outcome is not Outcome.COMPRESSED:
        assert out is messages  # identity on no-op
        return
    assert estimate_messages_tokens(out) <= estimate_messages_tokens(messages)
    if messages[0]["role"] == "system" and result.report.tier is Tier.SUMMARY:
        original = messages[0]["content"] or ""
        assert out[0]["role"] == "system"
        assert content_text(out[0]["content"]) in {f"{original}\n\n{system_note()}", system_note()}
    elif messages[0]["role"] == "system":
        assert out[0] == messages[0]  # pruning alone never touches the system prompt
    newest = _newest_user(messages)
    if newest is not None:
        assert any(
            live_text(newest) in content_text(m.get("content")) for m in out if m["role"] == "user"
        )
    assert any(m["role"] == "user" for m in out)
    again = comp.compress(out, force=True)
    assert violations(again.messages) == []
    handoffs = sum(1 for m in again.messages if is_handoff(m))
    summarized = Tier.SUMMARY in (result.report.tier, again.report.tier)
    assert handoffs == (1 if summarized else 0)  # folded, never stacked
    restatements = sum(
        content_text(m.get("content")).count(in_progress_header()) for m in again.messages
    )
    assert restatements <= 1  # a restated request is never restated again around itself


@EXAMPLES
@given(
    messages=conversation(),
    cut=st.floats(0.75, 1.0),
    window=st.sampled_from([2_000, 8_000, 32_000]),
    first_n=st.integers(0, 3),
)
def test_background_compaction_invariants(
    messages: list[Message], cut: float, window: int, first_n: int
) -> None:
    """The background path: prepared on the history as it stood at a request (ending at
    a whole tool group), applied to the history that grew from it; an applied result
    keeps every invariant a foreground one keeps, and a discard changes nothing."""
    end = max(1, int(len(messages) * cut))
    while end < len(messages) and messages[end]["role"] == "tool":
        end += 1
    earlier, snapshot = messages[:end], copy.deepcopy(messages)
    # A soft mark near the trigger keeps most results applicable: this is about their
    # invariants (about 1 in 3 examples is applied, half of those with a summary).
    config = CompressionConfig(
        protect_first_n=first_n, summary_min_tokens=300, background=True, background_ratio=0.99
    )
    comp = ContextCompressor(config, context_length=window)
    prepared = comp.prepare(earlier)
    if isinstance(prepared, DiscardReason):
        assert prepared is DiscardReason.NOT_COMPRESSED
        return
    guard = comp.guard
    adopted = comp.adopt(prepared, messages)
    assert messages == snapshot  # input never mutated
    if isinstance(adopted, DiscardReason):
        assert adopted in (DiscardReason.INSUFFICIENT, DiscardReason.INVALID)
        assert comp.guard == guard  # a discard changes nothing
        return
    assert adopted.report.background is not None and adopted.report.background.applied
    check_result(comp, messages, adopted)
