"""The pure steps of one ``compress`` call beyond planning: the prune-only tier, fitting
a must-fit result into the window, and the honest over-window warning.

Tier 1 (SPEC §5 step 0) prunes old tool output everywhere outside the protected tail —
the protected head included, the system prompt and user-typed text never — and stops
there when that brings the request to ``prune_only_ratio`` × the trigger (for a must-fit
compaction: that share of the window). Tier 2 summarizes the middle of the pruned list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..analysis.record import Analyzer, MessageFacts
from ..compaction.boundaries import system_end
from ..compaction.plan import HANDOFF_FRAME_TOKENS, MIN_FIT_BUDGET, CompactionPlan
from ..compaction.prune import PassResult, PruneSettings, is_stub, prune
from ..compaction.truncate import Cut, last_rungs
from ..core.config import CompressionConfig
from ..core.invariants import align_back
from ..core.messages import Message
from ..core.report import CompressionReport


@dataclass(frozen=True)
class Job:
    """One compaction's inputs: the messages and their records, the plan, the report so
    far, the tool-schema tokens, the room the messages may take, and how it was asked."""

    messages: list[Message]
    facts: Sequence[MessageFacts]
    plan: CompactionPlan
    base: CompressionReport
    extra: int
    room: int
    force: bool
    focus: str | None


def prune_end(job: Job, config: CompressionConfig) -> int:
    """Where the protected tail starts for pruning: the plan's tail, and never less than
    the minimum tail (a plan with nothing to summarize may put its tail at the end)."""
    floor = align_back(job.messages, max(0, len(job.messages) - config.min_tail_messages))
    return min(job.plan.tail_start, floor)


def prune_outside_tail(job: Job, config: CompressionConfig, analyzer: Analyzer) -> PassResult:
    """Tier 1's passes over every message outside the protected tail, head included."""
    settings = PruneSettings(
        system_end(job.messages), prune_end(job, config), config.prune_min_chars,
        config.args_truncate_over, config.args_head_chars, analyzer,
    )  # fmt: skip
    return prune(job.messages, settings)


def can_prune(job: Job, config: CompressionConfig) -> bool:
    """Whether pruning outside the tail could still remove something (cheap check)."""
    limit = config.prune_min_chars
    for index in range(system_end(job.messages), prune_end(job, config)):
        record = job.facts[index]
        if record.role == "tool" and len(record.text) > limit and not is_stub(record.text):
            return True
    return False


def tier1_target(job: Job, config: CompressionConfig, threshold: int) -> int:
    """The request size tier 1 must reach to stop there."""
    reference = job.room + job.extra if job.force else threshold
    return int(reference * config.prune_only_ratio)


def tokens_of(messages: Sequence[Message], analyzer: Analyzer) -> int:
    facts = analyzer.facts
    return sum(facts(m).tokens for m in messages)


def fit_room(
    messages: list[Message],
    tokens: int,
    room: int,
    config: CompressionConfig,
    estimate: Callable[[list[Message]], int],
) -> tuple[list[Message], int, tuple[Cut, ...]]:
    """A must-fit result over ``room``: the largest tool results (the tail's, typically),
    then long call arguments, are shortened until it fits; the handoff and the user's
    messages are left alone."""
    if tokens < room:
        return messages, tokens, ()
    return last_rungs(messages, tokens, room, config, estimate)


def floor_breakdown(
    messages: Sequence[Message], facts: Sequence[MessageFacts], extra: int
) -> tuple[int, int, int, int]:
    """(system prompt, tool schemas, newest user request, minimum handoff) tokens."""
    system = sum(f.tokens for f in facts[: system_end(messages)])
    newest = next((f.tokens for f in reversed(facts) if f.real_user), 0)
    return system, extra, newest, MIN_FIT_BUDGET + HANDOFF_FRAME_TOKENS


def over_window_warning(
    messages: Sequence[Message],
    facts: Sequence[MessageFacts],
    extra: int,
    window: int,
    after: int,
    *,
    forced: bool,
) -> str | None:
    """The warning a result over the window carries, with the floor's breakdown."""
    if window <= 0 or after <= window:
        return None
    system, tools, newest, handoff = floor_breakdown(messages, facts, extra)
    floor = system + tools + newest + handoff
    head = (
        f"the result is ~{after:,} tokens, over the window ({window:,}); the smallest it "
        f"can get is ~{floor:,} (system prompt {system:,} + tool schemas {tools:,} + newest "
        f"request {newest:,} + minimum handoff {handoff:,})"
    )
    if floor >= window:
        return (
            f"{head}, which alone does not fit: raise the window, shorten the system prompt "
            "or tool schemas, or send a shorter request"
        )
    advice = (
        "the agent loop's overflow recovery shortens it further"
        if forced
        else ("compress with force=True (or --force) to fit it")
    )
    return f"{head}: {advice}"


def fitted(
    job: Job, messages: list[Message], analyzer: Analyzer, config: CompressionConfig
) -> tuple[list[Message], int, tuple[str, ...]]:
    """``messages``, their size, and notes of what was shortened: a must-fit result over
    the window has its largest tool results (then call arguments) shortened first."""
    tokens = job.extra + tokens_of(messages, analyzer)
    if not job.force or tokens < job.room + job.extra:
        return messages, tokens, ()

    def estimate(candidate: list[Message]) -> int:
        return job.extra + tokens_of(candidate, analyzer)

    out, after, cuts = fit_room(messages, tokens, job.room + job.extra, config, estimate)
    notes = tuple(
        f"shortened {c.count} {c.what}{'s' if c.count != 1 else ''} to fit the window "
        f"(~{c.before:,} -> ~{c.after:,} tokens)"
        for c in cuts
    )
    return out, after, notes
