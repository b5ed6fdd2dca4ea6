"""Running one compaction for :class:`~windowkeeper.loop.manager.ContextManager`: in the
foreground, or by applying one prepared in the background (design §4).

Both end the same way: hooks before and after, the live state, the book-keeping that
defers the next estimate, the events and the receipt stating how long the agent waited.
A step that may wait for a background job is a generator yielding
:class:`~windowkeeper.loop.steps.Wait` (the turn machine's drivers wait their own way;
:func:`~windowkeeper.loop.steps.settle` runs one without background, which never waits).

Past the trigger, a prepared compaction that is ready and still stands for the head of
the history is applied; when none is, the request goes out unchanged as long as it stays
under the hard mark (``background_hard_ratio`` of the usable window, the estimate scaled
by the margin real usage showed), and a job is started from the history as it stands (or
the running one kept): the agent does not wait (SPEC §4 leaves a job that is not ready
to the implementation). Each such request is a ``compaction_deferred`` event and counts
in the receipt of the compaction that follows. A job that failed, or found nothing to
compress in a history already past the trigger, is not restarted: the foreground runs
now, as it would have (its own failure arms the cooldown, its no-op the backoff).

At the hard mark (and at a preflight over the window), a job of the session is waited for
when it is already running (what is left of it is less than a foreground compaction
would take), then applied if it still stands for the head of the history; any other
outcome is discarded with its reason (in the event and in the foreground compaction's
report). Overflow recovery and a manual compaction never wait: they compact in the
foreground and supersede the job.
"""

from __future__ import annotations

import abc
import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..core.config import coerce_positive_int
from ..core.messages import Message, conversation_warnings
from ..core.report import Background, CompressionResult, DiscardReason, Receipt, Tier
from ..engine.base import ContextEngine
from ..engine.compressor import ContextCompressor
from ..engine.prepared import PreparedCompaction
from .background import SessionBackground
from .events import Reporter, Trigger
from .hooks import HookRunner, budget_blocks, insert_live_state
from .steps import Wait, Waits

__all__ = ("Compacting", "Deferrals")

Applied = tuple[PreparedCompaction, CompressionResult]
Found = Applied | CompressionResult | DiscardReason | None
"""A background result applied, tier 1 done alone at the hard mark, why the prepared
result was not applied, or nothing."""


class _Step(enum.Enum):
    DEFERRED = "deferred"


Step = Found | Literal[_Step.DEFERRED]


@dataclass
class Deferrals:
    """Requests that went out past the trigger since the last compaction: how many, and
    the largest (real usage when it came, else the estimate)."""

    requests: int = 0
    peak_tokens: int = 0
    _last: tuple[int, int] | None = None
    """The request counted at its preflight (its real usage refines it, never recounts)."""

    def note(self, messages: list[Message], tokens: int, trigger: Trigger) -> None:
        key = (id(messages), len(messages))
        if trigger is not Trigger.POST_RESPONSE or key != self._last:
            self.requests += 1
        self.peak_tokens = max(self.peak_tokens, tokens)
        self._last = key


class Compacting(abc.ABC):
    """The compaction part of the manager; the attributes are the manager's own."""

    _compressor: ContextCompressor | None
    hooks: HookRunner
    events: Reporter
    clock: Callable[[], float]
    background: SessionBackground
    awaiting_real_usage: bool
    last_prompt_tokens: int
    last_receipt: Receipt | None
    compactions: int
    deferrals: Deferrals
    estimate_margin: float

    @property
    @abc.abstractmethod
    def engine(self) -> ContextEngine: ...

    @property
    @abc.abstractmethod
    def threshold(self) -> int: ...

    @property
    @abc.abstractmethod
    def window(self) -> int: ...

    @property
    def hard_mark(self) -> int:
        """The request size past the trigger up to which a request goes out unchanged
        while its compaction is prepared (see the module docstring)."""
        compressor = self._compressor
        ratio = compressor.config.background_hard_ratio if compressor else 1.0
        return int(self.window * ratio)

    # --- background ------------------------------------------------------------------

    def _soft_mark(self, messages: list[Message], tokens: int) -> None:
        """Under the trigger: start preparing a compaction once past the soft mark."""
        compressor = self._compressor
        self._finished_jobs()
        if compressor is None or self.background.job is not None:
            return
        if tokens < compressor.soft_mark or not compressor.may_prepare():
            return
        if self.background.start(compressor, messages, self.compactions, tokens):
            self.events.background_started(tokens, compressor.soft_mark, len(messages))

    def _finished_jobs(self) -> None:
        """Report a job that finished with a compaction ready (discards are reported
        when they are decided, at the trigger)."""
        done = self.background.finished()
        if isinstance(done, PreparedCompaction):
            report = done.report
            self.events.background_prepared(
                report.tier, report.before_tokens, report.after_tokens, done.prepared_ms
            )

    def _background_step(
        self, messages: list[Message], tokens: int, trigger: Trigger, force: bool
    ) -> Waits[Step]:
        """Past the trigger: a prepared compaction applied now, or the request deferred;
        at the hard mark or when forced, what waiting for the job gave."""
        if force or not self._deferrable(tokens, trigger):
            return (yield from self._at_hard_mark(messages, tokens, trigger, force))
        if self.background.running(len(messages)):
            self._defer(messages, tokens, trigger, "preparing")
            return _Step.DEFERRED
        job = self.background.job
        found = self._take(messages, tokens, trigger)
        if isinstance(found, tuple) or found is DiscardReason.FAILED:
            return found  # applied, or the foreground runs (a failure again arms the cooldown)
        late = job is not None and job.tokens is not None and job.tokens >= self.threshold
        if found is DiscardReason.NOT_COMPRESSED and late:
            return found  # the foreground's own no-op arms the backoff
        self._defer(messages, tokens, trigger, self._restart(messages, tokens, found))
        return _Step.DEFERRED

    def _deferrable(self, tokens: int, trigger: Trigger) -> bool:
        """Whether a request of ``tokens`` may go out unchanged past the trigger: real
        usage as it is, an estimate scaled by the margin real usage showed."""
        compressor = self._compressor
        if compressor is None or not compressor.background_enabled():
            return False
        if trigger is not Trigger.POST_RESPONSE:
            tokens = math.ceil(tokens * self.estimate_margin)
        return tokens < self.hard_mark

    def _restart(self, messages: list[Message], tokens: int, found: Found) -> str:
        """A job from the history as it stands, unless another process prepares one;
        what the deferral waits on."""
        if found is DiscardReason.CLAIMED:
            return "claimed"
        self.background.release()  # the lease a shared take holds for a foreground run
        compressor = self._compressor
        assert compressor is not None
        if self.background.start(compressor, messages, self.compactions, tokens):
            self.events.background_started(tokens, compressor.soft_mark, len(messages))
            return "started"
        return "no_worker"

    def _defer(self, messages: list[Message], tokens: int, trigger: Trigger, why: str) -> None:
        self.deferrals.note(messages, tokens, trigger)
        self.events.deferred_past_trigger(
            trigger, tokens, self.threshold, self.hard_mark, self.deferrals.requests, why
        )

    def _at_hard_mark(
        self, messages: list[Message], tokens: int, trigger: Trigger, must_fit: bool
    ) -> Waits[Found]:
        """At the hard mark (``must_fit``: over the window): a prepared result ready now,
        applied; else tier 1 alone when it brings the request under the hard mark (the
        summary is prepared in the background after it; a running job on the history
        before is superseded); else the running job waited for; else nothing."""
        compressor = self._compressor
        if compressor is None:
            return None
        running = self.background.running(len(messages))
        found = None if running else self._take(messages, tokens, trigger, must_fit)
        if isinstance(found, tuple) or found is DiscardReason.CLAIMED:
            return found
        if compressor.background_enabled():
            limit = int(self.hard_mark / self.estimate_margin)
            quick = compressor.stopgap(messages, limit, force=must_fit)
            if quick is not None:
                return _noted(quick, found)
        if running:
            future = self.background.pending(len(messages))
            if future is not None:
                yield Wait(future)
            found = self._take(messages, tokens, trigger, must_fit)
        return found

    def _take(
        self, messages: list[Message], tokens: int, trigger: Trigger, must_fit: bool = False
    ) -> Found:
        """The session's finished job (or what the sharing holds) taken: applied to
        ``messages`` (``must_fit``: they are at the window), or why not; ``None`` when
        nothing was prepared."""
        compressor = self._compressor
        assert compressor is not None
        self._finished_jobs()
        found = self.background.take(len(messages))
        if found is None or found is DiscardReason.CLAIMED:
            return found
        if isinstance(found, PreparedCompaction):
            adopted = compressor.adopt(found, messages, current_tokens=tokens, must_fit=must_fit)
            reason = adopted if isinstance(adopted, DiscardReason) else None
            if self.background.sharing is not None:
                self.background.sharing.settled(found, reason)
            if not isinstance(adopted, DiscardReason):
                return found, adopted
            found = adopted
        self.events.background_discarded(found.value, trigger)
        return found

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
            if step is _Step.DEFERRED:
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
        result = self.engine.compress(
            messages, current_tokens=tokens, focus_topic=focus, force=force
        )
        return _noted(result, found)

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


def _noted(result: CompressionResult, found: Found) -> CompressionResult:
    """``result`` with the reason the prepared result was discarded, if it was."""
    if not isinstance(found, DiscardReason):
        return result
    note = Background(False, found)
    return replace(result, report=replace(result.report, background=note))
