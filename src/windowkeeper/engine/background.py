"""Background compaction in the engine: prepare a compaction off the request path, apply it
later to a history that grew meanwhile (design §4).

:func:`prepare` runs in a worker thread on a *detached* copy of the compressor: the same
settings, summarizer and guard state as at the start, its own analysis cache, so nothing
the request path reads is touched. :func:`adopt` runs on the request path when the
trigger is crossed and applies the result only if everything it was made from still
holds:

* the session is the same one (no reset since) and so are the model's window and trigger;
* the history still starts with exactly the messages it was made from (content digest);
* the messages added since, joined to its verbatim tail, go through the rules that end
  every compaction (tool-pairing repair, historical media) and the joined list passes the
  invariants;
* the joined list is small enough: a prune-only result within tier 1's own target, a
  summary under the soft mark (at or over it, the next compaction would start at once).
  When the messages added since have outgrown it, tier 1 runs over the joined list first
  (old tool output outside its verbatim tail becomes stubs, as a foreground compaction's
  first tier leaves it): milliseconds, where a discard costs a new summary.

Otherwise it returns a :class:`~windowkeeper.core.report.DiscardReason` and the caller
compacts in the foreground. Applying costs a digest of the history's prefix and the
analysis of the joined list, never a summary.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..analysis.record import Analyzer
from ..compaction.media import strip_historical_media
from ..compaction.plan import CompactionPlan
from ..compaction.prune import PassResult
from ..compaction.sanitize import sanitize_tool_pairs
from ..core.cache import kept_prefix
from ..core.config import CompressionConfig, usable_window
from ..core.invariants import violations
from ..core.messages import Message, ToolSchema
from ..core.report import (
    ArchivedItem,
    Background,
    CompressionReport,
    CompressionResult,
    DiscardReason,
    Tier,
)
from ..core.tokens import tool_schema_tokens
from ..summary.extractive.summarizer import ExtractiveSummarizer
from ..summary.protocol import Summarizer
from .base import ContextEngine
from .guard import GuardState, blocked, on_compaction, on_summary_failure, on_summary_success
from .pipeline import Job, fitted, make_job, prune_outside_tail, receipt_of, tokens_of
from .prepared import PreparedCompaction, history_digest

__all__ = ("BackgroundCompaction",)


@dataclass(frozen=True)
class _Fit:
    """An applied result as it will be sent: its messages and size, and what tier 1 did
    to it on applying (items shortened, their originals, notes of cuts to the window)."""

    messages: list[Message]
    after: int
    pruned: int = 0
    archived: tuple[ArchivedItem, ...] = ()
    notes: tuple[str, ...] = ()


class BackgroundCompaction(ContextEngine):
    """Background compaction for :class:`~windowkeeper.engine.compressor.ContextCompressor`
    (see the module docstring); the attributes are the compressor's own."""

    config: CompressionConfig
    threshold_tokens: int
    context_length: int
    max_tokens: object
    guard: GuardState
    previous_summary: str | None
    last_prompt_tokens: int
    analyzer: Analyzer
    tools: list[ToolSchema] | None
    provider: str | None
    summarizer: Summarizer
    epoch: int
    _clock: Callable[[], float]

    @abc.abstractmethod
    def plan(self, messages: Sequence[Message]) -> CompactionPlan:
        """Where a compaction of ``messages`` would cut."""

    @abc.abstractmethod
    def _job(self, messages: list[Message], force: bool, focus: str | None) -> Job: ...

    @abc.abstractmethod
    def _prune_tier(
        self, job: Job, pruned: PassResult, started: float, target: int | None = None
    ) -> CompressionResult | None: ...

    @abc.abstractmethod
    def detached(self) -> BackgroundCompaction:
        """A copy with the same settings and state but its own analysis cache (the
        original's is used by the request path; the two share no mutable structure)."""

    def completed(self, messages: list[Message], result: CompressionResult) -> None:
        """Every completed compaction passes here, in the foreground or applied from the
        background, with its input (a no-op: a subclass that records them overrides it;
        a detached copy is the plain class and records nothing)."""

    def background_enabled(self) -> bool:
        """``compression.background``; unset: on unless the summarizer is the extractive
        one (its handoff takes milliseconds, a model call is worth hiding)."""
        flag = self.config.background
        if flag is None:
            return not isinstance(self.summarizer, ExtractiveSummarizer)
        return flag

    @property
    def soft_mark(self) -> int:
        """The request size past which a background compaction starts."""
        return int(self.threshold_tokens * self.config.background_ratio)

    def may_prepare(self) -> bool:
        """Whether a compaction at the trigger would be allowed now (the guard is only
        read: a probe or a cooldown is armed by the trigger itself, not the soft mark)."""
        if not self.config.enabled or not self.background_enabled():
            return False
        block, _ = blocked(self.guard, self._clock())
        return block is None

    def stopgap(
        self, messages: list[Message], limit: int, *, force: bool = False
    ) -> CompressionResult | None:
        """Tier 1 alone as a compaction, when it brings ``messages`` under ``limit`` tokens
        (a must-fit one, ``force``, with the tight tail and the last rungs): what the
        agent need not wait for while the summary is prepared in the background.
        ``None`` (nothing changed) when it cannot."""
        started = time.perf_counter()
        job = self._job(messages, force, None)
        pruned = prune_outside_tail(job, self.config, self.analyzer)
        return self._prune_tier(job, pruned, started, target=limit - 1)

    def prepare(
        self, snapshot: list[Message], tokens: int | None = None
    ) -> PreparedCompaction | DiscardReason:
        """Compact ``snapshot`` on a detached copy (call from a worker thread, with a
        list nobody appends to). ``tokens``: its request size with the tool schemas;
        what will arrive before the trigger is then planned for (:meth:`_ahead`)."""
        started = time.perf_counter()
        digest = history_digest(snapshot)  # first: an edit made after this shows later
        engine = self.detached()
        if tokens is not None:
            engine.config = self._ahead(tokens)
        plan = engine.plan(snapshot)
        result = engine.compress(snapshot)
        report = result.report
        if report.aborted:
            return DiscardReason.FAILED
        if not report.compressed or result.messages is snapshot:
            return DiscardReason.NOT_COMPRESSED
        dropped = (plan.head_end, plan.tail_start) if plan.compressible else (0, 0)
        elapsed = (time.perf_counter() - started) * 1000
        return PreparedCompaction(
            len(snapshot), digest, tuple(result.messages), report, result.archived,
            result.summary, engine.previous_summary, dropped, engine.threshold_tokens,
            engine.context_length, self.epoch, elapsed,
        )  # fmt: skip

    def _ahead(self, tokens: int) -> CompressionConfig:
        """The settings of a job started at ``tokens``: the messages that arrive before
        the trigger will join its tail, so they count against the tail's budget and tier
        1's target now (the applied result is then about what a foreground compaction at
        the trigger leaves)."""
        config = self.config
        coming = max(0, self.threshold_tokens - tokens) / max(1, self.threshold_tokens)
        return replace(
            config,
            prune_only_ratio=max(0.05, config.prune_only_ratio - coming),
            target_ratio=max(0.10, config.target_ratio - coming),
        )

    def stale(
        self, prepared: PreparedCompaction, messages: Sequence[Message]
    ) -> DiscardReason | None:
        """Why ``prepared`` cannot stand for the head of ``messages`` any more, if so."""
        if prepared.epoch >= 0 and prepared.epoch != self.epoch:
            return DiscardReason.SESSION
        made_for = (prepared.threshold, prepared.context_length)
        if made_for != (self.threshold_tokens, self.context_length):
            return DiscardReason.MODEL
        length = prepared.length
        if len(messages) < length or history_digest(messages[:length]) != prepared.digest:
            return DiscardReason.EDITED
        return None

    def adopt(
        self,
        prepared: PreparedCompaction,
        messages: list[Message],
        *,
        current_tokens: int | None = None,
        must_fit: bool = False,
    ) -> CompressionResult | DiscardReason:
        """``prepared`` applied to ``messages`` (see the module docstring), the state
        moved on as a compaction moves it; or why it cannot be. ``current_tokens``: the
        caller's estimate of ``messages`` with the tool schemas, when it has one;
        ``must_fit``: the request is at the window, where a result that fits it is applied
        rather than discarded for a compaction the agent would wait for."""
        started = time.perf_counter()
        reason = self.stale(prepared, messages)
        if reason is not None:
            return reason
        joined = [*prepared.messages, *messages[prepared.length :]]
        if prepared.length < len(messages):
            joined = strip_historical_media(sanitize_tool_pairs(joined).messages)
        analyzer = self.analyzer
        extra = tool_schema_tokens(self.tools)
        before = current_tokens
        if before is None:
            before = extra + tokens_of(messages, analyzer)
        fit = self._fit(prepared, joined, extra, must_fit)
        if fit is None or fit.after >= before:
            return DiscardReason.INSUFFICIENT
        joined = fit.messages
        if violations(joined):
            return DiscardReason.INVALID
        report = self._moved_on(prepared, before, fit.after, fit.pruned)
        report = replace(
            report, before_messages=len(messages), after_messages=len(joined),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            warnings=(*report.warnings, *fit.notes),
        )  # fmt: skip
        costs = (analyzer.facts(m).tokens for m in messages)
        kept = extra + kept_prefix(messages, joined, costs)
        made = receipt_of(self.config, self.provider, report, kept, background=True)
        analyzer.retain(joined)
        archived = (*prepared.archived, *fit.archived)
        result = CompressionResult(
            joined, replace(report, receipt=made), archived, prepared.summary
        )
        self.completed(messages, result)
        return result

    def _fit(
        self, prepared: PreparedCompaction, joined: list[Message], extra: int, must_fit: bool
    ) -> _Fit | None:
        """``joined`` as small as it must be: as it is, or with tier 1 run over it; at the
        window (``must_fit``) as a must-fit compaction runs tier 1 (the tight tail, then
        the last rungs) when that is what fits it; ``None`` when it is still too large."""
        after = extra + tokens_of(joined, self.analyzer)
        largest = self._largest(prepared.report)
        if after <= largest:
            return _Fit(joined, after)
        fit = self._trimmed(joined, extra, force=False)
        if fit.after <= largest or not must_fit:
            return fit if fit.after <= largest else None
        fit = self._trimmed(joined, extra, force=True)
        room = usable_window(self.context_length, self.max_tokens)
        return fit if fit.after < room else None

    def _trimmed(self, joined: list[Message], extra: int, *, force: bool) -> _Fit:
        """Tier 1 over ``joined``: every tool output and long call argument outside its own
        verbatim tail (planned as for a compaction of it, a must-fit one when ``force``)
        pruned, the texts untouched; a must-fit one then shortened to the window by the
        last rungs. Archived items index into ``joined``."""
        analyzer = self.analyzer
        facts = analyzer.analyze(joined)
        room = usable_window(self.context_length, self.max_tokens) - extra
        job = make_job(
            joined, facts, self.plan(joined), extra, room, self.config, self.context_length,
            force=force, focus=None,
        )  # fmt: skip
        pruned = prune_outside_tail(job, self.config, analyzer)
        out, after, notes = fitted(job, pruned.messages, analyzer, self.config)
        return _Fit(out, after, pruned.changed, pruned.archived, notes)

    def _largest(self, report: CompressionReport) -> int:
        """The largest applied result worth having: tier 1's own target for a prune-only
        one (the foreground stops at tier 1 only within it), else under the soft mark."""
        if report.tier is Tier.PRUNE:
            return int(self.threshold_tokens * self.config.prune_only_ratio)
        return self.soft_mark - 1

    def _moved_on(
        self, prepared: PreparedCompaction, before: int, after: int, pruned: int
    ) -> CompressionReport:
        """The state after the compaction, as a foreground one leaves it; the report with
        the figures of the history it was applied to (``pruned``: by tier 1 on applying)."""
        report = prepared.report
        guard = self.guard
        if report.tier is Tier.SUMMARY:
            failed, now = report.failure, self._clock()
            guard = on_summary_failure(guard, failed, now) if failed else on_summary_success(guard)
        ratio = 1 - after / before if before else 0.0
        self.guard = on_compaction(guard, ratio, self.config.min_savings_ratio)
        self.previous_summary = prepared.previous_summary
        self.last_prompt_tokens = -1  # the sentinel, until real usage arrives
        return replace(
            report,
            before_tokens=before, after_tokens=after, pruned=report.pruned + pruned,
            background=Background(True, None, prepared.prepared_ms, pruned),
        )  # fmt: skip
