"""The built-in compressor: protected head + handoff summary + verbatim tail (design §4).

``compress`` is a pipeline of pure steps over message lists: plan the boundaries, prune
old tool output everywhere outside the protected tail (tier 1) and stop there when that
is enough, else summarize the middle, assemble head + handoff + tail, repair pairing
(logged fallback), strip historical media (tier 2); a result that must fit the window
has its largest tool results shortened; the report says which tier ran and warns, with
the floor's breakdown, when the result is still over the window. A no-op, skip or abort
returns the caller's list object itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any

from ..analysis.events import Analysis
from ..analysis.record import Analyzer, MessageFacts
from ..compaction.handoff import render_handoff
from ..compaction.plan import CompactionPlan, archive_turns, assemble, make_plan, summarized_turns
from ..compaction.prune import PassResult
from ..core.cache import kept_prefix
from ..core.config import DEFAULT_CONFIG, CompressionConfig, usable_window
from ..core.frozen import evolve
from ..core.messages import Message, ToolSchema
from ..core.report import ArchivedItem, CompressionReport, CompressionResult, Outcome, Reason, Tier
from ..core.tokens import TextCounter, estimate_tokens, tool_schema_tokens
from ..summary.extractive.summarizer import ExtractiveSummarizer
from ..summary.protocol import Summarizer
from ..summary.redact import redact
from ..summary.request import compose, summary_request
from .base import ToolProvider
from .guard import (
    NEW_GUARD,
    Block,
    blocked,
    on_compaction,
    on_force,
    on_structural_noop,
)
from .pipeline import (
    TOKENS,
    Job,
    can_prune,
    cut_tail,
    fitted,
    keep_replaced,
    make_job,
    over_window_warning,
    prune_head,
    prune_outside_tail,
    pruned_tokens,
    receipt_of,
    tier1_out_of_reach,
    tier1_target,
    verbatim_cause,
)
from .summarize import run_summary
from .trigger import blocked_decision, detail_of
from .triggering import Triggering


class ContextCompressor(Triggering):
    """Keeps a conversation under its model's context window.

    Args:
        config: tunables (design §10 defaults).
        context_length: the model's window in tokens.
        max_tokens: output reservation subtracted from the window (design §2).
        model / provider: select per-model threshold overrides.
        tools: tool schemas sent with each request (counted in estimates).
        summarizer: writes the handoff sections; the extractive one when ``None``.
        summary_context_length: window of an LLM summary model; when given, the trigger is
            lowered so the summarizer can read what it must summarize (design §5).
        token_counter: counts text tokens; the rough estimate of design §2 when ``None``
            (see :func:`windowkeeper.core.exact_tokens.local_counter` for exact local counts).
        tool_providers: tools offered to the model through ``get_tool_schemas``.
        clock / today: injected time sources (wall-clock seconds for cooldowns; the date).
    """

    def __init__(
        self,
        config: CompressionConfig | None = None,
        *,
        context_length: int,
        max_tokens: object = None,
        model: str | None = None,
        provider: str | None = None,
        tools: Sequence[ToolSchema] | None = None,
        summarizer: Summarizer | None = None,
        summary_context_length: int | None = None,
        token_counter: TextCounter | None = None,
        tool_providers: Sequence[ToolProvider] = (),
        clock: Callable[[], float] = time.time,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.config = config or DEFAULT_CONFIG
        self.context_length = context_length
        self.model = model
        self.provider = provider
        self.tools = list(tools) if tools else None
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
        self._fallback: Summarizer = ExtractiveSummarizer()
        self.tool_providers = list(tool_providers)
        self.token_counter = token_counter
        self.analyzer = Analyzer(image_tokens=self.config.image_tokens, count=token_counter)
        self._clock = clock
        self._today = today
        self.max_tokens = max_tokens
        self.summary_context_length = summary_context_length
        self.warnings: tuple[str, ...] = ()
        self.threshold_tokens = self._derive_threshold()
        self.guard = NEW_GUARD
        self.previous_summary: str | None = None
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.epoch = 0
        """Bumped by every session reset: what was prepared for another session is stale."""

    def detached(self) -> ContextCompressor:
        # The plain class: a subclass that records its compactions records none of these.
        copy = ContextCompressor.__new__(ContextCompressor)
        copy.__dict__.update(self.__dict__)
        copy.analyzer = Analyzer(image_tokens=self.config.image_tokens, count=self.token_counter)
        return copy

    @property
    def compression_count(self) -> int:
        return self.guard.compression_count

    # --- tools -----------------------------------------------------------------------

    name = "compressor"

    def get_tool_schemas(self) -> list[ToolSchema]:
        return [schema for provider in self.tool_providers for schema in provider.schemas()]

    def handle_tool_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        for provider in self.tool_providers:
            answer = provider.call(name, arguments)
            if answer is not None:
                return answer
        return super().handle_tool_call(name, arguments)

    # --- planning --------------------------------------------------------------------

    def plan(self, messages: Sequence[Message]) -> CompactionPlan:
        """Where a compaction of ``messages`` would cut, without doing it."""
        facts = self.analyzer.analyze(messages)
        return self._plan(messages, facts)

    def _plan(
        self,
        messages: Sequence[Message],
        facts: Sequence[MessageFacts],
        costs: Sequence[int] | None = None,
    ) -> CompactionPlan:
        costs = costs if costs is not None else list(map(TOKENS, facts))
        return make_plan(
            messages, costs, self.config, self.context_length, self.tail_budget_tokens, facts
        )

    # --- compaction ------------------------------------------------------------------

    def compress(
        self,
        messages: list[Message],
        *,
        force: bool = False,
        focus_topic: str | None = None,
        current_tokens: int | None = None,
    ) -> CompressionResult:
        """Compact ``messages``; see the module docstring for the pipeline.

        ``current_tokens`` is informational (the caller's real prompt count); savings are
        always measured on estimates of the messages themselves.
        """
        started = time.perf_counter()
        job = self._job(messages, force, focus_topic)
        if force:
            self.guard = on_force(self.guard)
        else:
            block, self.guard = blocked(self.guard, self._clock())
            if block is Block.STRUCTURAL_BACKOFF and can_prune(job, self.config):
                block = None  # pruning can still remove something: never block it
            if block is not None:
                skip = blocked_decision(block, job.base.before_tokens, 0, self.guard)
                return self._unchanged(job, started, Outcome.SKIPPED, Reason(block), skip.detail)
        self.previous_summary = job.plan.previous_summary
        plan, config = job.plan, self.config
        pruned = None
        tier1 = focus_topic is None or not plan.compressible
        if tier1 and not (
            plan.compressible and tier1_out_of_reach(job, config, self.threshold_tokens)
        ):
            pruned = prune_outside_tail(job, config, self.analyzer)
            result = self._prune_tier(job, pruned, started)
            if result is not None:
                return result
        if not plan.compressible:
            return self._nothing_gained(job, started, Reason.NOTHING_TO_COMPRESS)
        if pruned is None:
            # Tier 2 keeps the head and the tail: only the head's stubs are kept, so only
            # the head is pruned; the middle's long outputs leave with the summarized turns.
            head = prune_head(job, config, self.analyzer)
            pruned = evolve(head, changed=head.changed + len(plan.prune_indices))
        return self._summary_tier(job, pruned, started)

    def _job(self, messages: list[Message], force: bool, focus: str | None) -> Job:
        facts = self.analyzer.analyze(messages)
        costs = list(map(TOKENS, facts))  # listed once, for the plan and the job
        extra = tool_schema_tokens(self.tools)
        plan = self._plan(messages, facts, costs)
        room = usable_window(self.context_length, self.max_tokens) - extra
        return make_job(messages, facts, plan, extra, room, self.config, self.context_length,
                        force=force, focus=focus, costs=costs)  # fmt: skip

    def _unchanged(
        self, job: Job, started: float, outcome: Outcome, reason: Reason, detail: str = "",
        **fields: Any,
    ) -> CompressionResult:  # fmt: skip
        elapsed = (time.perf_counter() - started) * 1000
        detail = detail or detail_of(reason)
        report = evolve(job.base, outcome=outcome, reason=reason, detail=detail, **fields)
        warning = self._over_window(job, job.messages, report.after_tokens)
        if warning:
            report = evolve(report, warnings=(*report.warnings, warning))
        return CompressionResult(job.messages, evolve(report, elapsed_ms=elapsed))

    def _nothing_gained(self, job: Job, started: float, reason: Reason) -> CompressionResult:
        """Back off like a structural no-op (a forced call ignores it), remembering what
        kept the compaction from saving anything, for the skips that follow."""
        cause = verbatim_cause(job, summarized=reason is Reason.NO_REDUCTION)
        self.guard = on_structural_noop(self.guard, self._clock(), cause)
        return self._unchanged(job, started, Outcome.NOOP, reason, detail_of(reason, cause))

    def _over_window(self, job: Job, messages: list[Message], after: int) -> str | None:
        window, force = usable_window(self.context_length, self.max_tokens), job.force
        return over_window_warning(messages, self.analyzer, job.extra, window, after, forced=force)

    def _prune_tier(
        self, job: Job, pruned: PassResult, started: float, target: int | None = None
    ) -> CompressionResult | None:
        """Tier 1 alone, when it is enough (or when nothing else can be done); with a
        ``target``, only when it brings the request (fitted) to it."""
        if pruned.messages is job.messages:
            return None
        bounded = target is not None or job.plan.compressible
        reached = None
        replaced: list[tuple[Message, int]] = []
        if target is None:
            target = tier1_target(job, self.config, self.threshold_tokens)
            reached = job.extra + pruned_tokens(job, pruned.messages, self.analyzer, replaced)
            if job.plan.compressible and reached > target:
                return None  # fitting aims at the window, far above: tier 1 is not enough
        out, after, cuts = fitted(job, pruned.messages, self.analyzer, self.config, reached)
        if after >= job.base.before_tokens or (bounded and after > target):
            return None
        keep_replaced(self.analyzer, replaced)
        report = evolve(
            job.base, outcome=Outcome.COMPRESSED, tier=Tier.PRUNE, after_tokens=after,
            after_messages=len(out), pruned=pruned.changed, warnings=cuts,
        )  # fmt: skip
        return self._finish(job, out, report, pruned.archived, started, None)

    def _summary_tier(self, job: Job, pruned: PassResult, started: float) -> CompressionResult:
        messages, plan, pruned = job.messages, job.plan, cut_tail(job, pruned)
        turns = summarized_turns(messages, plan, job.facts)
        analysis = Analysis(turns, self.analyzer.analyze(turns))
        request = summary_request(
            messages, turns, plan, job.focus, self._today(), analysis, job.facts
        )
        run = run_summary(self.summarizer, self._fallback, request, self.guard, self.config,
                          self._clock())  # fmt: skip
        self.guard = run.guard
        outcome, failure, complete = run.outcome, run.failure, run.complete
        if outcome.body is None:
            assert failure is not None
            return self._unchanged(
                job, started, Outcome.ABORTED, Reason.SUMMARY_FAILED,
                f"compression aborted, nothing was dropped: {failure.kind.value}: "
                f"{failure.detail}. Fix the cause and run compress again, or start a new "
                "session.",
                failure=failure.kind, summarizer=outcome.summarizer,
            )  # fmt: skip
        # The state and the written text come from the transcript: redact the whole.
        summarizer = outcome.summarizer
        written = compose(outcome.body, request, complete=complete)
        del turns, analysis, request, run, outcome  # done with, before the peak: the archive
        body = redact(written)
        assembled, repairs = assemble(messages, pruned.messages, plan, render_handoff(body))
        assembled, after, cuts = fitted(job, assembled, self.analyzer, self.config)
        if after >= job.base.before_tokens:
            return self._nothing_gained(job, started, Reason.NO_REDUCTION)
        report = evolve(
            job.base,
            outcome=Outcome.COMPRESSED, tier=Tier.SUMMARY,
            after_tokens=after, after_messages=len(assembled),
            pruned=pruned.changed, summarized_messages=plan.tail_start - plan.head_end,
            summary_tokens=estimate_tokens(body), fallback_used=failure is not None,
            summarizer=summarizer, failure=failure.kind if failure else None,
            repairs=repairs, warnings=cuts,
        )  # fmt: skip
        archived = (*pruned.archived, *archive_turns(messages, plan, pruned.archived, job.facts))
        return self._finish(job, assembled, report, archived, started, body)

    def _finish(
        self, job: Job, messages: list[Message], report: CompressionReport,
        archived: tuple[ArchivedItem, ...], started: float, summary: str | None,
    ) -> CompressionResult:  # fmt: skip
        """Book-keeping after a completed compaction (count, savings streak, warnings) and
        its result: ``report`` completed with the warnings, the time and the receipt.
        ``summary``: the handoff written (``None`` for a prune-only result, which keeps the
        transcript's own handoff, if any, as the previous one)."""
        self.guard = on_compaction(self.guard, report.savings_ratio, self.config.min_savings_ratio)
        self.previous_summary = job.plan.previous_summary if summary is None else summary
        self.analyzer.retain(messages)
        # Sentinel until real usage of the compacted request arrives (treated as 0).
        self.last_prompt_tokens = -1
        warnings = list(report.warnings)
        if self.compression_count == 2:  # said once, when the session crosses it
            warnings.append("session compressed 2 times; accuracy may degrade")
        over = self._over_window(job, messages, report.after_tokens)
        if over:
            warnings.append(over)
        elapsed = (time.perf_counter() - started) * 1000
        # The wait is the engine's own time here; the manager, which sees hooks and
        # background jobs, states the agent's wait.
        kept = job.extra + kept_prefix(job.messages, messages, (f.tokens for f in job.facts))
        made = receipt_of(self.config, self.provider, report, kept, waited_ms=elapsed)
        report = evolve(report, warnings=tuple(warnings), elapsed_ms=elapsed, receipt=made)
        result = CompressionResult(messages, report, archived, summary)
        self.completed(job.messages, result)
        return result
