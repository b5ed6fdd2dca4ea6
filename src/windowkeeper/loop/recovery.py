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

A claimed overflow that the error itself contradicts (its count of the request fits the
window it states) or far below the stated window (a request of ~1,400 tokens refused by a
model that says its window is 8,000) is a transient fault of the server, not a limit:
the first such rejection in a turn is retried once unchanged (:func:`retry_unchanged`);
only a second one compacts.
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
    """One recovery attempt: the rejected request's estimate and what it aimed at."""

    rejected: int
    target: int
    floor: int
    stated: int | None


def with_tier_limit(overflow: Overflow, context_length: int) -> Overflow:
    """A long-context 429 (Anthropic's extra-usage tier) states the 200K window implicitly."""
    tier = overflow.kind is OverflowKind.LONG_CONTEXT_TIER
    if overflow.limit is None and tier and context_length > LONG_CONTEXT_TIER_TOKENS:
        return replace(overflow, limit=LONG_CONTEXT_TIER_TOKENS)
    return overflow


def retry_unchanged(overflow: Overflow, rejected: int, *, reserve: int, attempt: int) -> bool:
    """Whether this rejection is retried as it was: the turn's first one, when the error
    states the window and says itself that the request fits it — its own count of the
    input plus the output reserved (``reserve``) is within the window — or, without a
    count, our estimate (``rejected``) is under half of it. Without a stated window the
    configured one may simply be wrong (a real limit below it), so that compacts at once,
    as does a payload limit (413: bytes, not tokens)."""
    stated = overflow.limit
    if attempt != 1 or stated is None or overflow.kind is OverflowKind.PAYLOAD_TOO_LARGE:
        return False
    if overflow.request_tokens:
        return overflow.request_tokens + reserve <= stated
    return rejected < SPURIOUS_SHARE * (stated - reserve)


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
) -> int:
    """The prompt size (our estimate) this attempt compacts to; see the module docstring.

    ``rejected`` is our estimate of the request the provider refused, ``window`` the
    prompt tokens the engine allows now, ``reserve`` the output tokens reserved,
    ``remaining`` the attempts left in the turn (this one included), ``previous`` the
    attempt before this one in the same turn, if any.
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
    return max(floor, min(int(geometric), int(upper * MIN_STEP)))


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
