"""inspection.breakdown / summarize_plan on small hand-built conversations."""

from __future__ import annotations

from dataclasses import dataclass

from factories import assistant, call, image_part, system, tool, user
from windowkeeper.core.tokens import estimate_request_tokens, message_tokens
from windowkeeper.engine.inspection import UNKNOWN_TOOL, breakdown, summarize_plan

TOOLS = [
    {
        "type": "function",
        "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}},
    }
]


def _conversation() -> list[dict[str, object]]:
    return [
        system("s" * 40),  # 10 + 10 overhead = 20
        user("hello world!"),  # 3 + 10 = 13
        assistant("ok", call("c1", "bash", command="ls")),  # 1 + 10, envelope separately
        tool("c1", "y" * 400),  # 100 + 10 + 1 (tool_call_id "c1") = 111
        tool("zz", "z" * 40),  # no matching call: 10 + 10 + 1 = 21
        user([{"type": "text", "text": "look"}, image_part()]),  # 1 + 10 text, 1 image
    ]


def test_breakdown_known_numbers() -> None:
    messages = _conversation()
    result = breakdown(messages, TOOLS, image_tokens=1_000)
    # The envelope is the compact JSON of the call:
    # {"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}}
    # = 92 characters -> 23 tokens.
    assert result.tool_calls == 23
    assert result.system == 20
    assert result.user_text == 13 + 11
    assert result.assistant_text == 11
    assert result.images == 1_000
    assert result.image_count == 1
    assert result.tool_call_count == 1
    # "bash" + "run" + {"type":"object"} = 4 + 3 + 17 = 24 chars -> 6 tokens
    assert result.tool_schemas == 6
    assert [(t.name, t.count, t.tokens) for t in result.by_tool] == [
        ("bash", 1, 111),
        (UNKNOWN_TOOL, 1, 21),
    ]
    assert result.tool_results == 132


def test_breakdown_sums_to_the_request_estimate() -> None:
    messages = _conversation()
    result = breakdown(messages, TOOLS, image_tokens=1_000)
    assert result.total == estimate_request_tokens(messages, TOOLS, image_tokens=1_000)
    assert sum(result.categories().values()) == result.total


def test_empty_conversation() -> None:
    result = breakdown([], None)
    assert result.total == 0
    assert result.by_tool == ()


def test_top_tools_aggregates_the_rest() -> None:
    messages: list[dict[str, object]] = [user("go")]
    for number, name in enumerate(["a", "b", "c", "d"]):
        cid = f"id{number}"
        messages += [assistant(None, call(cid, name)), tool(cid, "x" * (100 * (number + 1)))]
    result = breakdown(messages)
    head, other = result.top_tools(2)
    assert [t.name for t in head] == ["d", "c"]
    assert other is not None
    assert other.count == 2
    assert sum(t.tokens for t in head) + other.tokens == result.tool_results
    assert result.top_tools(10)[1] is None


@dataclass(frozen=True)
class FakePlan:
    head_end: int
    tail_start: int
    prune_indices: tuple[int, ...]
    restated_user: int | None
    compressible: bool
    summary_budget_tokens: int


def test_summarize_plan_partitions_messages() -> None:
    messages = _conversation()
    plan = summarize_plan(messages, FakePlan(2, 5, (3, 4, 5), None, True, 2_000))
    sizes = [message_tokens(m) for m in messages]
    assert (plan.head.messages, plan.middle.messages, plan.tail.messages) == (2, 3, 1)
    assert plan.head.tokens + plan.middle.tokens + plan.tail.tokens == sum(sizes)
    # index 5 is in the tail, so it is not counted as pruned
    assert plan.pruned_outputs == 2
    assert plan.pruned_tokens == sizes[3] + sizes[4]
    assert not plan.restates_request
    assert plan.summary_budget_tokens == 2_000


def test_summarize_plan_clamps_a_nothing_to_compress_plan() -> None:
    messages = _conversation()
    plan = summarize_plan(messages, FakePlan(5, 2, (), 4, False, 2_000))
    assert plan.middle.messages == 0
    assert plan.head.messages + plan.tail.messages == len(messages)
    assert plan.restated_index == 4
    assert plan.restates_request
