"""ContextManager: the three triggers, guard interplay and events, in process.

Our versions of the reference scenarios (hermes-behaviour §5.A, §5.G, §5.H, §5.I) driven by
a scripted fake model (a call function); the loopback-server versions are in
``test_manager_server.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest

from factories import assistant, call, image_part, long_session, system, tool, user
from windowkeeper.core.errors import CompressionExhaustedError
from windowkeeper.core.messages import Message
from windowkeeper.core.report import CompressionReport, CompressionResult, Outcome, Reason, Tier
from windowkeeper.core.tokens import estimate_messages_tokens
from windowkeeper.engine.base import ContextEngine
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.events import Event, EventKind, Trigger, WarningCode
from windowkeeper.loop.manager import ContextManager
from windowkeeper.loop.steps import TurnResult


def status_error(status: int, message: str, code: str | None = None) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    response = httpx.Response(status, json=body, request=request)
    return openai.APIStatusError(message, response=response, body=body)


@dataclass
class ScriptedEngine(ContextEngine):
    """A transparent engine: compaction keeps the last ``keep`` messages (or nothing)."""

    threshold: int = 1_000
    context_length: int = 10_000
    keep: int = 4
    shrinks: bool = True
    blocked_reason: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    usages: list[Mapping[str, Any] | None] = field(default_factory=list)
    count: int = 0
    name: str = "scripted"

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return (prompt_tokens or 0) >= self.threshold and self.blocked_reason is None

    def compress(
        self,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> CompressionResult:
        self.calls.append({"n": len(messages), "force": force, "focus": focus_topic})
        before = estimate_messages_tokens(messages)
        if not self.shrinks or len(messages) <= self.keep:
            report = CompressionReport(Outcome.NOOP, Reason.NOTHING_TO_COMPRESS,
                                       before_tokens=before, after_tokens=before)  # fmt: skip
            return CompressionResult(messages, report)
        out = [{"role": "user", "content": "[handoff]", "_wk_handoff": True},
               *messages[-self.keep :]]  # fmt: skip
        self.count += 1
        report = CompressionReport(
            Outcome.COMPRESSED, before_tokens=before,
            after_tokens=estimate_messages_tokens(out), before_messages=len(messages),
            after_messages=len(out),
        )  # fmt: skip
        return CompressionResult(out, report)

    def update_from_response(self, usage: Mapping[str, Any] | None) -> None:
        self.usages.append(usage)

    def get_status(self) -> dict[str, Any]:
        return {"threshold_tokens": self.threshold, "context_length": self.context_length,
                "compression_count": self.count, "blocked_reason": self.blocked_reason}  # fmt: skip

    def update_model(self, *, context_length: int | None = None, **_: Any) -> None:
        self.context_length = context_length or self.context_length


class Events(list[Event]):
    def kinds(self) -> list[EventKind]:
        return [e.kind for e in self]

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self if e.kind is kind]


class Model:
    """A scripted fake model: each call pops the next answer (an exception is raised)."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.requests: list[list[Message]] = []

    def __call__(self, messages: list[Message]) -> object:
        self.requests.append(messages)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def chat(n: int, size: int = 400) -> list[Message]:
    """A plain conversation of ``n`` alternating messages of ``size`` characters."""
    return [(user if i % 2 == 0 else assistant)(f"message {i} " + "x" * size) for i in range(n)]


def usage(prompt: int, completion: int = 0) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


# --- preflight (§5.H, §5.I 93, 96) ---------------------------------------------------


def test_cheap_gate_skips_the_full_estimate() -> None:
    manager = ContextManager(ScriptedEngine(threshold=10_000))
    messages = chat(6, 50)
    assert manager.preflight(messages) is messages
    assert manager._cache._messages == []  # the full estimate never ran


def test_preflight_compresses_an_oversized_history_before_the_first_call() -> None:
    engine = ScriptedEngine()
    events = Events()
    manager = ContextManager(engine, on_event=events.append)
    model = Model(usage(300))
    history = chat(40)
    result = manager.run(model, history)
    assert engine.calls == [{"n": 40, "force": False, "focus": None}]
    assert len(model.requests[0]) == 5 and "_wk_handoff" not in model.requests[0][0]
    assert result.messages[0].get("_wk_handoff")  # metadata stays in the working list
    started, finished = (
        events.of(EventKind.COMPACTION_STARTED),
        events.of(EventKind.COMPACTION_FINISHED),
    )
    assert started[0].trigger is Trigger.PREFLIGHT and finished[0].tokens_after is not None
    assert finished[0].messages_before == 40 and finished[0].messages_after == 5


def test_no_preflight_under_the_threshold() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    manager = ContextManager(engine)
    messages = chat(60)
    assert manager.preflight(messages) is messages and engine.calls == []


def test_defers_exactly_one_request_after_a_compaction() -> None:
    engine = ScriptedEngine(keep=30)
    events = Events()
    manager = ContextManager(engine, on_event=events.append)
    messages = manager.preflight(chat(40))
    assert len(engine.calls) == 1 and manager.last_prompt_tokens == -1
    grown = [*messages, *chat(2)]
    assert manager.preflight(grown) is grown  # still over by estimate: deferred once
    assert events.of(EventKind.COMPACTION_SKIPPED)[-1].reason == "awaiting_real_usage"
    assert len(engine.calls) == 1
    assert manager.preflight(grown) is not grown  # the next one is not deferred
    assert len(engine.calls) == 2


def test_real_usage_clears_the_deferral() -> None:
    engine = ScriptedEngine(keep=30)
    manager = ContextManager(engine)
    messages = manager.preflight(chat(40))
    messages = manager.after_response({"prompt_tokens": 500}, messages)
    assert not manager.awaiting_real_usage and manager.last_prompt_tokens == 500
    assert manager.preflight(messages) is not messages  # estimate over: compacts again


def test_over_the_window_is_never_deferred() -> None:
    engine = ScriptedEngine(threshold=1_000, context_length=3_000, keep=3)
    manager = ContextManager(engine)
    messages = manager.preflight(chat(40))
    assert manager.awaiting_real_usage
    huge = [*messages, *chat(40)]
    assert manager.preflight(huge) is not huge  # > window: compacted despite the deferral


def test_estimate_cache_follows_changes_at_an_index() -> None:
    manager = ContextManager(ScriptedEngine(threshold=10**9, context_length=10**10))
    messages = chat(30)
    first = manager.estimate(messages)
    assert manager.estimate([*messages, *chat(1)]) > first
    replaced = [user("short"), *messages[1:]]
    assert manager.estimate(replaced) < first
    assert manager.estimate(messages) == first


# --- post-response (§5.A 4-6, §5.I 95) -------------------------------------------------


def test_post_response_uses_prompt_tokens_only() -> None:
    engine = ScriptedEngine(threshold=1_000)
    manager = ContextManager(engine)
    messages = chat(4, 10)
    assert manager.after_response({"prompt_tokens": 999, "completion_tokens": 50_000,
                                   "reasoning_tokens": 9_000}, messages) is messages  # fmt: skip
    assert engine.calls == []
    out = manager.after_response({"prompt_tokens": 1_000}, chat(10, 10))
    assert len(engine.calls) == 1 and len(out) == 5


def test_sentinel_reads_as_zero_in_the_compressor_status() -> None:
    compressor = ContextCompressor(context_length=32_000)
    manager = ContextManager(compressor)
    messages = [system(), *long_session(rounds=30)[1:]]
    out = manager.compress(messages)
    assert out is not messages and manager.last_prompt_tokens == -1
    status = compressor.get_status()
    assert status["last_prompt_tokens"] == 0 and status["usage_percent"] == 0.0
    manager.after_response({"prompt_tokens": -1}, out)  # a sentinel is never real usage
    assert manager.last_prompt_tokens == -1


def test_response_without_usage_defers_to_the_next_preflight() -> None:
    engine = ScriptedEngine()
    manager = ContextManager(engine)
    messages = chat(30)
    assert manager.after_response(None, messages) is messages and engine.calls == []
    assert manager.preflight(messages) is not messages


# --- error recovery (§5.I 85-89, 97-99, 103) -------------------------------------------


def test_413_compresses_and_retries_with_the_compressed_list() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    model = Model(status_error(413, "Request Entity Too Large"), usage(10))
    result = manager_run(engine, model, chat(20))
    assert len(engine.calls) == 1 and engine.calls[0]["force"]
    assert len(model.requests) == 2 and len(model.requests[1]) == 5
    assert result.messages[1:] == model.requests[1][1:]


def test_413_strips_tool_images_before_compressing() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    events = Events()
    manager = ContextManager(engine, on_event=events.append)
    shot = tool("c1", [image_part("https://example.test/screen.png")])
    messages = [user("look"), assistant(None, call("c1", "screenshot")), shot]
    model = Model(status_error(413, "payload too large"), usage(10))
    manager.run(model, messages)
    assert engine.calls == []  # no compaction spent
    assert "image removed" in str(model.requests[1][2]["content"])
    assert events.of(EventKind.IMAGES_STRIPPED)[0].count == 1


def test_context_length_error_learns_the_limit_before_retrying() -> None:
    compressor = ContextCompressor(context_length=1_000_000)
    events = Events()
    manager = ContextManager(compressor, on_event=events.append)
    error = status_error(400, "This model's maximum context length is 262144 tokens. "
                              "However, your messages resulted in 300000 tokens.",
                         "context_length_exceeded")  # fmt: skip
    model = Model(error, usage(10))
    sent = manager.estimate(long_session(rounds=40))
    manager.run(model, long_session(rounds=40))
    assert events.of(EventKind.LIMIT_LEARNED)[0].count == 262_144
    # Their count (300,000) of what we estimate as `sent` calibrates the aim to our units.
    assert compressor.context_length == int(262_144 * 0.97 * sent / 300_000)
    assert estimate_messages_tokens(model.requests[1]) < estimate_messages_tokens(model.requests[0])


@pytest.mark.parametrize(
    "message",
    ["prompt is too long: 210000 tokens > 200000 maximum",
     "the request exceeds the available context size, try increasing it",
     "prompt too long; exceeded max context length by 312 tokens"],
)  # fmt: skip
def test_provider_wordings_trigger_compression(message: str) -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    model = Model(status_error(400, message), usage(10))
    manager_run(engine, model, chat(20))
    assert len(engine.calls) == 1


def test_generic_400_counts_only_on_a_large_session() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    model = Model(status_error(400, "Bad Request"), usage(10))
    manager_run(engine, model, chat(90))
    assert len(engine.calls) == 1
    small = Model(status_error(400, "Bad Request"))
    with pytest.raises(openai.APIStatusError):
        manager_run(engine, small, chat(6))


def test_long_context_429_caps_the_window_and_compresses() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    model = Model(status_error(429, "Extra usage is required for long context requests."),
                  usage(10))  # fmt: skip
    manager_run(engine, model, chat(20))
    assert engine.context_length == 200_000 and len(engine.calls) == 1


def test_a_rate_limit_is_not_an_overflow() -> None:
    engine = ScriptedEngine()
    error = status_error(429, "Rate limit reached")
    with pytest.raises(openai.APIStatusError) as caught:
        manager_run(engine, Model(error), chat(4, 10))
    assert caught.value is error and engine.calls == []


def test_other_errors_are_reraised_unchanged() -> None:
    error = ConnectionError("boom")
    with pytest.raises(ConnectionError) as caught:
        manager_run(ScriptedEngine(), Model(error), chat(4, 10))
    assert caught.value is error


def test_overflow_that_cannot_shrink_fails_after_one_unchanged_retry() -> None:
    # Nothing can shrink: a transient fault is the one explanation a retry can serve, so
    # the request goes once more unchanged; a second refusal fails the turn.
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000, shrinks=False)
    refusal = status_error(413, "Request Entity Too Large")
    model = Model(refusal, refusal)
    with pytest.raises(CompressionExhaustedError) as caught:
        manager_run(engine, model, chat(20))
    assert len(model.requests) == 2 and model.requests[0] == model.requests[1]
    text = str(caught.value)
    assert "cannot be compressed further" in text and "new session" in text
    assert "focus" in text and "context window" in text


def test_at_most_max_attempts_per_turn() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000, keep=1)
    overflow = status_error(400, "prompt is too long")
    model = Model(*[overflow] * 10)
    manager = ContextManager(engine, max_attempts=3)
    with pytest.raises(CompressionExhaustedError, match="after 3 attempts"):
        manager.run(model, chat(40))
    assert len(model.requests) == 4


def test_output_cap_without_figures_is_not_compressed() -> None:
    engine = ScriptedEngine()
    error = status_error(400, "max_tokens is too large: 9000. This model supports at most "
                              "4096 completion tokens")  # fmt: skip
    with pytest.raises(Exception, match="lower max_tokens") as caught:
        manager_run(engine, Model(error), chat(4, 10))
    assert caught.value.__cause__ is error and engine.calls == []


def test_recovery_runs_after_a_blocked_preflight() -> None:
    engine = ScriptedEngine(threshold=1_000, context_length=100_000, blocked_reason="cooldown")
    events = Events()
    manager = ContextManager(engine, on_event=events.append)
    model = Model(status_error(400, "prompt is too long"), usage(10))
    manager.run(model, chat(40))
    assert [c["force"] for c in engine.calls] == [True]
    blocked = [e for e in events.of(EventKind.WARNING) if e.warning is WarningCode.BLOCKED]
    assert blocked and "cooldown" in blocked[0].message


def manager_run(engine: ContextEngine, model: Model, messages: list[Message]) -> TurnResult[Any]:
    return ContextManager(engine).run(model, messages)


# --- guard interplay (§5.G 73-75) -------------------------------------------------------


def floor_session() -> list[Message]:
    """A system prompt that, with the tool schemas, alone exceeds the 100,000-token trigger."""
    return [system("You are an agent. " + "Rules. " * 60_000), *long_session(rounds=30)[1:]]


def test_incompressible_floor_never_loops() -> None:
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 2_000,
              "parameters": {"type": "object"}}} for i in range(20)]  # fmt: skip
    compressor = ContextCompressor(context_length=200_000, tools=tools)
    events = Events()
    manager = ContextManager(compressor, on_event=events.append)
    messages = floor_session()
    floor = manager.estimate(messages[:1])  # system prompt + tool schemas
    assert compressor.threshold_tokens < floor < compressor.context_length
    for turn in range(8):
        prompt = manager.estimate(messages)
        result = manager.run(lambda m, p=prompt: usage(p), messages)
        messages = [*result.messages, assistant(f"step {turn}"), user(f"next {turn}")]
    assert 1 <= len(events.of(EventKind.COMPACTION_STARTED)) <= 3
    assert compressor.guard.strikes >= 2 or compressor.guard.low_savings_streak >= 2
    decision = compressor.decide(manager.estimate(messages))
    assert not decision.compress and decision.reason is not None
    blocked = [e for e in events.of(EventKind.WARNING) if e.warning is WarningCode.BLOCKED]
    assert len({e.reason for e in blocked}) == len(blocked)  # deduplicated per reason
    assert blocked[-1].reason == decision.reason.value
    assert "over threshold but blocked" in blocked[-1].message
    assert "system prompt and tool schemas alone" in blocked[-1].message


def test_effective_compaction_resets_strikes() -> None:
    compressor = ContextCompressor(context_length=32_000)
    manager = ContextManager(compressor)
    messages = manager.preflight(long_session(rounds=40))
    assert compressor.guard.verify_pending
    manager.after_response({"prompt_tokens": 5_000}, messages)
    assert compressor.guard.strikes == 0 and not compressor.guard.verify_pending


def test_compressed_many_times_warning() -> None:
    engine = ScriptedEngine(keep=30)
    events = Events()
    manager = ContextManager(engine, on_event=events.append)
    messages = chat(40)
    for _ in range(3):
        messages = manager.compress([*messages, *chat(12)])
    many = [e for e in events.of(EventKind.WARNING)
            if e.warning is WarningCode.COMPRESSED_MANY_TIMES]  # fmt: skip
    assert [e.count for e in many] == [2, 3]
    assert "accuracy may degrade" in many[0].message


# --- events ---------------------------------------------------------------------------


def test_a_raising_event_callback_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    def explode(event: Event) -> None:
        raise RuntimeError("ui is broken")

    manager = ContextManager(ScriptedEngine(), on_event=explode)
    with caplog.at_level(logging.ERROR, logger="windowkeeper.loop.events"):
        out = manager.preflight(chat(40))
    assert len(out) == 5 and "on_event callback raised" in caplog.text


def test_events_carry_no_message_text() -> None:
    events = Events()
    manager = ContextManager(ScriptedEngine(), on_event=events.append)
    secret = "sk-the-secret-value"
    manager.preflight([user(secret + " " + "x" * 400), *chat(39)])
    assert events and all(secret not in repr(e) for e in events)


def test_aborted_compaction_emits_no_finished_event() -> None:
    class Aborting(ScriptedEngine):
        def compress(self, messages: list[Message], **_: Any) -> CompressionResult:
            detail = "compression aborted, nothing was dropped: timeout"
            report = CompressionReport(Outcome.ABORTED, Reason.SUMMARY_FAILED, detail)
            return CompressionResult(messages, report)

    events = Events()
    manager = ContextManager(Aborting(), on_event=events.append)
    messages = chat(40)
    assert manager.preflight(messages) is messages
    assert EventKind.COMPACTION_ABORTED in events.kinds()
    assert EventKind.COMPACTION_FINISHED not in events.kinds()
    assert not manager.awaiting_real_usage


# --- async driver ---------------------------------------------------------------------


def test_arun_shares_the_state_machine() -> None:
    engine = ScriptedEngine(threshold=100_000, context_length=1_000_000)
    model = Model(status_error(413, "Request Entity Too Large"), usage(10))

    async def acall(messages: list[Message]) -> object:
        await asyncio.sleep(0)
        return model(messages)

    result = asyncio.run(ContextManager(engine).arun(acall, chat(20)))
    assert len(engine.calls) == 1 and len(model.requests[1]) == 5
    assert result.response == usage(10)


def test_cheap_gate_does_not_underestimate_dense_scripts() -> None:
    # Few messages: the gate's character estimate decides. CJK text is one token a
    # character, so reading it as chars/4 would let an over-window request through.
    text = "这是一个很长的中文文档，用于测试上下文窗口。" * 300
    messages = [system(), user("Read the three docs and summarize them.")]
    for n in range(3):
        messages += [assistant(None, call(f"c{n}", "read_file", path=f"doc{n}.md")),
                     tool(f"c{n}", text)]  # fmt: skip
    messages += [assistant("Summary written."), user("Now translate it.")]
    manager = ContextManager(ContextCompressor(context_length=16_000))
    assert manager.estimate(messages) > manager.window
    sent = manager.preflight(messages)
    assert sent is not messages
    assert manager.estimate(sent) < manager.window


def test_a_finished_compaction_event_names_its_tier() -> None:
    events: list[Event] = []
    manager = ContextManager(ContextCompressor(context_length=32_000), on_event=events.append)
    manager.preflight(long_session(rounds=40))
    (finished,) = [e for e in events if e.kind is EventKind.COMPACTION_FINISHED]
    assert finished.tier is Tier.PRUNE and "no summary" in finished.message


def test_a_blocked_warning_names_large_user_messages_as_the_cause() -> None:
    """A pasted log pinned verbatim, not the small system prompt, is what blocks: the
    warning says so, with the message that is the largest."""
    from windowkeeper.loop.events import Reporter, kept_parts

    log = "ERROR connection refused at 10.0.0.1:5432\n" * 4_000
    messages = [system("You are an agent."), user("fix it"), assistant("ok"), user(log)]
    tokens = estimate_messages_tokens(messages)
    got: list[Event] = []
    Reporter(got.append).blocked("structural_backoff", tokens, 1_000, kept_parts(messages, 0))
    (warning,) = got
    assert "The newest user message (message 3) is ~" in warning.message
    assert "kept whole because the agent must answer it" in warning.message
    assert "system prompt and tool schemas alone" not in warning.message
    # Earlier pasted messages are named with the largest of them.
    earlier = [system("You are an agent."), user(log), assistant("ok"), user("fix it")]
    got.clear()
    tokens = estimate_messages_tokens(earlier)
    Reporter(got.append).blocked("ineffective", tokens, 1_000, kept_parts(earlier, 0))
    assert "Earlier user messages are ~" in got[0].message
    assert "the largest is message 1" in got[0].message
    # A small share of user text is not named: the floor is the cause then.
    small = [system("Rules. " * 20_000), user("fix it")]
    got.clear()
    Reporter(got.append).blocked(
        "structural_backoff", estimate_messages_tokens(small), 1_000, kept_parts(small, 0)
    )
    assert "user messages" not in got[0].message.lower()
    assert "system prompt and tool schemas alone are ~" in got[0].message
