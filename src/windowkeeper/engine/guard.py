"""The one guard state machine that decides whether automatic compaction may run.

State is a frozen, JSON-serializable value; transitions are pure functions returning a
new state. Times are wall-clock seconds (so a stored state survives a restart).

Gates, in order: the hold after an undo (a user took the last compaction back: automatic
compaction waits until the history no longer fits, which forces one), summary-failure
cooldown, structural no-op backoff, the ineffective breaker (real usage still over the
threshold after two compactions, with one recovery probe after a cool-off), and the
low-savings stop (two consecutive compactions saving under the minimum ratio). A forced
compaction ignores all of them, and any completed compaction ends the hold.
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from ..core.frozen import evolve
from ..core.report import FailureKind

TIMEOUT_LADDER = (60.0, 300.0, 900.0)
TRANSIENT_COOLDOWN = 45.0
NOT_CONFIGURED_COOLDOWN = 600.0
RECOVERY_PROBE_AFTER = 300.0
STRUCTURAL_BACKOFF = 300.0
MAX_STRIKES = 2


class Block(enum.StrEnum):
    """Why automatic compaction is blocked right now."""

    COOLDOWN = "cooldown"
    STRUCTURAL_BACKOFF = "structural_backoff"
    INEFFECTIVE = "ineffective"
    LOW_SAVINGS = "low_savings"
    UNDONE = "undone"


@dataclass(frozen=True)
class GuardState:
    """Everything the guard remembers between requests (and across restarts)."""

    cooldown_until: float = 0.0
    cooldown_kind: FailureKind | None = None
    timeout_streak: int = 0
    strikes: int = 0
    verify_pending: bool = False
    probe_at: float | None = None
    low_savings_streak: int = 0
    structural_until: float = 0.0
    structural_cause: str = ""
    """Why the last compaction found nothing to compress (figures and indices only)."""
    compression_count: int = 0
    undone: bool = False
    """An undo took the last compaction back: hold automatic compaction (see above)."""

    def to_json(self) -> str:
        data = asdict(self)
        data["cooldown_kind"] = self.cooldown_kind.value if self.cooldown_kind else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> GuardState:
        data: dict[str, Any] = json.loads(text)
        kind = data.get("cooldown_kind")
        data["cooldown_kind"] = FailureKind(kind) if kind else None
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


NEW_GUARD = GuardState()
"""A new session's state, shared (a state is never changed, only replaced)."""


def blocked(state: GuardState, now: float) -> tuple[Block | None, GuardState]:
    """The gate that blocks automatic compaction (or ``None``) and the updated state.

    When the ineffective breaker has cooled off, one recovery probe is let through: the
    strike count drops to one, so one more ineffective compaction re-trips it at once.
    """
    if state.undone:
        return Block.UNDONE, state
    if now < state.cooldown_until:
        return Block.COOLDOWN, state
    if now < state.structural_until:
        return Block.STRUCTURAL_BACKOFF, state
    if state.strikes >= MAX_STRIKES:
        if state.probe_at is None or state.probe_at - now > RECOVERY_PROBE_AFTER:
            return Block.INEFFECTIVE, evolve(state, probe_at=now + RECOVERY_PROBE_AFTER)
        if now < state.probe_at:
            return Block.INEFFECTIVE, state
        state = evolve(state, strikes=MAX_STRIKES - 1, probe_at=None)
    if state.low_savings_streak >= MAX_STRIKES:
        return Block.LOW_SAVINGS, state
    return None, state


def remaining_cooldown(state: GuardState, now: float) -> float:
    return max(0.0, state.cooldown_until - now)


def on_summary_failure(state: GuardState, kind: FailureKind, now: float) -> GuardState:
    """Arm the cooldown for a failed summary (design §6).

    Timeouts and network failures climb the ladder 60 -> 300 -> 900 s; missing
    configuration and rejected credentials wait 600 s (they do not fix themselves);
    everything else is transient (45 s).
    """
    if kind in (FailureKind.TIMEOUT, FailureKind.NETWORK):
        step = min(state.timeout_streak, len(TIMEOUT_LADDER) - 1)
        return evolve(
            state,
            cooldown_until=now + TIMEOUT_LADDER[step],
            cooldown_kind=kind,
            timeout_streak=state.timeout_streak + 1,
        )
    lasting = kind in (FailureKind.NOT_CONFIGURED, FailureKind.AUTH)
    seconds = NOT_CONFIGURED_COOLDOWN if lasting else TRANSIENT_COOLDOWN
    return evolve(state, cooldown_until=now + seconds, cooldown_kind=kind)


def on_summary_success(state: GuardState) -> GuardState:
    return evolve(state, cooldown_until=0.0, cooldown_kind=None, timeout_streak=0)


def on_compaction(state: GuardState, savings_ratio: float, min_ratio: float) -> GuardState:
    """A completed compaction: count it, track low savings, arm the usage verdict."""
    low = savings_ratio < min_ratio
    return evolve(
        state,
        compression_count=state.compression_count + 1,
        low_savings_streak=state.low_savings_streak + 1 if low else 0,
        verify_pending=True,
        structural_until=0.0,
        structural_cause="",
        undone=False,
    )


def on_undo(state: GuardState) -> GuardState:
    """The state from before a compaction that was just undone, holding automatic
    compaction (else the next request would compact the same history again)."""
    return evolve(state, undone=True)


def on_structural_noop(state: GuardState, now: float, cause: str = "") -> GuardState:
    """Nothing was eligible to compress: back off for a while (not a strike), and
    remember why, for the warning the backoff is reported with."""
    return evolve(state, structural_until=now + STRUCTURAL_BACKOFF, structural_cause=cause)


def on_usage(state: GuardState, prompt_tokens: int, threshold: int) -> GuardState:
    """Real usage after a response: the verdict on the last compaction lives here.

    Still over the threshold right after a compaction is a strike (the incompressible
    floor of system prompt and tool schemas may exceed the trigger); under it clears them.
    """
    if prompt_tokens <= 0:
        return evolve(state, verify_pending=False) if state.verify_pending else state
    if prompt_tokens < threshold:
        if not state.strikes and not state.verify_pending and state.probe_at is None:
            return state  # the common case, every response under the trigger: unchanged
        return evolve(state, strikes=0, verify_pending=False, probe_at=None)
    if state.verify_pending:
        return evolve(state, strikes=state.strikes + 1, verify_pending=False)
    return state


def on_force(state: GuardState) -> GuardState:
    """A manual compaction clears the cooldown and the structural backoff (the state
    itself when both are cleared already: the same values, as floats, so its JSON too)."""
    if _cleared(state.cooldown_until) and _cleared(state.structural_until):
        return state
    return evolve(state, cooldown_until=0.0, structural_until=0.0)


def _cleared(until: float) -> bool:
    """Whether ``until`` is the float ``0.0`` itself (not ``0`` nor ``-0.0``)."""
    return type(until) is float and until == 0.0 and math.copysign(1.0, until) > 0


def on_reset(state: GuardState, *, new_session: bool) -> GuardState:
    """Model switch or new session: calibration and breakers start over."""
    if new_session:
        return NEW_GUARD
    return evolve(
        state,
        strikes=0,
        verify_pending=False,
        probe_at=None,
        low_savings_streak=0,
        cooldown_until=0.0,
        cooldown_kind=None,
        timeout_streak=0,
    )
