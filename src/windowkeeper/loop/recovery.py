"""How far overflow recovery shrinks a rejected request, and what it says when it gives up.

What must hold: recovery converges. Each attempt aims at a prompt size (in our estimate's
tokens) strictly below the rejected one, and the last attempt of a turn aims at the
incompressible floor itself, so a request that can fit is reached within the attempt
budget whenever the floor fits:

* the provider states its window (less the output reservation, the first attempt aims at
  it); when it also states its count of our request and that count is higher than our
  estimate, the count calibrates the aim to its tokenizer;
* it states nothing (a 413, a bare 400, Bedrock's "Input is too long", llama.cpp's
  "exceeds the available context size"), or it rejects again what we aimed at: the
  target shrinks geometrically from the measured size of the rejected request toward the
  floor (gently first: ``(floor/size)^(1/n²)`` with ``n`` attempts left), reaching the
  floor on the last attempt.

A claimed overflow that the evidence contradicts is a transient fault of the server, not
a limit: the first such rejection in a turn is retried once unchanged
(:func:`retry_unchanged`); only a second one compacts. The evidence is the error's own
figures (its count of the request fits the window it states, or the request is far below
that window), or a request no larger than one the provider answered in this session:
its answers teach the window from below, when the error states none.

What the session has shown also bounds what an unstated rejection teaches: an attempt
other than the last never aims below the largest request the provider answered (unless
that is within :data:`MIN_STEP` of the rejected size), so a server that refuses at random
cannot ratchet the learned window down to the floor, one transient fault at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..core.errors import CompressionExhaustedError
from ..core.invariants import SYSTEM_ROLES
from ..core.messages import Message
from .overflow import LONG_CONTEXT_TIER_TOKENS, Overflow, OverflowKind

__all__ = (
    "MIN_HANDOFF_TOKENS",
    "Attempt",
    "Evidence",
    "exhausted_error",
    "floor_tokens",
    "retry_unchanged",
    "target_tokens",
    "with_tier_limit",
)

MIN_HANDOFF_TOKENS = 400
"""The smallest handoff a must-fit compaction still writes (counted in the floor)."""

CALIBRATED_MARGIN = 0.97
"""Aim this far under a stated window once our estimate is calibrated to its tokenizer."""

MIN_STEP = 0.90
"""Every attempt aims at most at this share of the rejected size (progress guaranteed)."""


SPURIOUS_SHARE = 0.5
"""A request under this share of a stated window (less the output reserve) that the
provider rejects without giving its count is retried once unchanged first."""


@dataclass(frozen=True)
class Attempt:
    """One recovery attempt: the rejected request's estimate and what it aimed at
    (``context_length``: the engine's window before the attempt lowered it)."""

    rejected: int
    target: int
    floor: int
    stated: int | None
    context_length: int = 0


@dataclass
class Evidence:
    """What a session's answers and refusals have shown of the provider's window."""

    answered: int = 0
    """The largest request (our estimate) the provider answered."""
    retried: bool = False
    """The turn's first rejection was sent again unchanged."""

    def answered_with(self, tokens: int) -> None:
        self.answered = max(self.answered, tokens)

    def retry(self, overflow: Overflow, rejected: int, *, reserve: int, attempt: int) -> bool:
        """:func:`retry_unchanged` with this session's evidence. A size refused again right
        after such a retry no longer counts as answered, whatever it did before (a model
        reloaded with a smaller window): later turns compact at once."""
        if attempt <= 1:
            self.retried = False
        elif self.retried:
            self.answered, self.retried = min(self.answered, rejected - 1), False
        answered = self.answered
        if retry_unchanged(overflow, rejected, reserve=reserve, attempt=attempt, answered=answered):
            self.retried = True
        return self.retried

    def last_hope(self, overflow: Overflow, attempt: int) -> bool:
        """Whether a first claimed context overflow or payload limit (413) that states no
        window, of a request nothing can shrink, is sent again unchanged rather than given
        up at once: a transient fault is the one explanation left that a retry can serve,
        and the turn fails either way if it was not one (a second refusal gives up; a
        413 is usually a proxy's fixed byte limit, and then the retry costs one request)."""
        kinds = (OverflowKind.CONTEXT_OVERFLOW, OverflowKind.PAYLOAD_TOO_LARGE)
        stated = overflow.limit is not None
        if attempt != 1 or overflow.kind not in kinds or stated or self.retried:
            return False
        self.retried = True
        return True


def with_tier_limit(overflow: Overflow, context_length: int) -> Overflow:
    """A long-context 429 (Anthropic's extra-usage tier) states the 200K window implicitly."""
    tier = overflow.kind is OverflowKind.LONG_CONTEXT_TIER
    if overflow.limit is None and tier and context_length > LONG_CONTEXT_TIER_TOKENS:
        return replace(overflow, limit=LONG_CONTEXT_TIER_TOKENS)
    return overflow


def retry_unchanged(overflow: Overflow, rejected: int, *, reserve: int, attempt: int,
                    answered: int) -> bool:  # fmt: skip
    """Whether this rejection is retried as it was: only the turn's first one, and only a
    claimed context overflow or payload limit (a long-context 429 or an output cap is a
    fact about the request, not a fault).

    When the error counts the request and states the window, its own figures decide: the
    count plus the output reserved (``reserve``) is within the window. Otherwise the
    evidence is what the session has shown: our estimate of the request (``rejected``) is
    no larger than the largest request the provider answered in this session
    (``answered``, by the same estimate; its answers teach the window from below), or,
    when the error states the window, under :data:`SPURIOUS_SHARE` of it. A window we
    were only configured with is no evidence: it may simply be wrong (a real limit below
    it), so a claimed overflow below it with nothing else to go on compacts at once. A
    payload limit (413) counts bytes, not tokens, so only the answered size speaks for
    it (our estimate follows the bytes of text; a new large image may still not fit, and
    then the second rejection makes the images lighter).
    """
    if attempt != 1 or overflow.kind in (OverflowKind.LONG_CONTEXT_TIER, OverflowKind.OUTPUT_CAP):
        return False
    if overflow.kind is OverflowKind.PAYLOAD_TOO_LARGE:
        return rejected <= answered
    stated = overflow.limit
    if stated is not None and overflow.request_tokens:
        return overflow.request_tokens + reserve <= stated
    if rejected <= answered:
        return True
    return stated is not None and rejected < SPURIOUS_SHARE * (stated - reserve)


def floor_tokens(
    messages: Sequence[Message], cost: Callable[[Sequence[Message]], int], schema_tokens: int
) -> int:
    """What no compaction removes: the leading system prompt, the tool schemas, the newest
    user message and a minimal handoff (``cost`` estimates a list of messages)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in SYSTEM_ROLES:
        lead += 1
    newest = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    kept = [*messages[:lead], *([newest] if newest is not None else [])]
    return cost(kept) + schema_tokens + MIN_HANDOFF_TOKENS


def target_tokens(
    overflow: Overflow,
    rejected: int,
    floor: int,
    *,
    window: int,
    reserve: int,
    remaining: int,
    previous: Attempt | None,
    answered: int = 0,
) -> int:
    """The prompt size (our estimate) this attempt compacts to; see the module docstring.

    ``rejected`` is our estimate of the request the provider refused, ``window`` the
    prompt tokens the engine allows now, ``reserve`` the output tokens reserved,
    ``remaining`` the attempts left in the turn (this one included), ``previous`` the
    attempt before this one in the same turn, if any, ``answered`` the largest request
    the provider answered in this session (our estimate).
    """
    stated = overflow.limit
    fresh = stated is not None and (previous is None or previous.stated != stated)
    if fresh and stated is not None:
        room = max(1, stated - reserve)
        counted = overflow.request_tokens
        if counted and counted > rejected:
            # Their tokenizer counts more than our estimate: aim at their window in ours.
            room = int(room * CALIBRATED_MARGIN * rejected / counted)
        return room
    upper = min(rejected, window)
    if remaining <= 1 or upper <= floor:
        return max(1, floor)
    # A step of (floor/upper)^(1/remaining²): gentle first (a window learned too small
    # costs every later turn extra compactions), the floor itself on the last attempt.
    geometric = upper * (floor / upper) ** (1 / remaining**2)
    step = int(upper * MIN_STEP)
    # Not below a size the provider answered: the real limit is above it.
    return max(floor, min(int(geometric), step), min(answered, step))


def exhausted_error(why: str, attempt: Attempt | None, tokens: int) -> CompressionExhaustedError:
    """The one consistent final message: the measured size, the limit tried, the floor."""
    if attempt is None:
        return CompressionExhaustedError(
            f"compression exhausted ({why}): the provider rejects the request (~{tokens:,} "
            "tokens by windowkeeper's estimate). " + _ADVICE
        )
    stated = f"; its stated window is {attempt.stated:,} tokens" if attempt.stated else ""
    floor_fits = attempt.floor < attempt.target
    advice = _ADVICE if floor_fits else _FLOOR_ADVICE
    return CompressionExhaustedError(
        f"compression exhausted ({why}): the provider rejects the request (~{tokens:,} tokens "
        f"by windowkeeper's estimate{stated}); the last attempt aimed at ~{attempt.target:,} "
        f"tokens, and what must stay (system prompt, tool schemas, the newest request, a "
        f"minimal handoff) is ~{attempt.floor:,} tokens. {advice}"
    )


_ADVICE = (
    "Start a new session, raise the context window (a larger context_length or model), or "
    "compress manually with a focus topic (ContextManager.compress(messages, focus_topic=...))."
)
_FLOOR_ADVICE = (
    "That floor alone does not fit the model's context window: shorten the system prompt, "
    "the tool schemas or the newest request, or start a new session with a model that has "
    "a larger window."
)
