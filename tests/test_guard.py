from __future__ import annotations

from windowkeeper.core.report import FailureKind
from windowkeeper.engine.guard import (
    Block,
    GuardState,
    blocked,
    on_compaction,
    on_force,
    on_reset,
    on_structural_noop,
    on_summary_failure,
    on_summary_success,
    on_undo,
    on_usage,
    remaining_cooldown,
)


def test_timeout_cooldown_ladder_60_300_900() -> None:
    state = GuardState()
    seen = []
    for _ in range(4):
        state = on_summary_failure(state, FailureKind.TIMEOUT, 1_000.0)
        seen.append(remaining_cooldown(state, 1_000.0))
    assert seen == [60.0, 300.0, 900.0, 900.0]
    assert blocked(state, 1_899.0)[0] is Block.COOLDOWN
    assert blocked(state, 1_900.0)[0] is None
    assert on_summary_success(state).timeout_streak == 0


def test_transient_and_not_configured_cooldowns() -> None:
    transient = on_summary_failure(GuardState(), FailureKind.RATE_LIMIT, 0.0)
    assert 30.0 <= remaining_cooldown(transient, 0.0) <= 60.0
    missing = on_summary_failure(GuardState(), FailureKind.NOT_CONFIGURED, 0.0)
    assert remaining_cooldown(missing, 0.0) == 600.0
    assert blocked(on_force(missing), 1.0)[0] is None


def test_ineffective_strikes_block_then_allow_one_probe() -> None:
    state = GuardState()
    for _ in range(2):
        state = on_compaction(state, 0.5, 0.10)
        state = on_usage(state, 90_000, 50_000)
    assert state.strikes == 2
    block, state = blocked(state, 100.0)
    assert block is Block.INEFFECTIVE and state.probe_at == 400.0
    assert blocked(state, 399.0)[0] is Block.INEFFECTIVE
    block, state = blocked(state, 400.0)
    assert block is None and state.strikes == 1
    state = on_usage(on_compaction(state, 0.5, 0.10), 90_000, 50_000)
    assert blocked(state, 401.0)[0] is Block.INEFFECTIVE


def test_usage_under_threshold_clears_strikes_and_usage_without_verdict_is_ignored() -> None:
    state = GuardState(strikes=1)
    assert on_usage(state, 10_000, 50_000).strikes == 0
    assert on_usage(GuardState(), 90_000, 50_000).strikes == 0  # no compaction to judge
    assert on_usage(GuardState(verify_pending=True), 0, 50_000).strikes == 0


def test_low_savings_and_structural_backoff() -> None:
    state = on_compaction(on_compaction(GuardState(), 0.05, 0.10), 0.02, 0.10)
    assert blocked(state, 0.0)[0] is Block.LOW_SAVINGS
    assert on_compaction(state, 0.5, 0.10).low_savings_streak == 0
    backoff = on_structural_noop(GuardState(), 10.0)
    assert blocked(backoff, 309.0)[0] is Block.STRUCTURAL_BACKOFF
    assert blocked(backoff, 310.0)[0] is None


def test_state_round_trips_through_json_and_resets() -> None:
    state = on_summary_failure(GuardState(strikes=2, compression_count=3), FailureKind.TIMEOUT, 5.0)
    assert GuardState.from_json(state.to_json()) == state
    assert on_reset(state, new_session=True) == GuardState()
    switched = on_reset(state, new_session=False)
    assert (
        switched.strikes == 0 and switched.compression_count == 3 and switched.cooldown_until == 0
    )


def test_an_undo_holds_until_a_compaction_and_survives_a_restart() -> None:
    state = on_undo(on_compaction(GuardState(), 0.5, 0.1))
    assert blocked(state, 10**9)[0] is Block.UNDONE  # no time ends it
    assert GuardState.from_json(state.to_json()) == state
    assert blocked(on_compaction(state, 0.5, 0.1), 0.0)[0] is None
    assert blocked(on_reset(state, new_session=True), 0.0)[0] is None
