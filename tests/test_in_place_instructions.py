"""Property: in-place instructions (Claude Code's mid-conversation system messages, see
core.messages.IN_PLACE_KEY) survive every compaction verbatim, once each, in their order,
and the result keeps every invariant."""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_properties import conversation
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import IN_PLACE_KEY, is_in_place_instruction
from windowkeeper.engine.compressor import ContextCompressor

Message = dict[str, Any]


@st.composite
def with_instructions(draw: st.DrawFn) -> list[Message]:
    """A random valid conversation with 1-3 in-place instructions between turns (never
    between a call and its results, nor after calls still in flight)."""
    messages = draw(conversation())
    for number in range(draw(st.integers(1, 3))):
        places = [i for i in range(1, len(messages) + 1) if _between_turns(messages, i)]
        if not places:
            break
        at = draw(st.sampled_from(places))
        text = f"Instruction {number}: " + "keep the API stable. " * draw(st.integers(1, 30))
        messages.insert(at, {"role": "system", "content": text, IN_PLACE_KEY: True})
    return messages


def _between_turns(messages: list[Message], index: int) -> bool:
    after_calls = bool(messages[index - 1].get("tool_calls"))
    before_result = index < len(messages) and messages[index]["role"] == "tool"
    return not after_calls and not before_result


@settings(
    max_examples=int(os.environ.get("WK_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(messages=with_instructions(), window=st.sampled_from([2_000, 8_000, 32_000]))
def test_in_place_instructions_survive_compaction(messages: list[Message], window: int) -> None:
    instructions = [m for m in messages if is_in_place_instruction(m)]
    assert violations(messages) == []  # valid input, instructions included
    snapshot = copy.deepcopy(messages)
    compressor = ContextCompressor(
        CompressionConfig(prune_only_ratio=0.01, protect_first_n=1), context_length=window
    )
    out = compressor.compress(messages).messages
    assert messages == snapshot
    assert [m for m in out if is_in_place_instruction(m)] == instructions
    assert violations(out) == []
