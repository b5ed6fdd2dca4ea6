from __future__ import annotations

from factories import assistant, call, system, tool, user
from windowkeeper.analysis.kinds import HANDOFF_KEY, in_progress_header
from windowkeeper.compaction.boundaries import TailCut, head_end, tail_cut
from windowkeeper.compaction.handoff import system_note
from windowkeeper.compaction.placement import place_handoff, with_system_note
from windowkeeper.core.invariants import alternation_violations, violations
from windowkeeper.core.messages import content_text, image_count
from windowkeeper.core.tokens import message_tokens
from windowkeeper.engine.compressor import ContextCompressor


def _costs(messages: list[dict[str, object]]) -> list[int]:
    return [message_tokens(m) for m in messages]


def _rounds(n: int, size: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        out += [
            assistant(None, call(f"c{i}", "bash", command=f"step {i}")),
            tool(f"c{i}", "o" * size),
        ]
    return out


def test_head_protects_first_n_until_the_first_compaction() -> None:
    messages = [system(), user("a"), assistant("b"), user("c"), assistant("d")]
    assert head_end(messages, 3, decayed=False) == 4
    assert head_end(messages, 3, decayed=True) == 1
    assert head_end(messages[1:], 2, decayed=False) == 2


def test_head_never_ends_inside_a_tool_group() -> None:
    messages = [system(), user("a"), *_rounds(2, 10), assistant("done")]
    assert head_end(messages, 2, decayed=False) == 4  # system, user, call + its result


def test_tail_walk_respects_budget_and_minimum() -> None:
    messages = [system(), user("task"), *_rounds(20, 10_000), assistant("summary"), user("next?")]
    costs = _costs(messages)
    cut = tail_cut(messages, costs, 2, budget=6_000)
    tail = messages[cut.start :]
    assert 3 <= len(tail) < 20
    assert sum(costs[cut.start :]) <= 9_000 or len(tail) == 3
    assert tail[0]["role"] != "tool"


def test_minimum_tail_of_three_with_a_tiny_budget() -> None:
    messages = [system(), user("task"), *_rounds(10, 400), assistant("ok"), user("more")]
    cut = tail_cut(messages, _costs(messages), 2, budget=1)
    assert len(messages) - cut.start >= 3


def test_soft_ceiling_admits_a_message_just_over_budget() -> None:
    messages = [
        system(),
        user("a"),
        assistant("b" * 400),
        user("c" * 4_400),
        assistant("d"),
        user("e"),
    ]
    costs = _costs(messages)
    budget = costs[-1] + costs[-2] + costs[-3] + 10
    cut = tail_cut(messages, costs, 1, budget=budget, min_tail=1)
    assert cut.start == 3  # user "c..." is over the budget but inside 1.5x
    tight = tail_cut(messages, costs, 1, budget=budget // 2, min_tail=1)
    assert tight.start > 3


def test_newest_user_is_anchored_into_the_tail() -> None:
    messages = [system(), user("old"), assistant("old answer"), user("the live question")]
    messages += [assistant("a very long answer " * 500)]
    cut = tail_cut(messages, _costs(messages), 1, budget=10, min_tail=1)
    assert cut == TailCut(3, None)


def test_newest_assistant_text_is_anchored_when_it_fits() -> None:
    messages = [system(), user("task"), *_rounds(6, 4_000), assistant("Found it: the bug is in x.")]
    messages += [*_rounds(2, 10)]
    costs = _costs(messages)
    budget = sum(costs[-5:]) + 5
    cut = tail_cut(messages, costs, 2, budget=budget, min_tail=1)
    assert cut.start == len(messages) - 5
    assert messages[cut.start]["content"] == "Found it: the bug is in x."
    far = tail_cut(messages, costs, 2, budget=sum(costs[-4:]) // 2, min_tail=1)
    assert far.start > len(messages) - 5  # anchoring would not fit: the run stays compressible


def test_long_autonomous_run_cuts_inside_the_turn_and_restates_the_request() -> None:
    messages = [
        system(),
        user("Refactor the billing module; keep the API stable."),
        *_rounds(40, 4_000),
    ]
    cut = tail_cut(messages, _costs(messages), 1, budget=5_000)
    assert cut.restated_user == 1
    assert cut.start > 2 and messages[cut.start]["role"] == "assistant"


def test_a_harness_message_is_never_restated_as_the_request() -> None:
    """A task notification or interrupt marker opening the long run is context: the
    request restated is the newest one the user wrote, or none (it is the task in the
    head, which the handoff already points to)."""
    notification = user(
        "[Request interrupted by user for tool use]\n\n<task-notification>\n"
        "<status>completed</status>\n</task-notification>\n"
        "Read the output file to retrieve the result: /tmp/t/b0be39e.output"
    )
    request = "Now add the CSV export too."
    middle = [*_rounds(2, 400), user(request), *_rounds(2, 400), notification]
    messages = [system(), user("Refactor billing."), *middle, *_rounds(40, 4_000)]
    cut = tail_cut(messages, _costs(messages), 2, budget=5_000)
    assert cut.restated_user is not None
    assert messages[cut.restated_user]["content"] == request
    alone = [system(), user("Refactor billing."), notification, *_rounds(40, 4_000)]
    cut = tail_cut(alone, _costs(alone), 2, budget=5_000)
    assert cut.restated_user is None and cut.start > 3


def test_nothing_to_compress_when_the_tail_covers_everything() -> None:
    messages = [system(), user("a"), assistant("b"), user("c")]
    cut = tail_cut(messages, _costs(messages), 4, budget=100_000)
    assert cut.start == 4


def test_system_note_is_appended_once() -> None:
    head = [system("base")]
    once = with_system_note(head)
    assert once[0]["content"] == f"base\n\n{system_note()}"
    assert head[0]["content"] == "base"
    assert with_system_note(once) is once
    listed = with_system_note([{"role": "system", "content": [{"type": "text", "text": "base"}]}])
    assert listed[0]["content"][-1]["text"] == system_note()


def test_role_after_assistant_is_user_and_after_user_is_assistant() -> None:
    out = place_handoff([system(), user("a"), assistant("b")], "H", [assistant("c"), user("d")])
    assert out[3] == {"role": "user", "content": "H", HANDOFF_KEY: True}
    out = place_handoff([system(), user("a")], "H", [user("d")])
    assert out[2]["role"] == "assistant"
    assert alternation_violations(out) == []


def test_first_message_after_system_is_a_user_handoff() -> None:
    out = place_handoff([system()], "H", [assistant("x"), user("y")])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]


def test_both_roles_collide_so_the_handoff_is_merged_into_the_first_tail_message() -> None:
    out = place_handoff([system(), user("a")], "H", [assistant("reply"), user("q")])
    assert len(out) == 4
    assert out[2]["role"] == "assistant" and out[2]["content"] == "H\n\nreply"
    assert alternation_violations(out) == []
    out = place_handoff([system(), user("a"), assistant("b")], "H", [user("live")])
    assert out[3]["content"].endswith("live") and out[3]["content"].startswith("H")


def test_system_only_head_and_user_first_tail_merges_into_the_user() -> None:
    out = place_handoff([system()], "H", [user("live"), assistant("ok")])
    assert [m["role"] for m in out] == ["system", "user", "assistant"]
    assert out[1]["content"] == "H\n\nlive"


def test_a_session_always_keeps_a_user_message() -> None:
    out = place_handoff(
        [system()], "H", [assistant(None, call("c", "bash", command="ls")), tool("c", "x")]
    )
    assert out[1]["role"] == "user"


def test_between_two_user_messages_without_text_the_handoff_is_an_assistant_turn() -> None:
    """No real user message is left, but both neighbours are user turns: a user handoff
    (or one merged into the tail) would break alternation (found by hypothesis)."""
    for head in ([user("")], [system(), user("")]):
        out = place_handoff(head, "H", [user("")])
        assert alternation_violations(out) == []
        assert [m["role"] for m in out][-3:] == ["user", "assistant", "user"]
        assert out[-2][HANDOFF_KEY] is True


def test_restated_request_follows_the_handoff() -> None:
    request = user("Refactor billing")
    tail = [assistant(None, call("c", "bash", command="ls")), tool("c", "x")]
    out = place_handoff([system()], "H", tail, restated=request)
    assert out[1]["role"] == "user"
    assert out[1]["content"] == f"H\n\n{in_progress_header()}\n\nRefactor billing"
    out = place_handoff([system(), user("first")], "H", tail, restated=request)
    assert [m["role"] for m in out[:4]] == ["system", "user", "assistant", "user"]
    assert alternation_violations(out) == []


_PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"


def _image_only() -> dict[str, object]:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": _PNG}}]}


def test_a_send_without_text_restates_the_written_request_it_continues() -> None:
    """Issue 25 point 1: ``user(text) … user([]), assistant, user([image])`` — the image
    send is the newest real user message, and the written request before it must be
    restated (not summarized away), whatever the budget."""
    request = user("Make the refund page match the screenshot WIDGET-77.")
    messages = [system(), user("start"), assistant("ok"), request, *_rounds(6, 3_000),
                assistant("done"), {"role": "user", "content": []}, assistant("waiting"),
                _image_only()]  # fmt: skip
    for budget in (50, 400, 2_000):
        cut = tail_cut(messages, _costs(messages), 1, budget)
        assert cut.start > 3 and cut.restated_user == 3, (budget, cut)


def test_a_compaction_keeps_the_written_request_and_the_image() -> None:
    request = user("Make the refund page match the screenshot WIDGET-77.")
    messages = [system(), user("start"), assistant("ok"), request, *_rounds(6, 3_000),
                assistant("done"), {"role": "user", "content": []}, assistant("waiting"),
                _image_only()]  # fmt: skip
    for window in (2_000, 4_000, 16_000):
        out = ContextCompressor(context_length=window).compress(messages, force=True).messages
        assert violations(out) == []
        assert any("WIDGET-77" in content_text(m.get("content")) for m in out), window
        assert any(image_count(m) for m in out if m["role"] == "user"), window
