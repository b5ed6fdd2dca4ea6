"""Helpers for the background-compaction tests: a summarizer that waits at a gate (a slow
model whose pace the test sets), histories that grow round by round, a fake model."""

from __future__ import annotations

import threading
from typing import Any

from factories import assistant, long_session, shell_round, user
from windowkeeper.core.messages import Message
from windowkeeper.core.report import FailureKind
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
