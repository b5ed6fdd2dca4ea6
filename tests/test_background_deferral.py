"""Past the trigger with no prepared result ready: the request goes out unchanged under
the hard mark while the compaction is prepared, and waits (or compacts in the
foreground) only at the hard mark.

The summarizer waits at a gate the test opens, so "still running" and "ready" are states
the test sets, not timings it hopes for. At 16K the trigger is 13,600 tokens, the soft
mark 11,560, the hard mark (by default) the window, 16,000; a round is ~1,080 tokens."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from bgkit import NO_ROOM, Agent, GatedSummarizer, answer, history, past_soft_mark, rounds
from factories import assistant, user
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.core.report import DiscardReason, FailureKind
from windowkeeper.engine.prepared import PreparedCompaction
from windowkeeper.loop.background import Sharing
from windowkeeper.loop.events import EventKind
from windowkeeper.loop.steps import Answered, Wait, wire


def first_step(agent: Agent, working: list[Message]) -> Any:
    """The turn machine's first step for ``working`` (a request or a wait), and the
    machine to go on with."""
    steps = agent.manager.turn(working)
    return next(steps), steps


def reasons(agent: Agent, kind: EventKind) -> list[str | None]:
    return [e.reason for e in agent.of(kind)]


def test_past_the_trigger_the_request_goes_out_while_the_job_runs_and_the_next_applies_it() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer)
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)
    grown = [*working, *rounds(100, 2)]
    tokens = agent.manager.estimate(grown)
    assert agent.engine.threshold_tokens <= tokens < agent.manager.window
    request, steps = first_step(agent, grown)
    assert request is grown  # no wait: the request itself, unchanged
    agent.sent.append(request)
    try:
        steps.send(Answered(answer(tokens)))
    except StopIteration as done:
        assert done.value is grown
    assert agent.finished() == [] and summarizer.calls == 1
    # The preflight deferred it; its real usage (also past the trigger) did not count twice.
    assert reasons(agent, EventKind.COMPACTION_DEFERRED) == ["preparing", "preparing"]
    assert [e.count for e in agent.of(EventKind.COMPACTION_DEFERRED)] == [1, 1]
    summarizer.gate.set()
    agent.job_done()
    latest = [*grown, *rounds(200, 1)]
    out = agent.step(latest)
    [finished] = agent.finished()
    receipt = finished.receipt
    assert receipt is not None and receipt.background
    assert receipt.deferred_requests == 1 and receipt.deferred_peak_tokens == tokens
    assert "deferred=1" in receipt.line()
    assert len(out) < len(latest) and summarizer.calls == 1
    assert agent.sent[-1] == wire(out)  # the compacted list went out, not the grown one
    assert agent.manager.deferrals.requests == 0  # counted from the compaction on


def test_a_request_that_jumps_past_the_trigger_starts_a_job_and_goes_out() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer)
    working = history(9)  # under the soft mark: no job
    assert agent.step(working) is working
    assert agent.of(EventKind.BACKGROUND_STARTED) == []
    jumped = [*working, *rounds(100, 4)]  # under the soft mark to past the trigger at once
    assert agent.step(jumped) is jumped
    assert len(agent.of(EventKind.BACKGROUND_STARTED)) == 1
    assert reasons(agent, EventKind.COMPACTION_DEFERRED)[0] == "started"
    agent.job_done()
    out = agent.step([*jumped, assistant("Noted."), user("Go on.")])
    [finished] = agent.finished()
    assert finished.receipt is not None and finished.receipt.background
    assert summarizer.threads == ["windowkeeper-bg"] and len(out) < len(jumped)


def test_at_the_hard_mark_the_request_waits_for_the_running_job() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer, background_hard_ratio=0.9)  # the hard mark at 14,400
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)
    grown = [*working, *rounds(100, 2)]  # ~14,100: under the hard mark
    assert agent.manager.estimate(grown) < agent.manager.hard_mark == 14_400
    assert agent.step(grown) is grown
    further = [*grown, *rounds(200, 1)]  # ~15,200: at or over it
    step, steps = first_step(agent, further)
    assert isinstance(step, Wait) and not step.future.done()
    summarizer.gate.set()
    step.future.result(timeout=5)
    request = steps.send(None)
    assert isinstance(request, list) and len(request) < len(further)
    assert summarizer.calls == 1


def test_an_estimate_the_provider_counts_higher_is_deferred_with_that_margin() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer)
    agent.model = lambda request: (  # type: ignore[method-assign]
        agent.sent.append(request) or answer(int(agent.manager.estimate(request) * 1.2))
    )
    working = history(11)
    assert agent.step(working) is working  # real usage 14,300: past the trigger
    assert summarizer.started.wait(5)
    assert agent.manager.estimate_margin > 1.19
    grown = [*working, *rounds(100, 2)]  # ~14,100 estimated, ~16,900 as the provider counts
    assert agent.manager.estimate(grown) < agent.manager.window
    step, steps = first_step(agent, grown)
    assert isinstance(step, Wait)  # not sent past the window on a low estimate
    summarizer.gate.set()
    step.future.result(timeout=5)
    assert len(steps.send(None)) < len(grown)


def test_a_discarded_result_starts_a_new_job_and_the_request_goes_out() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer)
    working = past_soft_mark(agent)
    agent.job_done()
    agent.engine.on_session_reset()  # what was prepared is for another session now
    grown = [*working, *rounds(100, 2)]
    assert agent.step(grown) is grown
    assert reasons(agent, EventKind.BACKGROUND_DISCARDED) == ["session"]
    assert reasons(agent, EventKind.COMPACTION_DEFERRED)[0] == "started"
    assert len(agent.of(EventKind.BACKGROUND_STARTED)) == 2
    agent.job_done()
    agent.step([*grown, *rounds(200, 1)])
    [finished] = agent.finished()
    assert finished.receipt is not None and finished.receipt.background
    assert summarizer.calls == 2 and set(summarizer.threads) == {"windowkeeper-bg"}


def test_a_failed_job_is_not_restarted_the_foreground_runs_and_arms_the_cooldown() -> None:
    summarizer = GatedSummarizer(failure=FailureKind.AUTH)  # a failure that aborts
    agent = Agent(summarizer)
    working = past_soft_mark(agent)
    agent.job_done()
    grown = [*working, *rounds(100, 2)]
    assert agent.step(grown) is grown  # aborted: nothing dropped
    assert reasons(agent, EventKind.BACKGROUND_DISCARDED) == ["failed"]
    assert agent.of(EventKind.COMPACTION_DEFERRED) == []
    assert len(agent.of(EventKind.COMPACTION_ABORTED)) == 1
    assert summarizer.threads == ["windowkeeper-bg", "MainThread"]
    assert agent.engine.guard.cooldown_until > 0  # the live guard, as a foreground failure
    agent.step([*grown, *rounds(200, 1)])
    assert summarizer.calls == 2  # cooling down: no job, no summary


def test_nothing_to_compress_past_the_trigger_is_not_retried_in_the_background() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer)
    # A system prompt, kept whole, past the trigger: no compaction can gain anything.
    rules = "You are a careful agent. Rules:\n" + "rule 0123456789 abcdef ghijk\n" * 1_950
    working: list[Message] = [{"role": "system", "content": rules}, user("Read the rules.")]
    assert agent.engine.threshold_tokens <= agent.manager.estimate(working) < 16_000
    assert agent.step(working) is working  # one message past the trigger: a job starts
    assert reasons(agent, EventKind.COMPACTION_DEFERRED) == ["started", "preparing"]
    agent.job_done()
    more = [*working, assistant("Reading it."), user("Well?")]
    assert agent.step(more) is more
    assert reasons(agent, EventKind.BACKGROUND_DISCARDED) == ["not_compressed"]
    assert "nothing_to_compress" in reasons(agent, EventKind.COMPACTION_SKIPPED)
    agent.step([*more, assistant("Still reading."), user("And?")])
    assert len(agent.of(EventKind.BACKGROUND_STARTED)) == 1  # backed off, not retried
    assert summarizer.calls == 0


def test_another_process_preparing_it_defers_without_a_job_of_our_own() -> None:
    class Elsewhere:
        def preparer(self) -> Any:
            raise AssertionError("no job may start here")

        def take(self) -> Any:
            from windowkeeper.core.report import DiscardReason

            return DiscardReason.CLAIMED

        def release(self) -> None:
            raise AssertionError("nothing was taken")

        def settled(self, prepared: Any, reason: Any) -> None:
            raise AssertionError("nothing was prepared here")

    agent = Agent(GatedSummarizer(), background=True)
    sharing: Sharing = Elsewhere()
    agent.manager.background.sharing = sharing
    working = [*history(9), *rounds(100, 4)]  # past the trigger, no job of ours
    assert agent.step(working) is working
    assert reasons(agent, EventKind.COMPACTION_DEFERRED)[0] == "claimed"
    assert agent.of(EventKind.BACKGROUND_STARTED) == []


class HeldElsewhere:
    """Another process holding the session's lease while it prepares ``prepared``: it
    lets go when ``gone`` is set (``never``: the wait's bound passes first)."""

    def __init__(self, prepared: PreparedCompaction, *, never: bool = False) -> None:
        self.prepared = prepared
        self.never = never
        self.gone = threading.Event()
        self.waits = 0
        self.settled_with: list[DiscardReason | None] = []
        self.holding = False

    def preparer(self) -> Any:
        raise AssertionError("no job may start here")

    def take(self) -> Any:
        if not self.gone.is_set():
            return DiscardReason.CLAIMED
        if self.never:
            self.holding = True
            return None  # the lease is ours now, for a foreground compaction
        return self.prepared

    def released(self, limit: float) -> bool:
        self.waits += 1
        if self.never:
            return False  # still held when the bound passed
        return self.gone.wait(limit)

    def release(self) -> None:
        self.holding = False

    def settled(self, prepared: Any, reason: DiscardReason | None) -> None:
        self.settled_with.append(reason)


def test_at_the_hard_mark_a_compaction_another_process_prepares_is_waited_for() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer, **NO_ROOM)
    snapshot = history(11)
    elsewhere = agent.engine.detached().prepare(snapshot)  # the other process's job (1 call)
    assert isinstance(elsewhere, PreparedCompaction)
    sharing = HeldElsewhere(elsewhere)
    agent.manager.background.sharing = sharing
    grown = [*snapshot, *rounds(100, 2)]
    step, steps = first_step(agent, grown)
    assert isinstance(step, Wait)  # held: neither its own summary nor tier 1
    assert not step.future.done() and sharing.waits == 1
    sharing.gone.set()
    assert step.future.result(timeout=10) is True
    request = steps.send(None)
    assert isinstance(request, list) and len(request) < len(grown)
    assert violations(request) == []
    [finished] = agent.finished()
    assert finished.receipt is not None and finished.receipt.background
    assert summarizer.calls == 1 and sharing.settled_with == [None]  # the other's only


def test_a_lease_held_past_the_bound_leaves_a_request_that_must_fit_to_the_foreground() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer, **NO_ROOM)
    snapshot = history(11)
    elsewhere = agent.engine.detached().prepare(snapshot)
    assert isinstance(elsewhere, PreparedCompaction)
    sharing = HeldElsewhere(elsewhere, never=True)
    agent.manager.background.sharing = sharing
    over = [*snapshot, *rounds(100, 4)]
    assert agent.manager.estimate(over) >= agent.manager.window
    step, steps = first_step(agent, over)
    assert isinstance(step, Wait) and step.future.result(timeout=10) is False
    sharing.gone.set()  # the next take finds the lease free and takes it
    request = steps.send(None)
    assert isinstance(request, list) and agent.manager.estimate(request) < agent.manager.window
    assert summarizer.calls == 2  # the other's, then here in the foreground, under the lease
    assert not sharing.holding and sharing.settled_with == []


def test_with_background_off_the_trigger_compacts_in_the_foreground_as_before() -> None:
    summarizer = GatedSummarizer()
    agent = Agent(summarizer, background=False)
    working = history(11)
    assert agent.step(working) is working
    grown = [*working, *rounds(100, 2)]
    out = agent.step(grown)
    assert len(out) < len(grown) and agent.sent[-1] == wire(out)
    [finished] = agent.finished()
    assert finished.receipt is not None and not finished.receipt.background
    assert finished.receipt.deferred_requests == 0
    assert summarizer.threads == ["MainThread"]
    kinds = {EventKind.COMPACTION_DEFERRED, EventKind.BACKGROUND_STARTED}
    assert not [e for e in agent.events if e.kind in kinds]


def test_at_the_window_tier_1_alone_goes_out_now_and_the_summary_is_prepared_after() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer, prune_min_chars=200, prune_only_ratio=0.05)  # jobs summarize
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)
    grown = [*working, *rounds(100, 2)]
    assert agent.step(grown) is grown  # deferred while the job runs
    over = [*grown, *rounds(200, 2)]
    assert agent.manager.estimate(over) >= agent.manager.window
    request, _ = first_step(agent, over)
    assert isinstance(request, list)  # no wait for the running job
    assert agent.manager.estimate(request) < agent.manager.hard_mark
    [finished] = agent.finished()
    assert finished.tier is not None and finished.tier.value == "prune"
    assert finished.receipt is not None and not finished.receipt.background
    assert reasons(agent, EventKind.BACKGROUND_DISCARDED) == ["superseded"]
    assert violations(request) == [] and summarizer.calls == 1
    summarizer.gate.set()


def test_a_compaction_that_leaves_the_request_past_the_soft_mark_starts_a_job_at_once() -> None:
    agent = Agent(GatedSummarizer(), prune_min_chars=200, prune_only_ratio=0.05)
    # The system prompt, kept whole, holds the request past the soft mark after tier 1.
    spec = "You are a careful agent. The spec:\n" + "spec line 0123456789 abcdef\n" * 1_650
    big = [
        {"role": "system", "content": spec},
        user("Read the spec."), assistant("Reading it."), user("Now run the tests."),
        *rounds(100, 6),
    ]  # fmt: skip
    assert agent.manager.estimate(big) >= agent.manager.window  # the first request
    out = agent.step(big)
    after = agent.manager.estimate(out)
    assert agent.engine.soft_mark <= after < agent.engine.threshold_tokens
    kinds = [e.kind for e in agent.events]
    assert kinds.index(EventKind.COMPACTION_STARTED) < kinds.index(EventKind.BACKGROUND_STARTED)
    job = agent.manager.background.job
    assert job is not None and job.length == len(out)  # prepared from what went out


def test_offline_replays_run_jobs_inline_so_their_reports_do_not_depend_on_timing() -> None:
    from windowkeeper import evaluate, replay
    from windowkeeper.core.config import CompressionConfig

    session = [*history(11), *rounds(100, 2), *rounds(200, 2), *rounds(300, 6)]
    config = CompressionConfig(background=True, prune_min_chars=10**6)
    runs = []
    for _ in range(2):
        summarizer = GatedSummarizer()
        report = evaluate(session, context_length=16_000, config=config, summarizer=summarizer)
        replayed = replay(session, context_length=16_000, config=config, summarizer=summarizer)
        runs.append((
            [replace(c, elapsed_ms=0.0) for c in report.compactions],
            [replace(c, elapsed_ms=0.0) for c in replayed.compactions],
        ))  # fmt: skip
        assert set(summarizer.threads) == {"MainThread"}  # no worker thread involved
    assert runs[0] == runs[1] and runs[0][0]
    assert all(c.background for c in runs[0][1])  # prepared, then applied
