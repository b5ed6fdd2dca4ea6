"""When automatic compaction fires (design §2, §6): the trigger of a model and window, the
decision for a token count, and the words a skipped compaction is explained with."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.config import (
    CompressionConfig,
    apply_threshold_cap,
    compute_threshold_tokens,
    resolve_model_threshold,
)
from ..core.report import Reason
from ..summary.feasibility import check_feasibility
from .guard import Block, GuardState


@dataclass(frozen=True)
class Decision:
    """Whether automatic compaction should run now, and why not."""

    compress: bool
    tokens: int
    threshold: int
    reason: Reason | None = None
    detail: str = ""
    """The line a skipped or blocked decision is reported with."""
    cause: str = ""
    """What blocks, when the engine knows it (figures and indices only, no text)."""


@dataclass(frozen=True)
class Trigger:
    """The trigger in tokens and the warnings that lowered it (a small summary model)."""

    tokens: int
    warnings: tuple[str, ...] = ()


def trigger_tokens(
    config: CompressionConfig,
    context_length: int,
    max_tokens: object,
    model: str | None,
    provider: str | None,
    summary_context_length: int | None,
) -> Trigger:
    """The trigger of design §2 (per-model ratio, output reservation, cap), lowered when an
    LLM summary model could not read what it must summarize (design §5)."""
    ratio = resolve_model_threshold(model, config.model_thresholds, config.threshold, provider)
    trigger = compute_threshold_tokens(context_length, ratio, max_tokens)
    trigger = apply_threshold_cap(trigger, config.threshold_tokens_cap, context_length)
    if summary_context_length is None:
        return Trigger(trigger)
    feasible = check_feasibility(
        context_length,
        summary_context_length,
        trigger,
        allow_small=config.allow_small_summary_model,
        target_ratio=config.target_ratio,
    )
    return Trigger(feasible.threshold_tokens, feasible.warnings)


_DETAILS = {
    Reason.NOTHING_TO_COMPRESS: "compression skipped: nothing left to compress",
    Reason.NO_REDUCTION: "compression skipped: it would not reduce the context",
    Reason.COOLDOWN: "compression skipped: the summarizer is cooling down after a failure",
    Reason.STRUCTURAL_BACKOFF: "compression skipped for a few minutes: the last attempt found "
    "nothing to compress",
    Reason.INEFFECTIVE: "compression blocked: real usage stayed over the threshold after "
    "two compactions",
    Reason.LOW_SAVINGS: "compression blocked: the last two compactions each saved under 10%",
}


def detail_of(reason: Reason, cause: str = "") -> str:
    """The one line a skipped or blocked compaction reports, with its ``cause`` (what a
    compaction had to keep, in figures) when one is known."""
    detail = _DETAILS.get(reason, reason.value)
    return f"{detail}: {cause}" if cause else detail


def blocked_decision(block: Block, tokens: int, threshold: int, guard: GuardState) -> Decision:
    """The decision a gate makes, with its line: a structural backoff names what the
    compaction it backs off from had to keep (remembered in ``guard``)."""
    reason = Reason(block.value)
    cause = guard.structural_cause if block is Block.STRUCTURAL_BACKOFF else ""
    return Decision(False, tokens, threshold, reason, detail_of(reason, cause), cause)
