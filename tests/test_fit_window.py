"""Small windows: restated requests, the tight tail of a forced compaction, the last rungs.

A long autonomous run after one large user request is the hard case for a small window:
the request must stay verbatim, so it is restated after the handoff exactly once (never
quoted again in the handoff, never stacked by later compactions), and a forced compaction
that would still leave the request over the window keeps only the minimum tail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from factories import assistant, call, system, tool, user
from windowkeeper.analysis.kinds import in_progress_header, live_text
from windowkeeper.compaction.plan import fitting_plan
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message, content_text
from windowkeeper.core.tokens import estimate_messages_tokens, message_tokens
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.manager import ContextManager
from windowkeeper.summary.handoff.text import RESTATED

TASK = "Port the billing service to the new ledger API. " + " ".join(
    f"Rule {n}: keep invoice {n} byte-identical." for n in range(450)
)
LAST_RULE = "Rule 449: keep invoice 449 byte-identical."


def rounds(start: int, count: int, size: int = 3_000) -> list[Message]:
    out: list[Message] = []
    for n in range(start, start + count):
        out += [
            assistant(None, call(f"c{n}", "bash", command=f"make step{n}")),
            tool(f"c{n}", f"step {n} output " + "z" * size),
        ]
    return out


def text_of(messages: list[Message]) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages)


def compressor(window: int = 16_000) -> ContextCompressor:
    return ContextCompressor(CompressionConfig(protect_first_n=0), context_length=window)


def test_large_request_is_restated_once_and_the_handoff_points_to_it() -> None:
    messages = [system(), user(TASK), *rounds(0, 60)]
    comp = compressor()
    # Larger than the tail ceiling: restated anyway, since moving it costs nothing extra.
    assert message_tokens(messages[1]) > comp.tail_budget_tokens * comp.config.tail_soft_ceiling
    assert comp.plan(messages).restated_user == 1
    result = comp.compress(messages)
    out = result.messages
    assert result.report.compressed and violations(out) == []
    text = text_of(out)
    assert text.count(LAST_RULE) == 1
    assert text.count(in_progress_header()) == 1
    assert RESTATED in text
    assert [live_text(m) for m in out if m["role"] == "user"] == [TASK]


def test_repeated_compactions_never_stack_the_restatement() -> None:
    comp = compressor()
    messages = comp.compress([system(), user(TASK), *rounds(0, 60)]).messages
    for batch in range(1, 4):
        messages = comp.compress([*messages, *rounds(batch * 100, 20)], force=True).messages
        text = text_of(messages)
        assert text.count(in_progress_header()) == 1, f"compaction {batch + 1}"
        assert text.count(LAST_RULE) == 1
        assert violations(messages) == []
    assert comp.compression_count == 4


def big_edits(count: int, chars: int) -> list[Message]:
    out: list[Message] = []
    for n in range(count):
        body = f"def f{n}():\n" + "    return 1\n" * (chars // 14)
        out += [assistant(None, call(f"w{n}", "write_file", path=f"m{n}.py", content=body)),
                tool(f"w{n}", f"wrote m{n}.py")]  # fmt: skip
    return out


def test_forced_compaction_that_would_not_fit_keeps_only_the_minimum_tail() -> None:
    comp = compressor(window=8_000)
    messages = [system(), user(TASK), *rounds(0, 4, 400), *big_edits(8, 1_500)]
    assert estimate_messages_tokens(messages) > 8_000
    costs = [comp.analyzer.facts(m).tokens for m in messages]
    usual = comp.plan(messages)
    tight = fitting_plan(messages, costs, usual, comp.config, comp.context_length, 8_000)
    assert tight.tail_start > usual.tail_start
    assert len(messages) - tight.tail_start >= comp.config.min_tail_messages
    result = comp.compress(messages, force=True)
    assert result.report.compressed and violations(result.messages) == []
    assert result.report.after_tokens < 8_000
    # Without force the usual plan is used: the tight tail is only for requests that must fit.
    roomy = fitting_plan(messages, costs, usual, comp.config, comp.context_length, 10**9)
    assert roomy is usual


def preflight_at_4k(messages: list[Message]) -> tuple[list[Message], list[str]]:
    """A must-fit preflight at a 4K window: what is sent (checked under the window and
    valid) and the warnings it raised."""
    events: list[Event] = []
    manager = ContextManager(compressor(window=4_000), on_event=events.append)
    assert manager.estimate(messages) > manager.window
    sent = manager.preflight(messages)
    assert manager.estimate(sent) < manager.window and violations(sent) == []
    return sent, [e.message for e in events if e.kind is EventKind.WARNING]


def test_preflight_shortens_call_arguments_as_the_last_rung() -> None:
    # Nothing to summarize (one user turn, one tool exchange) and no large tool result:
    # only the body of the write can give way, and the JSON stays valid.
    messages = [system(), user("Write the module."), *big_edits(1, 24_000)]
    sent, warnings = preflight_at_4k(messages)
    for message in sent:
        for item in message.get("tool_calls") or []:
            arguments = json.loads(item["function"]["arguments"])
            assert arguments["path"].startswith("m")
    assert any("tool-call argument(s) were cut" in w for w in warnings)
    assert messages[2]["tool_calls"][0]["function"]["arguments"].count("return 1") > 800


def test_must_fit_summarizes_older_exchanges_of_the_turn_before_cutting_any() -> None:
    # One user turn of two large writes: past the minimum tail, the older write is
    # summarized (with its handle) and the newest exchange stays verbatim, uncut.
    messages = [system(), user("Write the two modules."), *big_edits(2, 12_000)]
    sent, warnings = preflight_at_4k(messages)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[-2:] == messages[-2:]  # the newest write and its result, untouched
    handoff = content_text(sent[1]["content"])
    assert "Wrote m0.py" in handoff  # the older write, summarized with its evidence
    assert handoff.endswith("\n\nWrite the two modules.")  # the request, restated verbatim
    assert not any("were cut" in w for w in warnings), warnings


def test_preflight_shortens_long_assistant_texts_after_the_other_rungs() -> None:
    # Nothing to summarize, small tool results, short arguments: only the assistant's own
    # long prose can give way (a request that is not sent helps no one); the newest user
    # message stays verbatim and the cut is marked.
    request = user("Write the plan, then check it. " + "Keep every step. " * 40)
    prose = "## Proposed plan\n" + "".join(f"Step {n}: refactor module {n}.\n" for n in range(900))
    messages = [system(), request, assistant(prose, call("p", "write_file", path="plan.md",
                content="see above")), tool("p", "wrote plan.md")]  # fmt: skip
    sent, warnings = preflight_at_4k(messages)
    assert sent[1] == request  # the newest user message, verbatim
    assert "characters cut here" in str(sent[2]["content"])
    assert sent[2]["tool_calls"] == messages[2]["tool_calls"]
    assert any("assistant message(s) were cut" in w for w in warnings), warnings
    assert messages[2]["content"] == prose  # the caller's list is not touched


def test_forced_compaction_that_would_not_fit_summarizes_a_large_head_listing() -> None:
    # The protected head (first three messages) holds a huge first listing: when the
    # request must fit, only the system prompt and the first user message stay protected.
    task = "Add a --skip-checks option to the management commands."
    messages = [
        system(),
        user(task),
        assistant(None, call("ls", "bash", command="ls -R /repo")),
        tool("ls", "\n".join(f"/repo/pkg/module_{n}.py" for n in range(2_000))),
        *rounds(0, 6, 800),
        user("Please continue."),
        assistant("Done: the option is implemented and tested."),
    ]
    comp = ContextCompressor(context_length=8_000)  # default head protection
    usual = comp.plan(messages)
    assert usual.head_end == 4  # system + three protected messages
    result = comp.compress(messages, force=True)
    out = result.messages
    assert result.report.compressed and violations(out) == []
    assert result.report.after_tokens < 8_000
    assert out[1] == messages[1]  # the first user message stays verbatim
    assert "module_1999.py" not in text_of(out)
    assert out[-1] == messages[-1] and out[-2] == messages[-2]


def test_a_short_restated_request_is_pointed_to_not_quoted_twice() -> None:
    task = "Migrate every module to the new logging API. Do not touch tests."
    comp = ContextCompressor(CompressionConfig(protect_first_n=0, prune_only_ratio=0.01),
                             context_length=16_000)  # fmt: skip
    out = comp.compress([system(), user(task), *rounds(0, 60)]).messages
    text = text_of(out)
    assert RESTATED in text and text.count(task) == 1
    assert text.count(in_progress_header()) == 1


class TooLong(Exception):
    """An OpenAI-style context-length error as a provider SDK raises it."""

    def __init__(self, limit: int, tokens: int) -> None:
        message = (
            f"This model's maximum context length is {limit} tokens. However, your "
            f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
        )
        super().__init__(message)
        self.status_code = 400
        self.body = {"error": {"message": message, "code": "context_length_exceeded"}}


def provider(limit: int, sent: list[int]) -> Callable[[list[Message]], dict[str, Any]]:
    def call(messages: list[Message]) -> dict[str, Any]:
        tokens = estimate_messages_tokens(messages)
        sent.append(tokens)
        if tokens > limit:
            raise TooLong(limit, tokens)
        usage = {"prompt_tokens": tokens, "completion_tokens": 5}
        return {"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": usage}

    return call


LOG = "\n".join(f"{n:05d} a line of build output" for n in range(3_000))


@pytest.mark.parametrize("as_parts", [False, True], ids=["string", "parts"])
def test_recovery_shortens_a_huge_fresh_tool_result(as_parts: bool) -> None:
    # The configured window is too optimistic; the provider's error names the real one.
    # Nothing old is left to summarize, so only shortening the fresh result can fit.
    content: Any = [{"type": "text", "text": LOG}] if as_parts else LOG
    messages = [system(), user("Run the build."),
                assistant(None, call("b", "bash", command="make")), tool("b", content)]  # fmt: skip
    events: list[Event] = []
    manager = ContextManager(ContextCompressor(context_length=128_000), on_event=events.append)
    sent: list[int] = []
    turn = manager.run(provider(16_000, sent), messages)
    assert len(sent) == 2 and sent[0] > 16_000 >= sent[1]
    assert manager.context_length == 16_000  # learned from the error
    assert violations(turn.messages) == []
    text = text_of(turn.messages)
    assert "00000 a line" in text and "02999 a line" in text  # head and tail of the log kept
    warnings = [e.message for e in events if e.kind is EventKind.WARNING]
    assert any("tool result(s) were cut" in w for w in warnings)


def test_on_a_tiny_window_the_handoff_shrinks_below_its_floor_to_fit() -> None:
    # The handoff budget's 2,000-token floor alone would fill a 2,000-token window.
    messages = [system()]
    for n in range(40):
        messages += [
            user(f"Fix issue {n} in src/pkg/mod_{n}.py; the test tests/test_{n}.py fails."),
            assistant(None, call(f"c{n}", "bash", command=f"pytest tests/test_{n}.py -x")),
            tool(
                f"c{n}",
                f"FAILED tests/test_{n}.py::test_x - AssertionError: expected {n}\n"
                "exit code: 1\n" + "log line\n" * 40,
            ),
            assistant(f"Fixed mod_{n}.py."),
        ]
    messages.append(user("ok thanks"))
    manager = ContextManager(ContextCompressor(context_length=2_000))
    sent = manager.preflight(messages)
    assert violations(sent) == []
    assert manager.estimate(sent) < 2_000
    assert sent[-1] == messages[-1]
    assert "mod_39.py" in text_of(sent)  # the newest work is still named


@pytest.mark.parametrize(
    "blank",
    ["", None, "  \n", [{"type": "file", "file": {"file_id": "file-abc123"}}]],
    ids=["empty", "null", "whitespace", "file-part"],
)
@pytest.mark.parametrize("head_ends_with_user", [False, True])
def test_restated_request_before_a_blank_user_message_keeps_alternation(
    blank: Any, head_ends_with_user: bool
) -> None:
    # The newest user message has no text, so the request before it is the one restated;
    # the tail opens with that blank user message, which must take the restatement.
    messages = [system(), user("Fix the failing test in app.py"), assistant("Fixed."),
                user("Now refactor the parser module."), *rounds(0, 12, 1_500),
                {"role": "user", "content": blank}, *big_edits(1, 6_000)]  # fmt: skip
    config = CompressionConfig(protect_first_n=1 if head_ends_with_user else 2)
    result = ContextCompressor(config, context_length=4_000).compress(messages, force=True)
    out = result.messages
    assert result.report.compressed
    assert violations(out) == []
    restated = [m for m in out if in_progress_header() in content_text(m.get("content"))]
    assert len(restated) == 1 and restated[0]["role"] == "user"
    assert live_text(restated[0]).startswith("Now refactor the parser module.")
    if isinstance(blank, list):
        assert blank[0] in restated[0]["content"]  # the file part stays


def test_a_result_of_many_short_text_parts_is_shortened_as_one_text() -> None:
    parts = [{"type": "text", "text": f"row {n}: " + "v" * 140} for n in range(400)]
    messages = [system(), user("Dump the table."),
                assistant(None, call("t", "query", sql="select *")), tool("t", parts)]  # fmt: skip
    manager = ContextManager(ContextCompressor(context_length=8_000))
    before = manager.estimate(messages)
    sent = manager.preflight(messages)
    assert manager.estimate(sent) < min(before, manager.window)
    assert violations(sent) == []
    text = text_of(sent)
    assert "row 0:" in text and "row 399:" in text  # head and tail of the result kept


def test_an_image_only_send_is_restated_with_the_request_it_continues() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    request = "Fix the layout bug in the screenshot. " + " ".join(
        f"Rule {n}: margin {n}px." for n in range(600)
    )
    messages = [system(), user("hello"), assistant("Hi, what can I do?"), user(request),
                assistant("Send the screenshot."), {"role": "user", "content": [image]},
                *rounds(0, 12, 3_200)]  # fmt: skip
    for window in (8_000, 32_000):
        summary_only = CompressionConfig(protect_first_n=0, prune_only_ratio=0.01)
        comp = ContextCompressor(summary_only, context_length=window)
        out = comp.compress(messages, force=True).messages
        assert violations(out) == []
        restated = [m for m in out if in_progress_header() in content_text(m.get("content"))]
        assert len(restated) == 1 and restated[0]["role"] == "user"
        assert request in content_text(restated[0]["content"])  # the instruction, verbatim
        assert image in restated[0]["content"]  # and the image that followed it
