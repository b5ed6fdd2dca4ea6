"""Helpers for the background-compaction tests: a summarizer that waits at a gate (a slow
model whose pace the test sets), histories that grow round by round, a fake model, an
agent around a manager."""

from __future__ import annotations

import threading
from typing import Any

from factories import assistant, long_session, shell_round, user
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.messages import Message
from windowkeeper.core.report import FailureKind
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.background import SessionBackground, Workers
from windowkeeper.loop.events import Event, EventKind
from windowkeeper.loop.hooks import CompressionHook
from windowkeeper.loop.manager import ContextManager
from windowkeeper.summary.protocol import SummaryFailure, SummaryOutcome, SummaryRequest

WINDOW = 16_000  # trigger 13,600, soft mark 11,560; a round is ~1,080 tokens


class GatedSummarizer:
    """Writes a short handoff once ``gate`` is open; records each call's thread and
    whether the gate opened (``False``: it timed out, the caller never opened it).

    ``gated``: how many of the first calls wait at the gate (the rest answer at once).
    ``failure``: answer every call with this failure instead of a summary."""

    name = "gated"

    def __init__(
        self, *, gated: int = 1_000, open_: bool = True, failure: FailureKind | None = None
    ) -> None:
        self.gate = threading.Event()
        if open_:
            self.gate.set()
        self.gated = gated
        self.failure = failure
        self.threads: list[str] = []
        self.opened: list[bool] = []
        self.started = threading.Event()
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        return len(self.threads)

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        with self._lock:
            number = len(self.threads)
            self.threads.append(threading.current_thread().name)
        self.started.set()
        if number < self.gated:
            self.opened.append(self.gate.wait(timeout=8))
        if self.failure is not None:
            return SummaryOutcome(
                failure=SummaryFailure(self.failure, "scripted"), summarizer=self.name
            )
        return SummaryOutcome(
            body="## Goal\nFix the refund test.\n\n## Next Step\nRun the tests.",
            summarizer=self.name,
        )


def rounds(first: int, count: int, output_chars: int = 4_000) -> list[Message]:
    """``count`` more rounds of an agent at work (tool calls numbered from ``first``)."""
    out: list[Message] = []
    for n in range(first, first + count):
        body = f"line {n}\n" + ("y" * 60 + "\n") * (output_chars // 61)
        out += shell_round(n, f"pytest tests/test_{n}.py", body + "[exit code 0]")
    out += [assistant(f"Rounds to {first + count} done."), user("Go on.")]
    return out


def history(count: int) -> list[Message]:
    """A session of ``count`` rounds ending on a user message (~1,080 tokens a round)."""
    return long_session(count)


def answer(tokens: int) -> dict[str, Any]:
    return {"usage": {"prompt_tokens": tokens, "completion_tokens": 10}}


SUMMARY_ONLY = {"prune_min_chars": 10**6}  # every compaction here writes a handoff
NO_ROOM = {"background_hard_ratio": 0.85}
"""The hard mark at the trigger (13,600 of 16,000): nothing is deferred, every request past
the trigger takes the path of the hard mark (wait for a running job, else foreground)."""


class Agent:
    """A manager around a compressor with ``summarizer``, its events, and a fake model
    that answers with the manager's own estimate as the real usage."""

    def __init__(
        self,
        summarizer: Any,
        *,
        workers: Workers | None = None,
        hooks: list[CompressionHook] | None = None,
        **config: Any,
    ) -> None:
        self.summarizer = summarizer
        settings = CompressionConfig(**{**SUMMARY_ONLY, **config})
        self.engine = ContextCompressor(settings, context_length=WINDOW, summarizer=summarizer)
        self.events: list[Event] = []
        self.manager = ContextManager(
            self.engine, on_event=self.events.append, hooks=hooks,
            background=SessionBackground(workers or Workers(2)),
        )  # fmt: skip
        self.sent: list[list[Message]] = []

    def model(self, request: list[Message]) -> dict[str, Any]:
        self.sent.append(request)
        return answer(self.manager.estimate(request))

    def step(self, working: list[Message]) -> list[Message]:
        return self.manager.run(self.model, working).messages

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind is kind]

    def finished(self) -> list[Event]:
        return self.of(EventKind.COMPACTION_FINISHED)

    def job_done(self) -> None:
        job = self.manager.background.job
        assert job is not None
        job.future.result(timeout=10)


def past_soft_mark(agent: Agent) -> list[Message]:
    """A history past the soft mark, sent once: the job starts, the request is unchanged."""
    working = history(11)
    assert agent.step(working) is working
    assert agent.sent[-1] is working
    assert len(agent.of(EventKind.BACKGROUND_STARTED)) == 1
    assert agent.finished() == []
    return working
