"""Running one compaction for :class:`~windowkeeper.loop.manager.ContextManager`: in the
foreground, or by applying one prepared in the background (design §4).

Both end the same way: hooks before and after, the live state, the book-keeping that
defers the next estimate, the events and the receipt stating how long the agent waited.
A step that may wait for a background job is a generator yielding
:class:`~windowkeeper.loop.steps.Wait` (the turn machine's drivers wait their own way;
:func:`~windowkeeper.loop.steps.settle` runs one without background, which never waits).
What the compaction is past the trigger (a prepared result, tier 1 alone, none yet: the
request deferred) is decided in :mod:`.deferring`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.config import coerce_positive_int
from ..core.messages import Message, conversation_warnings
from ..core.report import CompressionResult, DiscardReason, Receipt, Tier
from ..engine.base import ContextEngine
from ..engine.prepared import PreparedCompaction
from .deferring import DEFERRED, Deferrals, Deferring, Found, noted
from .events import Trigger
from .hooks import HookRunner, budget_blocks, insert_live_state
from .steps import Waits

__all__ = ("Compacting", "Deferrals")


class Compacting(Deferring):
    """The compaction part of the manager; the attributes are the manager's own."""

    hooks: HookRunner
    clock: Callable[[], float]
    awaiting_real_usage: bool
    last_prompt_tokens: int
    last_receipt: Receipt | None

    @property
    @abc.abstractmethod
    def engine(self) -> ContextEngine: ...

    # --- one compaction --------------------------------------------------------------

    def _compaction(
        self,
        messages: list[Message],
        trigger: Trigger,
        tokens: int,
        *,
        force: bool = False,
        focus: str | None = None,
        attempt: int | None = None,
        background: bool = False,
    ) -> Waits[list[Message]]:
        started = self.clock()
        found: Found = None
        if background:
            step = yield from self._background_step(messages, tokens, trigger, force)
            if step is DEFERRED:
                return messages
            found = step
            if found is DiscardReason.CLAIMED:
                if not force:  # another process prepares it; this request still fits
                    self.events.claimed(trigger, tokens, len(messages))
                    return messages
                found = None  # it must fit now: compact here
        try:  # a shared session's lease, taken for this compaction, goes back whatever happens
            result = self._run(messages, trigger, tokens, found, force, focus, attempt)
        finally:
            self.background.release()
        return self._finished(messages, result, trigger, started, attempt)

    def _run(
        self,
        messages: list[Message],
        trigger: Trigger,
        tokens: int,
        found: Found,
        force: bool,
        focus: str | None,
        attempt: int | None,
    ) -> CompressionResult:
        """The compaction itself: the applied background result, or the engine's."""
        self.events.started(
            trigger, tokens, len(messages), threshold=self.threshold, attempt=attempt
        )
        for warning in conversation_warnings(messages):
            self.events.input_defect(warning)
        applied = found if isinstance(found, tuple) else None
        if self.hooks.hooks:
            self.hooks.pre_compress(self._to_drop(messages, applied[0] if applied else None))
            self._report_hook_failures(trigger)
        if applied is not None:
            return applied[1]
        if isinstance(found, CompressionResult):
            return found  # tier 1 alone, done at the hard mark
        self._share_estimates()
        result = self.engine.compress(
            messages, current_tokens=tokens, focus_topic=focus, force=force
        )
        return noted(result, found)

    def _share_estimates(self) -> None:
        """Hand the estimates already made to the engine's analysis (the manager does)."""

    def _finished(
        self,
        messages: list[Message],
        result: CompressionResult,
        trigger: Trigger,
        started: float,
        attempt: int | None,
    ) -> list[Message]:
        """Everything after the engine's part: live state, book-keeping, events."""
        done = result.report.compressed and result.messages is not messages
        out = self._with_live_state(result.messages, result, trigger) if done else messages
        deferred = self.deferrals
        if done:
            self._after_compaction(trigger)
            if self.background.sharing is None:
                # Still past the soft mark: prepare the next one now. (A shared session is
                # stored after this, under a new generation a job bound now would miss.)
                self._soft_mark(out, result.report.after_tokens)
        elapsed = (self.clock() - started) * 1000
        receipt = getattr(result.report, "receipt", None) if done else None
        if receipt is not None:
            # The agent waited for all of it: hooks and a background job's rest included.
            self.last_receipt = receipt = replace(
                receipt, waited_ms=elapsed, deferred_requests=deferred.requests,
                deferred_peak_tokens=deferred.peak_tokens,
            )  # fmt: skip
        self.events.result(
            result.report, trigger, duration_ms=elapsed, attempt=attempt,
            threshold=self.threshold, receipt=receipt,
        )  # fmt: skip
        count = coerce_positive_int(self.engine.get_status().get("compression_count")) or 0
        if done and count >= 2:
            self.events.many_times(count)
        return out

    def _to_drop(
        self, messages: list[Message], prepared: PreparedCompaction | None
    ) -> list[Message]:
        """Exactly what the compaction summarizes; the whole list for other engines."""
        if not self._compressor:
            return list(messages)
        if prepared is not None:
            return messages[prepared.dropped[0] : prepared.dropped[1]]
        plan = self._compressor.plan(messages)
        return messages[plan.head_end : plan.tail_start] if plan.compressible else []

    def _with_live_state(
        self, messages: list[Message], result: Any, trigger: Trigger
    ) -> list[Message]:
        if not self.hooks.hooks or getattr(result.report, "tier", None) is Tier.PRUNE:
            return messages  # live state goes with a handoff; pruning alone has none
        blocks = self.hooks.post_compress(result)
        self._report_hook_failures(trigger)
        return insert_live_state(messages, budget_blocks(blocks, self.hooks.budget_tokens))

    def _after_compaction(self, trigger: Trigger) -> None:
        self.awaiting_real_usage = True
        self.last_prompt_tokens = -1  # sentinel: read as 0 until real usage arrives
        if self._compressor:
            self._compressor.last_prompt_tokens = -1
        self.compactions += 1
        self.deferrals = Deferrals()
        superseded = self.background.supersede(self.compactions)
        if superseded is not None:
            self.events.background_discarded(superseded.value, trigger)
        self.events.reset()

    def _report_hook_failures(self, trigger: Trigger) -> None:
        for failure in self.hooks.take_failures():
            self.events.hook_failed(failure.hook, failure.phase, failure.error_type, trigger)
