"""Background compaction in the engine: prepare on a detached copy, adopt by content.

Each discard reason is produced by the situation it names, and an adopted result is what
a foreground compaction leaves: the same invariants, the state moved on, a receipt."""

from __future__ import annotations

import copy
import threading

from bgkit import WINDOW, GatedSummarizer, history, rounds
from factories import assistant, user
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.report import (
    Background,
    CompressionResult,
    DiscardReason,
    FailureKind,
    Tier,
)
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.engine.prepared import PreparedCompaction, history_digest


def engine(**kwargs: object) -> ContextCompressor:
    """A compressor whose compactions summarize (pruning alone is never enough here)."""
    config = CompressionConfig(**{"prune_min_chars": 10**6, **kwargs})  # type: ignore[arg-type]
    return ContextCompressor(config, context_length=WINDOW, summarizer=GatedSummarizer())


def prepared_for(comp: ContextCompressor, snapshot: list[dict[str, object]]) -> PreparedCompaction:
    found = comp.prepare(snapshot)
    assert isinstance(found, PreparedCompaction), found
    return found


def test_adopt_joins_the_new_messages_to_the_tail_and_moves_the_state_on() -> None:
    comp = engine()
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    assert comp.compression_count == 0  # preparing touched nothing of the original
    assert prepared.report.tier is Tier.SUMMARY and prepared.length == len(snapshot)
    now = [*snapshot, *rounds(100, 2)]
    result = comp.adopt(prepared, now)
    assert isinstance(result, CompressionResult)
    out = result.messages
    assert violations(out) == []
    new = now[len(snapshot) :]
    assert all(a is b for a, b in zip(out[-len(new) :], new, strict=True))  # verbatim tail
    assert list(out[: len(prepared.messages)]) == list(prepared.messages)
    report = result.report
    assert report.background == Background(True, None, prepared.prepared_ms, 0)
    assert report.before_messages == len(now) and report.after_messages == len(out)
    assert report.after_tokens < report.before_tokens
    assert report.receipt is not None and report.receipt.background
    assert comp.compression_count == 1 and comp.previous_summary == prepared.previous_summary
    assert comp.last_prompt_tokens == -1


def test_equal_copies_are_the_same_history_and_any_edit_is_not() -> None:
    comp = engine()
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    copies = [*copy.deepcopy(snapshot), user("and now?")]
    assert isinstance(comp.adopt(prepared, copies), CompressionResult)
    edited = [*copy.deepcopy(snapshot), user("and now?")]
    edited[1] = {**edited[1], "content": "Fix the failing refund test. Push to main."}
    comp = engine()
    assert comp.adopt(prepared_for(comp, snapshot), edited) is DiscardReason.EDITED
    assert comp.adopt(prepared_for(comp, snapshot), snapshot[:-3]) is DiscardReason.EDITED
    assert comp.compression_count == 0  # a discard changes nothing


def test_a_reset_session_or_another_window_makes_it_stale() -> None:
    comp = engine()
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    comp.on_session_reset()
    assert comp.adopt(prepared, snapshot) is DiscardReason.SESSION
    comp = engine()
    prepared = prepared_for(comp, snapshot)
    comp.update_model(context_length=32_000)
    assert comp.adopt(prepared, snapshot) is DiscardReason.MODEL


def test_too_many_new_messages_make_it_insufficient() -> None:
    comp = engine()
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    # A summary result joined to ~7K new tokens is over the soft mark: compacting now
    # in the foreground leaves a smaller request than applying it would.
    assert comp.adopt(prepared, [*snapshot, *rounds(100, 7)]) is DiscardReason.INSUFFICIENT
    assert isinstance(comp.adopt(prepared, [*snapshot, *rounds(100, 1)]), CompressionResult)


def test_a_prune_only_result_is_held_to_tier_ones_target() -> None:
    comp = engine(prune_only_ratio=0.9, prune_min_chars=200)
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    assert prepared.report.tier is Tier.PRUNE
    limit = int(comp.threshold_tokens * 0.9)
    small = comp.adopt(prepared, [*snapshot, *rounds(100, 2)])
    assert isinstance(small, CompressionResult) and small.report.after_tokens <= limit
    comp = engine(prune_only_ratio=0.9, prune_min_chars=200)
    # ~9.7K new tokens of tool output on a ~4.2K result: over tier 1's target joined,
    # within it once tier 1 has run over the joined list.
    grown = [*snapshot, *rounds(100, 9)]
    pruned = comp.adopt(prepared, grown)
    assert isinstance(pruned, CompressionResult) and pruned.report.after_tokens <= limit
    assert pruned.report.background is not None and pruned.report.background.pruned_on_apply
    # ~11K new tokens of what tier 1 never shortens (the agent's own prose): insufficient.
    comp = engine(prune_only_ratio=0.9, prune_min_chars=200)
    texts = [m for n in range(9) for m in (user(f"Note {n}?"), assistant("note " * 1_000))]
    assert comp.adopt(prepared, [*snapshot, *texts]) is DiscardReason.INSUFFICIENT
    assert comp.compression_count == 0


def test_a_summary_outgrown_by_new_tool_output_is_applied_with_it_pruned() -> None:
    comp = engine(prune_min_chars=200, prune_only_ratio=0.05)  # summaries, output prunable
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    assert prepared.report.tier is Tier.SUMMARY
    now = [*snapshot, *rounds(100, 7)]
    joined = [*prepared.messages, *now[len(snapshot) :]]
    assert sum(f.tokens for f in comp.analyzer.analyze(joined)) >= comp.soft_mark
    result = comp.adopt(prepared, now)
    assert isinstance(result, CompressionResult)
    out, report = result.messages, result.report
    assert violations(out) == [] and report.after_tokens < comp.soft_mark
    assert report.tier is Tier.SUMMARY and report.background is not None
    stubs = report.background.pruned_on_apply
    assert stubs > 0 and report.pruned >= stubs
    new = {a.handle for a in result.archived} - {a.handle for a in prepared.archived}
    assert len(new) >= stubs  # every pruned original is archived under its handle
    assert all(any(h in str(m.get("content")) for m in out) for h in new)
    assert out[-3:] == now[-3:]  # the newest messages stay verbatim
    assert comp.compression_count == 1


def test_nothing_to_compress_and_an_aborting_summary_are_reasons_not_results() -> None:
    comp = engine()
    assert comp.prepare(history(1)) is DiscardReason.NOT_COMPRESSED
    failing = engine()
    failing.summarizer = GatedSummarizer(failure=FailureKind.AUTH)
    assert failing.prepare(history(11)) is DiscardReason.FAILED
    assert failing.guard.cooldown_until == 0  # the detached copy's cooldown stays there


def test_a_fallback_summary_is_applied_with_its_failure_in_the_guard() -> None:
    comp = engine()
    comp.summarizer = GatedSummarizer(failure=FailureKind.SERVER_ERROR)
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    assert prepared.report.fallback_used
    assert isinstance(comp.adopt(prepared, snapshot), CompressionResult)
    assert comp.guard.cooldown_kind is FailureKind.SERVER_ERROR  # as a foreground run


def test_prepare_runs_on_a_detached_copy() -> None:
    comp = engine()
    snapshot = history(11)
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.append(comp.prepare(snapshot)))
    thread.start()
    comp.analyzer.analyze(snapshot)  # the request path may analyze meanwhile
    thread.join()
    assert isinstance(seen[0], PreparedCompaction)
    assert comp.detached().analyzer is not comp.analyzer
    assert type(comp.detached()) is ContextCompressor


def test_the_json_form_applies_exactly_like_the_value() -> None:
    comp = engine()
    snapshot = history(11)
    prepared = prepared_for(comp, snapshot)
    again = PreparedCompaction.from_json(prepared.to_json())
    assert again.epoch == -1 and again.digest == prepared.digest == history_digest(snapshot)
    assert again.report.tier is prepared.report.tier
    assert again.archived == prepared.archived
    now = [*snapshot, *rounds(100, 1)]
    first = comp.adopt(prepared, now)
    second = engine().adopt(again, now)
    assert isinstance(first, CompressionResult) and isinstance(second, CompressionResult)
    assert first.messages == second.messages
    assert first.report.after_tokens == second.report.after_tokens


def test_a_job_plans_for_what_arrives_before_the_trigger() -> None:
    comp = engine()
    snapshot = history(11)
    tokens = sum(f.tokens for f in comp.analyzer.analyze(snapshot))
    assert comp.soft_mark <= tokens < comp.threshold_tokens
    plain = prepared_for(comp, snapshot)
    ahead = comp.prepare(snapshot, tokens)
    assert isinstance(ahead, PreparedCompaction)
    # The tail leaves room for the messages still to come: it starts later.
    assert ahead.dropped[1] > plain.dropped[1]
    assert ahead.report.after_tokens < plain.report.after_tokens
    assert comp.config.target_ratio == 0.20  # the compressor's own settings are untouched
