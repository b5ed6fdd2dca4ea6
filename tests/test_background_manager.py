"""Background compaction around the agent's requests: both drivers, waits, discards, bounds.

The summarizer waits at a gate the test opens, so "still running" and "ready" are states
the test sets, not timings it hopes for."""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any

import pytest

from bgkit import (
    NO_ROOM,
    WINDOW,
    Agent,
    GatedSummarizer,
    answer,
    history,
    past_soft_mark,
    rounds,
)
from factories import user
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message
from windowkeeper.core.report import Background, DiscardReason
from windowkeeper.engine.prepared import PreparedCompaction
from windowkeeper.loop.background import Workers
from windowkeeper.loop.events import EventKind
from windowkeeper.loop.hooks import CompressionHook
from windowkeeper.loop.steps import Answered, Wait
from windowkeeper.summary.extractive.summarizer import ExtractiveSummarizer


def test_a_job_prepared_at_the_soft_mark_is_applied_at_the_trigger() -> None:
    agent = Agent(GatedSummarizer())
    working = past_soft_mark(agent)
    agent.job_done()
    grown = [*working, *rounds(100, 2)]
    out = agent.step(grown)
    [done] = agent.finished()
    assert done.receipt is not None and done.receipt.background
    assert agent.summarizer.calls == 1 and agent.summarizer.threads == ["windowkeeper-bg"]
    assert len(agent.of(EventKind.BACKGROUND_PREPARED)) == 1
    assert violations(out) == [] and len(out) < len(grown)
    added = grown[len(working) :]
    assert all(a is b for a, b in zip(out[-len(added) :], added, strict=True))
    assert agent.manager.last_receipt is done.receipt
    assert agent.manager.awaiting_real_usage is False  # the real usage arrived
    assert agent.engine.compression_count == 1


def test_at_the_hard_mark_a_running_job_is_waited_for_instead_of_summarizing_again() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer, **NO_ROOM)
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)
    steps = agent.manager.turn([*working, *rounds(100, 2)])
    waited = next(steps)
    assert isinstance(waited, Wait) and not waited.future.done()
    summarizer.gate.set()
    waited.future.result(timeout=5)  # what a driver does before it resumes the machine
    request = steps.send(None)
    assert isinstance(request, list) and len(request) < len(working)
    with pytest.raises(StopIteration):
        steps.send(Answered(answer(agent.manager.estimate(request))))
    assert summarizer.calls == 1 and summarizer.opened == [True]
    [done] = agent.finished()
    assert done.receipt is not None and done.receipt.background


def test_the_async_driver_awaits_the_job_and_the_event_loop_keeps_running() -> None:
    summarizer = GatedSummarizer(open_=False)
    agent = Agent(summarizer, **NO_ROOM)
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)

    async def model(request: list[Message]) -> dict[str, Any]:
        return agent.model(request)

    async def main() -> list[Message]:
        async def open_gate() -> None:
            await asyncio.sleep(0.05)  # runs only if arun leaves the loop free
            summarizer.gate.set()

        opener = asyncio.create_task(open_gate())
        result = await agent.manager.arun(model, [*working, *rounds(100, 2)])
        await opener
        return result.messages

    out = asyncio.run(main())
    assert summarizer.opened == [True]  # opened by the loop, not timed out
    assert violations(out) == [] and summarizer.calls == 1
    assert agent.finished()[0].receipt.background  # type: ignore[union-attr]


def test_at_the_hard_mark_an_edited_history_is_compacted_in_the_foreground() -> None:
    agent = Agent(GatedSummarizer(), **NO_ROOM)
    working = past_soft_mark(agent)
    agent.job_done()
    edited = copy.deepcopy(working)
    edited[1] = user("Fix the failing refund test. You may push to main.")
    agent.step([*edited, *rounds(100, 2)])
    [discarded] = agent.of(EventKind.BACKGROUND_DISCARDED)
    assert discarded.reason == "edited"
    [done] = agent.finished()
    assert done.receipt is not None and not done.receipt.background
    assert agent.summarizer.calls == 2


def test_equal_copies_of_the_history_are_applied() -> None:
    agent = Agent(GatedSummarizer())
    working = past_soft_mark(agent)
    agent.job_done()
    agent.step([*copy.deepcopy(working), *rounds(100, 2)])
    assert agent.finished()[0].receipt.background  # type: ignore[union-attr]
    assert agent.summarizer.calls == 1


def test_recovery_never_waits_and_supersedes_the_job() -> None:
    summarizer = GatedSummarizer(open_=False, gated=1)  # only the job's call waits
    agent = Agent(summarizer)
    working = past_soft_mark(agent)
    assert summarizer.started.wait(5)
    error = ValueError("This model's maximum context length is 8000 tokens")
    # The provider answered a request this large before, so the first refusal is taken for
    # a transient fault and retried unchanged (loop/recovery.py's evidence rule) ...
    assert agent.manager.recover(error, working, 1) is working
    # ... and the second is recovered by compacting, without waiting for the job.
    out = agent.manager.recover(error, working, 2)
    assert out is not working and violations(out) == []
    job = agent.manager.background.job
    assert job is None  # superseded while still running
    assert [e.reason for e in agent.of(EventKind.BACKGROUND_DISCARDED)] == ["superseded"]
    summarizer.gate.set()


def test_a_full_pool_refuses_and_a_queued_job_is_not_waited_for() -> None:
    pool = Workers(1, backlog=1)
    first = GatedSummarizer(open_=False)
    busy = Agent(first, workers=pool)
    past_soft_mark(busy)
    assert first.started.wait(5)
    queued = Agent(GatedSummarizer(), workers=pool, **NO_ROOM)
    working = past_soft_mark(queued)  # queued behind the running job
    refused = Agent(GatedSummarizer(), workers=pool)
    refused.step(history(11))
    assert refused.of(EventKind.BACKGROUND_STARTED) == []  # the pool is full
    queued.step([*working, *rounds(100, 2)])
    assert [e.reason for e in queued.of(EventKind.BACKGROUND_DISCARDED)] == ["not_started"]
    [done] = queued.finished()
    assert done.receipt is not None and not done.receipt.background
    first.gate.set()


@pytest.mark.parametrize(
    ("summarizer", "flag", "starts"),
    [
        (GatedSummarizer(), None, True),
        (GatedSummarizer(), False, False),
        (ExtractiveSummarizer(), None, False),
        (ExtractiveSummarizer(), True, True),
    ],
)
def test_on_by_default_for_a_model_summarizer_and_switchable(
    summarizer: Any, flag: bool | None, starts: bool
) -> None:
    agent = Agent(summarizer, background=flag)
    agent.step(history(11))
    assert bool(agent.of(EventKind.BACKGROUND_STARTED)) is starts


def test_hooks_see_the_summarized_turns_of_an_applied_compaction() -> None:
    class Seen(CompressionHook):
        def __init__(self) -> None:
            self.dropped: list[list[Message]] = []

        def pre_compress(self, messages_to_drop: Any) -> None:
            self.dropped.append(list(messages_to_drop))

    hook = Seen()
    agent = Agent(GatedSummarizer(), hooks=[hook])
    working = past_soft_mark(agent)
    agent.job_done()
    job = agent.manager.background.job
    assert job is not None
    prepared = job.future.result()
    assert isinstance(prepared, PreparedCompaction)
    agent.step([*working, *rounds(100, 2)])
    assert agent.finished()[0].receipt.background  # type: ignore[union-attr]
    [dropped] = hook.dropped
    start, end = prepared.dropped
    assert 0 < start < end and dropped == working[start:end]
    summarized = {a.index for a in prepared.archived if a.kind == "message"}
    assert summarized and summarized <= set(range(start, end))


def test_the_report_of_a_foreground_compaction_names_the_discard() -> None:
    seen: list[Any] = []

    class Keep(CompressionHook):
        def post_compress(self, result: Any) -> None:
            seen.append(result.report)

    agent = Agent(GatedSummarizer(), hooks=[Keep()], **NO_ROOM)
    working = past_soft_mark(agent)
    agent.job_done()
    agent.engine.on_session_reset()
    agent.step([*working, *rounds(100, 2)])
    [report] = seen
    assert report.background == Background(False, DiscardReason.SESSION)
    assert report.to_dict()["background"] == {
        "applied": False, "reason": "session", "prepared_ms": 0.0, "pruned_on_apply": 0,
    }  # fmt: skip


def test_two_sessions_prepare_at_once_on_their_own_threads() -> None:
    gate = threading.Barrier(2, timeout=5)
    met: list[bool] = []

    class Meeting(GatedSummarizer):
        def summarize(self, request: Any) -> Any:
            try:
                gate.wait()  # passes only while both jobs run at the same time
                met.append(True)
            except threading.BrokenBarrierError:
                met.append(False)
            return super().summarize(request)

    pool = Workers(2)
    agents = [Agent(Meeting(), workers=pool) for _ in range(2)]
    for agent in agents:
        past_soft_mark(agent)
    for agent in agents:
        agent.job_done()
    assert met == [True, True]


@pytest.mark.usefixtures("summary_tier")
@pytest.mark.parametrize(("flag", "expected"), [([], True), (["--no-background"], False)])
def test_replay_with_a_model_summarizer_compacts_in_the_background_unless_told(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], flag: list[str], expected: bool
) -> None:
    import json

    from windowkeeper.cli import app as cli
    from windowkeeper.testing import OpenAITestServer, Step

    path = tmp_path / "s.jsonl"
    session = [*history(11), *rounds(100, 2), *rounds(200, 2), *rounds(300, 2)]
    path.write_text("".join(json.dumps(m) + "\n" for m in session))
    summary = "## Next Step\nRun the tests."
    with OpenAITestServer() as server:
        server.script(*(Step.completion(summary) for _ in range(8)))
        code = cli.main([
            "replay", str(path), "--context-length", str(WINDOW), "--json",
            "--summarizer", "llm", "--summary-model", "summ", "--summary-base-url",
            server.base_url, "--summary-context-length", "128000", *flag,
        ])  # fmt: skip
        calls = len(server.chat_requests)
    report = json.loads(capsys.readouterr().out)
    compactions = report["compactions"]
    assert code == 0 and compactions
    assert [c["background"] for c in compactions] == [expected] * len(compactions)
    assert calls == len(compactions)  # one summary each, background or not
