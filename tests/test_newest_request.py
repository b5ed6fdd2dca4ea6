"""Design §9: the newest written request is never dropped (issue 25 point 1).

A history may end in sends without text (an empty parts list, images alone) after the
newest written request: ``user(text) … user([]), assistant, user([image_url])``. Those
sends continue the written request, and a compaction must keep it in the tail or restate
it after the handoff, whichever tail a must-fit compaction settles on.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper.compaction.boundaries import tail_cut
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text, image_count
from windowkeeper.core.tokens import message_tokens
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.testing.histories import fuzz_case, keeps_newest_request, random_history

_PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"
REQUEST = "Make the refund page match the screenshot WIDGET-77, then run the tests."


def _image_only(count: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": _PNG}}] * count}


def _rounds(tag: str, n: int, size: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [assistant(None, call(f"c{tag}{i}", "bash", command=f"step {i}")),
                tool(f"c{tag}{i}", "o" * size)]  # fmt: skip
    return out


def _written(out: list[dict[str, Any]]) -> bool:
    return any(REQUEST in content_text(m.get("content")) for m in out if m["role"] == "user")


def test_the_minimum_tail_on_an_image_send_restates_the_request_before_it() -> None:
    """The tightest tail (one message, no budget) starts at the image send: the written
    request two tool rounds before it is restated. Before the fix the cut moved onto the
    send after the restatement was decided, and nothing was restated."""
    messages = [system(), user("start"), assistant("ok"), user(REQUEST),
                *_rounds("a", 2, 3_000), _image_only(), assistant("It matches now.")]  # fmt: skip
    costs = [message_tokens(m) for m in messages]
    cut = tail_cut(messages, costs, 2, 0, min_tail=1)
    assert cut.start == 8 and cut.restated_user == 3, cut


def test_a_forced_compaction_at_a_small_window_keeps_the_written_request() -> None:
    messages = [system("s " * 300), user("start"), assistant("ok"), user(REQUEST),
                *_rounds("a", 2, 12_000), {"role": "user", "content": []},
                assistant("Send it?"), _image_only(2), assistant("Looking.")]  # fmt: skip
    for window in (2_048, 3_000, 5_000):
        result = ContextCompressor(context_length=window).compress(messages, force=True)
        assert result.report.compressed, window
        assert violations(result.messages) == [], window
        assert _written(result.messages), (window, result.report.warnings)
        assert any(image_count(m) for m in result.messages if m["role"] == "user"), window


_SEND = st.sampled_from(("empty", "image", "images"))


@st.composite
def _ending(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Sends without text after the request, each maybe with tool rounds and a reply."""
    out: list[dict[str, Any]] = []
    sends = draw(st.integers(1, 3))
    for number in range(sends):
        kind = draw(_SEND)
        out.append({"role": "user", "content": []} if kind == "empty" else
                   _image_only(2 if kind == "images" else 1))  # fmt: skip
        out += _rounds(f"e{number}", draw(st.integers(0, 2)), draw(st.integers(10, 9_000)))
        last = number == sends - 1
        if out[-1]["role"] == "user" and (not last or draw(st.booleans())):
            out.append(assistant(draw(st.sampled_from(("ok", "Looking. " * 200)))))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    rounds=st.integers(0, 6),
    size=st.integers(10, 12_000),
    ending=_ending(),
    window=st.integers(2_000, 40_000),
    force=st.booleans(),
    min_tail=st.integers(1, 4),
)
@example(seed=0, rounds=2, size=12_000, ending=[_image_only(), assistant("ok")],
         window=2_048, force=True, min_tail=3)  # fmt: skip
def test_the_newest_written_request_survives_sends_without_text(
    seed: int,
    rounds: int,
    size: int,
    ending: list[dict[str, Any]],
    window: int,
    force: bool,
    min_tail: int,
) -> None:
    """Whatever comes before it (a random hostile history), however many tool rounds
    follow it and whatever sends without text end the history, a compaction keeps the
    newest written request or restates it (user text is never cut, so no warning may
    excuse its loss)."""
    messages = random_history(random.Random(seed), max_turns=6)
    if messages and messages[-1]["role"] == "user":
        messages.append(assistant("ok"))
    messages += [user(REQUEST), *_rounds("r", rounds, size)]
    if not rounds:
        messages.append(assistant("On it."))
    messages += ending
    assert violations(messages) == []
    config = CompressionConfig(min_tail_messages=min_tail)
    result = ContextCompressor(config, context_length=window).compress(messages, force=force)
    assert violations(result.messages) == []
    assert _written(result.messages), (result.report.tier, result.report.warnings)
    assert keeps_newest_request(messages, result.messages)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
@example(seed=442)  # dropped the request before the fix (forced, window 3,084)
@example(seed=664)  # dropped the request before the fix (forced, window 6,633)
def test_the_fuzz_cases_keep_the_newest_written_request(seed: int) -> None:
    case = fuzz_case(seed)
    assert not case.task_dropped, f"seed {seed}: window {case.window:,}, forced {case.force}"
