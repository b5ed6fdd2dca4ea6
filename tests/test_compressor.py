"""Compressor behaviour: our versions of the reference scenarios (hermes §5.A, §5.D, §5.E)."""

from __future__ import annotations

import copy
import json
from datetime import date

import pytest

from factories import assistant, call, image_part, long_session, system, tool, user
from windowkeeper.analysis.kinds import (
    end_marker,
    handoff_body,
    in_progress_header,
    is_handoff,
    prefix,
)
from windowkeeper.compaction.handoff import system_note
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import ConfigError
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import IN_PLACE_KEY, content_text, is_image_part
from windowkeeper.core.report import FailureKind, Outcome, Reason
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.engine.guard import GuardState
from windowkeeper.summary.protocol import SummaryFailure, SummaryOutcome, SummaryRequest


class ScriptedSummarizer:
    """A summarizer that returns scripted outcomes and records its requests."""

    name = "scripted"

    def __init__(self, *outcomes: SummaryOutcome) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        self.requests.append(request)
        if len(self.outcomes) > 1:
            return self.outcomes.pop(0)
        return self.outcomes[0]


def _ok(text: str = "## Goal\nship it") -> SummaryOutcome:
    return SummaryOutcome(body=text, summarizer="scripted")


def _fail(kind: FailureKind) -> SummaryOutcome:
    return SummaryOutcome(failure=SummaryFailure(kind, "boom"), summarizer="scripted")


def _compressor(summarizer: object = None, **config: object) -> ContextCompressor:
    return ContextCompressor(
        CompressionConfig(**{"prune_only_ratio": 0.01, **config}),  # type: ignore[arg-type]
        context_length=32_000,
        summarizer=summarizer,  # type: ignore[arg-type]
        today=lambda: date(2026, 11, 30),
    )


def _handoffs(messages: list[dict[str, object]]) -> list[dict[str, object]]:
    return [m for m in messages if is_handoff(m)]


def test_status_and_thresholds() -> None:
    comp = ContextCompressor(context_length=100_000)
    assert comp.threshold_tokens == 64_000
    assert not comp.should_compress(63_999)
    assert comp.should_compress(64_000)
    comp.update_from_response({"prompt_tokens": 50_000, "completion_tokens": 1_000})
    assert comp.last_prompt_tokens == 50_000 and comp.last_completion_tokens == 1_000
    assert comp.should_compress() is False
    status = comp.get_status()
    assert status["usage_percent"] == 50.0 and status["compression_count"] == 0
    comp.update_from_response({})
    assert comp.last_prompt_tokens == 0


def test_too_few_messages_is_an_identity_noop() -> None:
    messages = [system(), user("a"), assistant("b"), user("c")]
    comp = _compressor()
    result = comp.compress(messages)
    assert result.messages is messages
    assert result.report.outcome is Outcome.NOOP
    assert result.report.reason is Reason.NOTHING_TO_COMPRESS
    assert "nothing left to compress" in result.report.detail
    assert comp.compression_count == 0


def test_compress_long_session_keeps_head_tail_and_one_handoff() -> None:
    messages = long_session(30)
    snapshot = copy.deepcopy(messages)
    comp = _compressor()
    result = comp.compress(messages)
    out = result.messages
    assert messages == snapshot
    assert result.report.compressed and comp.compression_count == 1
    assert len(out) < len(messages)
    assert len(_handoffs(out)) == 1
    assert out[0]["role"] == "system"
    assert out[0]["content"] == f"{messages[0]['content']}\n\n{system_note()}"
    assert out[1] == messages[1] and out[2] == messages[2]  # protected head, first compaction
    assert out[-1] == messages[-1] and content_text(messages[-2]["content"]) in content_text(
        out[-2]["content"]
    )
    assert violations(out) == []
    report = result.report
    assert report.before_tokens > report.after_tokens
    assert report.summarized_messages > 0 and report.summary_tokens > 0
    assert report.summarizer == "extractive" and not report.fallback_used


def test_handoff_is_framed_with_prefix_and_end_marker() -> None:
    result = _compressor().compress(long_session(30))
    text = content_text(_handoffs(result.messages)[0]["content"])
    assert text.startswith(prefix())
    assert end_marker() in text
    body = handoff_body(text)
    assert body is not None and "## Task" in body
    assert result.summary == body


def test_none_content_does_not_crash() -> None:
    messages = long_session(12)
    messages[0]["content"] = None
    result = _compressor().compress(messages)
    assert result.report.compressed
    assert result.messages[0]["role"] == "system"


def test_second_compaction_feeds_previous_summary_and_decays_the_head() -> None:
    scripted = ScriptedSummarizer(_ok("## Goal\nfirst"), _ok("## Goal\nsecond"))
    comp = _compressor(scripted)
    first = comp.compress(long_session(30)).messages
    grown = first + [
        m for n in range(30, 50) for m in (
            assistant(None, call(f"x{n}", "bash", command=f"make {n}")),
            tool(f"x{n}", "y" * 4_000),
            assistant(f"made {n}"),
            user(f"next {n}"),
        )
    ]  # fmt: skip
    second = comp.compress(grown)
    assert second.report.compressed
    assert scripted.requests[1].previous_summary is not None
    assert "first" in scripted.requests[1].previous_summary
    assert "## Task" in scripted.requests[1].previous_summary
    assert len(_handoffs(second.messages)) == 1
    assert second.messages[1] is not grown[1] or is_handoff(second.messages[1])
    body = second.summary or ""
    assert body.count(prefix().splitlines()[0]) == 0
    assert second.report.warnings and "compressed 2 times" in second.report.warnings[0]


def test_previous_summary_is_recovered_from_the_transcript_on_resume() -> None:
    first = _compressor().compress(long_session(30)).messages
    restarted = ScriptedSummarizer(_ok())
    comp = _compressor(restarted)
    grown = first + long_session(20, with_system=False)[1:]
    comp.compress(grown)
    assert restarted.requests[0].previous_summary is not None


def test_remembered_summary_without_handoff_in_transcript_is_discarded() -> None:
    scripted = ScriptedSummarizer(_ok("## Goal\nother session"))
    comp = _compressor(scripted)
    comp.compress(long_session(30))
    comp.compress(long_session(30))  # a new transcript without our handoff
    assert scripted.requests[1].previous_summary is None


def test_focus_topic_reaches_the_summarizer() -> None:
    scripted = ScriptedSummarizer(_ok())
    _compressor(scripted).compress(long_session(30), focus_topic="refund rounding")
    assert scripted.requests[0].focus_topic == "refund rounding"
    assert scripted.requests[0].today == date(2026, 11, 30)


@pytest.mark.parametrize("kind", [FailureKind.AUTH, FailureKind.NETWORK, FailureKind.TIMEOUT])
def test_aborting_failures_leave_messages_unchanged(kind: FailureKind) -> None:
    messages = long_session(30)
    comp = _compressor(ScriptedSummarizer(_fail(kind)))
    result = comp.compress(messages)
    assert result.messages is messages
    assert result.report.aborted and result.report.failure is kind
    assert "nothing was dropped" in result.report.detail
    assert comp.compression_count == 0


@pytest.mark.parametrize(
    "kind",
    [FailureKind.EMPTY, FailureKind.REFUSAL, FailureKind.TRUNCATED, FailureKind.SERVER_ERROR],
)
def test_other_failures_use_the_extractive_fallback(kind: FailureKind) -> None:
    result = _compressor(ScriptedSummarizer(_fail(kind))).compress(long_session(30))
    assert result.report.compressed and result.report.fallback_used
    assert result.report.failure is kind
    assert "## Task" in (result.summary or "")


def test_empty_body_counts_as_failure_and_abort_config_aborts() -> None:
    messages = long_session(30)
    blank = ScriptedSummarizer(SummaryOutcome(body="   ", summarizer="scripted"))
    result = _compressor(blank, abort_on_summary_failure=True).compress(messages)
    assert result.messages is messages and result.report.failure is FailureKind.EMPTY


def test_no_split_tool_pairs_and_orphans_repaired() -> None:
    messages = long_session(30)
    out = _compressor().compress(messages).messages
    ids = {c["id"] for m in out for c in m.get("tool_calls") or []}
    assert all(m["tool_call_id"] in ids for m in out if m["role"] == "tool")


def test_in_flight_call_is_kept_verbatim() -> None:
    messages = long_session(30)
    pending = assistant(None, call("pending", "bash", command="sleep 1"))
    messages.append(pending)
    out = _compressor().compress(messages).messages
    assert out[-1] == pending


def test_old_images_are_stripped_after_compaction() -> None:
    messages = long_session(30)
    messages[1] = {"role": "user", "content": [{"type": "text", "text": "see"}, image_part()]}
    messages[-1] = {"role": "user", "content": [{"type": "text", "text": "now"}, image_part()]}
    out = _compressor().compress(messages).messages
    with_images = [
        m
        for m in out
        if isinstance(m["content"], list) and any(is_image_part(p) for p in m["content"])
    ]
    assert len(with_images) == 1 and with_images[0]["content"][0]["text"] == "now"


def test_long_autonomous_run_restates_the_request_verbatim() -> None:
    task = "Migrate every module to the new logging API. Do not touch tests."
    messages = [system(), user(task)]
    for n in range(60):
        messages += [
            assistant(None, call(f"c{n}", "bash", command=f"edit {n}")),
            tool(f"c{n}", "z" * 3_000),
        ]
    result = _compressor(protect_first_n=0).compress(messages)
    out = result.messages
    restated = [m for m in out if in_progress_header() in content_text(m["content"])]
    assert len(restated) == 1 and content_text(restated[0]["content"]).endswith(task)
    assert violations(out) == []


def test_two_low_savings_compactions_stop_automation_until_forced() -> None:
    comp = _compressor()
    # A stored guard state (as a store would restore it) after two < 10% compactions.
    comp.guard = GuardState(low_savings_streak=2)
    assert not comp.should_compress(10**9)
    assert comp.decide(10**9).reason is Reason.LOW_SAVINGS
    messages = long_session(30)
    skipped = comp.compress(messages)
    assert skipped.messages is messages and skipped.report.outcome is Outcome.SKIPPED
    assert comp.compress(messages, force=True).report.compressed


def test_report_serializes() -> None:
    data = _compressor().compress(long_session(30)).report.to_dict()
    for key in (
        "compressed",
        "aborted",
        "fallback_used",
        "before_tokens",
        "after_tokens",
        "before_messages",
        "after_messages",
        "pruned",
        "summary_tokens",
        "elapsed_ms",
    ):
        assert key in data
    json.dumps(data)


def test_low_savings_streak_builds_from_real_compactions() -> None:
    # A huge system prompt makes every compaction save little relative to the request.
    messages = long_session(12, output_chars=4_000)
    messages[0] = system("policy " * 120_000)
    comp = _compressor()
    first = comp.compress(messages, force=True)
    assert first.report.compressed and first.report.savings_ratio < 0.10
    grown = first.messages + long_session(12, output_chars=4_000, with_system=False)[1:]
    second = comp.compress(grown, force=True)
    assert second.report.compressed and second.report.savings_ratio < 0.10
    assert comp.decide(10**9).reason is Reason.LOW_SAVINGS


def test_smaller_summary_window_lowers_the_trigger_and_warns() -> None:
    big = ContextCompressor(context_length=200_000)
    small = ContextCompressor(context_length=200_000, summary_context_length=80_000)
    assert small.threshold_tokens < big.threshold_tokens
    assert small.threshold_tokens <= 80_000
    assert small.warnings and small.get_status()["warnings"]


def test_summary_window_under_64k_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError):
        ContextCompressor(context_length=200_000, summary_context_length=32_000)
    allowed = ContextCompressor(
        CompressionConfig(allow_small_summary_model=True),
        context_length=200_000,
        summary_context_length=32_000,
    )
    assert allowed.threshold_tokens <= 32_000


def test_secrets_are_redacted_from_the_handoff() -> None:
    messages = long_session(30)
    messages[10]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        {"command": "curl -H 'Authorization: Bearer sk-live-abcdefghijklmnopqrstuvwx' https://x"}
    )
    result = _compressor().compress(messages)
    assert "curl -H" in (result.summary or "")
    assert "sk-live-abcdefghijklmnopqrstuvwx" not in (result.summary or "")


def test_nine_message_conversation_compresses_when_asked() -> None:
    # Everything fits the tail budget, but a manual compaction still keeps only the
    # minimum tail (reference scenario: a nine-message conversation compresses).
    words = "the refund service rounds partial amounts before the ledger sees them " * 40
    messages = [
        user(f"{n}: {words}") if n % 2 == 0 else assistant(f"{n}: {words}") for n in range(9)
    ]
    result = _compressor(protect_first_n=2).compress(messages, force=True)
    assert result.report.compressed
    assert len(result.messages) < len(messages)
    assert result.messages[:2] == messages[:2]
    assert result.messages[-1] == messages[-1]


def test_update_model_rederives_from_the_configured_ratio_and_resets_calibration() -> None:
    comp = ContextCompressor(
        CompressionConfig(model_thresholds={"small": 0.9}), context_length=1_000_000, model="big"
    )
    assert comp.threshold_tokens == 500_000
    comp.update_from_response({"prompt_tokens": 600_000})
    comp.guard = GuardState(strikes=1, low_savings_streak=1, compression_count=2)
    comp.update_model(model="small-v2", context_length=200_000)
    assert comp.threshold_tokens == 180_000  # the override for "small", not the old ratio
    assert comp.last_prompt_tokens == 0 and comp.guard.strikes == 0
    assert comp.guard.compression_count == 2  # the session's history is not forgotten
    comp.update_model(model="other")
    assert comp.threshold_tokens == 100_000  # back to the configured 0.50


def test_the_newest_ask_appears_once_in_the_handoff() -> None:
    ask = "Please also port the retry logic to the async client."
    messages = long_session(30)
    messages[-41] = user(ask)  # a user turn well inside the summarized middle
    result = _compressor().compress(messages)
    plan = _compressor().plan(messages)
    assert plan.head_end <= len(messages) - 41 < plan.tail_start
    assert (result.summary or "").count(ask) == 1


def test_snapshot_of_an_autonomous_run_is_the_request_from_the_head() -> None:
    task = "Port every handler to the async client; keep the public API unchanged."
    messages = [system(), user(task)]
    for n in range(40):
        messages += [
            assistant(None, call(f"c{n}", "bash", command=f"edit {n}")),
            tool(f"c{n}", "z" * 3_000),
        ]
    result = _compressor().compress(messages)  # the request stays in the protected head
    assert result.report.compressed
    task_section = (result.summary or "").split("## Work State")[0]
    assert "the first user message above, kept verbatim" in task_section
    assert result.messages[1]["content"] == task  # which it is, in the head


def test_a_mid_conversation_instruction_is_kept_verbatim_never_summarized() -> None:
    """An in-place system message (Claude Code's mid-conversation system) in the middle
    survives a compaction word for word, between the head and the handoff, and the
    handoff does not quote it as something the user said."""
    instruction = {"role": "system", "content": "Available agent types: Explore.",
                   IN_PLACE_KEY: True}  # fmt: skip
    messages = long_session(30)
    messages.insert(12, instruction)
    result = _compressor().compress(messages)
    out = result.messages
    assert result.report.compressed and len(out) < len(messages)
    kept = [i for i, m in enumerate(out) if m.get("role") == "system" and i > 0]
    assert [out[i] for i in kept] == [instruction]
    (handoff_index,) = [i for i, m in enumerate(out) if is_handoff(m)]
    assert 0 < kept[0] < handoff_index
    assert "Available agent types" not in content_text(out[handoff_index]["content"])
    assert violations(out) == []
