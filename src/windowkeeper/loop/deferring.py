"""Past the soft mark and the trigger, for :class:`~windowkeeper.loop.manager.ContextManager`:
start a background compaction, send a request unchanged while it is prepared, and decide
at the hard mark what the compaction is (design §4, "Background compaction").

Past the trigger, a prepared compaction that is ready and still stands for the head of
the history is applied; when none is, the request goes out unchanged as long as it stays
under the hard mark (``background_hard_ratio`` of the usable window, the estimate scaled
by the margin real usage showed), and a job is started from the history as it stands (or
the running one kept): the agent does not wait (SPEC §4 leaves a job that is not ready
to the implementation). Each such request is a ``compaction_deferred`` event and counts
in the receipt of the compaction that follows. A job that failed, or found nothing to
compress in a history already past the trigger, is not restarted: the foreground runs
now, as it would have (its own failure arms the cooldown, its no-op the backoff).

At the hard mark (and at a preflight over the window, which must fit): a ready result is
applied if it stands for the head of the history (at the window, held to fitting it);
else tier 1 alone is the compaction when it brings the request under the hard mark
(milliseconds; the summary is then prepared from the pruned history, a job running on
the history before is superseded); else a running job is waited for (what is left of it
is less than a foreground compaction would take); else the foreground runs. When another
process holds the session's lease (a shared store: it is preparing this compaction),
the request waits for it to let go and then applies what it published, rather than
summarize the same turns a second time or compact the history under it. A discard is
named with its reason (in the event and in the compaction's report). Overflow recovery
and a manual compaction never wait: they compact in the foreground and supersede the job.
"""

from __future__ import annotations

import abc
import enum
import math
from dataclasses import dataclass, replace
from typing import Literal

from ..core.messages import Message
from ..core.report import Background, CompressionResult, DiscardReason
from ..engine.compressor import ContextCompressor
from ..engine.prepared import PreparedCompaction
from .background import SessionBackground
from .events import Reporter, Trigger
from .steps import Wait, Waits

__all__ = ("DEFERRED", "Deferrals", "Deferring", "Found", "Step", "noted")

Applied = tuple[PreparedCompaction, CompressionResult]
Found = Applied | CompressionResult | DiscardReason | None
"""A background result applied, tier 1 done alone at the hard mark, why the prepared
result was not applied, or nothing."""


class _Step(enum.Enum):
    DEFERRED = "deferred"


Step = Found | Literal[_Step.DEFERRED]
DEFERRED: Literal[_Step.DEFERRED] = _Step.DEFERRED
"""The request goes out unchanged; its compaction is prepared meanwhile."""


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


class Deferring(abc.ABC):
    """The background part of the manager; the attributes are the manager's own."""

    _compressor: ContextCompressor | None
    events: Reporter
    background: SessionBackground
    compactions: int
    deferrals: Deferrals
    estimate_margin: float

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

    def _soft_mark(self, messages: list[Message], tokens: int) -> None:
        """Start preparing a compaction once past the soft mark (under the trigger, or
        right after a compaction that left the request past it)."""
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
            return DEFERRED
        job = self.background.job
        found = self._take(messages, tokens, trigger)
        if isinstance(found, tuple) or found is DiscardReason.FAILED:
            return found  # applied, or the foreground runs (a failure again arms the cooldown)
        late = job is not None and job.tokens is not None and job.tokens >= self.threshold
        if found is DiscardReason.NOT_COMPRESSED and late:
            return found  # the foreground's own no-op arms the backoff
        self._defer(messages, tokens, trigger, self._restart(messages, tokens, found))
        return DEFERRED

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
        applied; else, while another process holds the session's lease, what it stores
        once it lets go; else tier 1 alone when it brings the request under the hard mark
        (the summary is prepared in the background after it; a running job on the history
        before is superseded); else the running job waited for; else nothing."""
        compressor = self._compressor
        if compressor is None:
            return None
        running = self.background.running(len(messages))
        found = None if running else self._take(messages, tokens, trigger, must_fit)
        if isinstance(found, tuple):
            return found
        if found is DiscardReason.CLAIMED:
            return (yield from self._after_claim(messages, tokens, trigger, must_fit))
        if compressor.background_enabled():
            limit = int(self.hard_mark / self.estimate_margin)
            quick = compressor.stopgap(messages, limit, force=must_fit)
            if quick is not None:
                return noted(quick, found)
        if running:
            future = self.background.pending(len(messages))
            if future is not None:
                yield Wait(future)
            found = self._take(messages, tokens, trigger, must_fit)
        return found

    def _after_claim(
        self, messages: list[Message], tokens: int, trigger: Trigger, must_fit: bool
    ) -> Waits[Found]:
        """Another process holds the session's lease: it is preparing this compaction
        (what is left of it is less than a foreground compaction would take). Wait for it
        to let go, then take what it published; tier 1 alone here would compact the
        history under it and waste its summary. ``claimed`` when it still holds on."""
        future = self.background.claim_released()
        if future is None:
            return DiscardReason.CLAIMED
        yield Wait(future)
        return self._take(messages, tokens, trigger, must_fit)

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


def noted(result: CompressionResult, found: Found) -> CompressionResult:
    """``result`` with the reason the prepared result was discarded, if it was."""
    if not isinstance(found, DiscardReason):
        return result
    note = Background(False, found)
    return replace(result, report=replace(result.report, background=note))
