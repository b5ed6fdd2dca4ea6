"""``tier1_out_of_reach`` sums what pruning leaves whole in C and walks only the prunable
range: the same answer as the walk over every message it replaced (issue 27)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.record import Analyzer
from windowkeeper.compaction.boundaries import system_end
from windowkeeper.compaction.plan import make_plan
from windowkeeper.compaction.usertexts import UserBudget, excerpt_tokens
from windowkeeper.core.config import DEFAULT_CONFIG, CompressionConfig
from windowkeeper.core.frozen import evolve
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.engine.pipeline import (
    ARGS_TOKENS,
    STUB_TOKENS,
    Job,
    make_job,
    prune_end,
    tier1_out_of_reach,
    tier1_target,
)


def _old_out_of_reach(job: Job, config: CompressionConfig, threshold: int) -> bool:
    target = tier1_target(job, config, threshold)
    start, end = system_end(job.messages), prune_end(job, config)
    floor = job.extra
    shortened = set(job.long_users)
    for index, record in enumerate(job.facts):
        if index in shortened:
            floor += min(record.tokens, excerpt_tokens(job.users))
        elif not start <= index < end or record.role not in ("tool", "assistant"):
            floor += record.tokens
        elif record.role == "tool":
            floor += min(record.tokens, STUB_TOKENS)
        elif record.message.get("tool_calls"):
            text = estimate_tokens(record.text)
            floor += text + min(record.tokens - text, ARGS_TOKENS)
        else:
            floor += record.tokens
        if floor > target:
            return True
    return False


_TEXT = st.text(alphabet="ab yz\n", max_size=900)


def _message(role: str, text: str, arguments: str) -> dict[str, Any]:
    if role == "call":
        call = {"id": "c1", "type": "function",
                "function": {"name": "bash", "arguments": arguments}}  # fmt: skip
        return {"role": "assistant", "content": text, "tool_calls": [call]}
    if role == "tool":
        return {"role": "tool", "tool_call_id": "c1", "content": text}
    return {"role": role, "content": text}


_ROLES = st.sampled_from(["system", "user", "assistant", "call", "tool"])
_MESSAGES = st.lists(st.builds(_message, _ROLES, _TEXT, _TEXT), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(_MESSAGES, st.data())
def test_the_same_answer_as_the_walk_over_every_message(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    facts = Analyzer().analyze(messages)
    costs = [f.tokens for f in facts]
    tail = data.draw(st.integers(0, 2_000))
    plan = make_plan(messages, costs, DEFAULT_CONFIG, 32_000, tail, facts)
    force = data.draw(st.booleans())
    job = make_job(
        messages, facts, plan, 0, data.draw(st.integers(0, 3_000)), DEFAULT_CONFIG, 32_000,
        force=force, focus=None,
    )  # fmt: skip
    shortened = data.draw(st.sets(st.integers(0, len(messages) - 1)))
    budget = UserBudget(data.draw(st.integers(0, 300)), data.draw(st.integers(0, 900)))
    job = evolve(job, long_users=tuple(sorted(shortened)), users=budget,
                 extra=data.draw(st.integers(0, 200)))  # fmt: skip
    threshold = data.draw(st.integers(0, 4_000))
    assert tier1_out_of_reach(job, DEFAULT_CONFIG, threshold) == _old_out_of_reach(
        job, DEFAULT_CONFIG, threshold
    )
