"""Replay a transcript as the live agent sent it, with the context manager's triggers active.

Each assistant message is one request carrying everything before it (plus the tool
schemas). Before each request the manager's preflight runs; after it, the estimate of
what was sent is fed back as the "real" ``prompt_tokens``, so the post-response trigger
fires as it would live. The replayed context is the manager's working list, to which each
next original message is appended. Alongside, the same replay without compression gives
the baseline of cumulative prompt tokens.

Pure apart from the compressor it drives and an optional progress callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.config import CompressionConfig
from ..core.invariants import violations
from ..core.messages import Message, ToolSchema
from ..core.tokens import message_tokens, tool_schema_tokens
from ..engine.compressor import ContextCompressor
from ..summary.protocol import Summarizer
from .background import InlineWorkers, SessionBackground
from .events import Event, EventKind
from .manager import ContextManager


@dataclass(frozen=True)
class ReplayCompaction:
    """One compaction during the replay (``turn``: index of the request it preceded or followed)."""

    turn: int
    trigger: str
    before_tokens: int
    after_tokens: int
    elapsed_ms: float
    tier: str = ""
    """``prune`` (tool output pruned, no summary) or ``summary``."""
    background: bool = False
    """Prepared in the background and applied at the trigger."""

    @property
    def savings(self) -> float:
        return 1 - self.after_tokens / self.before_tokens if self.before_tokens else 0.0


@dataclass(frozen=True)
class ReplayRequest:
    """One replayed request: its estimated prompt tokens and whether it was valid."""

    turn: int
    tokens: int
    baseline_tokens: int
    messages: int
    over_window: bool
    violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplayReport:
    context_length: int
    window: int
    threshold_tokens: int
    requests: tuple[ReplayRequest, ...]
    compactions: tuple[ReplayCompaction, ...]
    warnings: tuple[str, ...] = ()

    @property
    def peak_tokens(self) -> int:
        return max((r.tokens for r in self.requests), default=0)

    @property
    def overflows(self) -> tuple[ReplayRequest, ...]:
        return tuple(r for r in self.requests if r.over_window)

    @property
    def invalid_requests(self) -> tuple[ReplayRequest, ...]:
        return tuple(r for r in self.requests if r.violations)

    @property
    def cumulative_tokens(self) -> int:
        return sum(r.tokens for r in self.requests)

    @property
    def cumulative_baseline_tokens(self) -> int:
        return sum(r.baseline_tokens for r in self.requests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context_length": self.context_length,
            "window": self.window,
            "threshold_tokens": self.threshold_tokens,
            "requests": len(self.requests),
            "peak_tokens": self.peak_tokens,
            "overflows": [r.turn for r in self.overflows],
            "invalid_requests": [r.turn for r in self.invalid_requests],
            "cumulative_prompt_tokens": self.cumulative_tokens,
            "cumulative_prompt_tokens_without_compression": self.cumulative_baseline_tokens,
            "compactions": [
                {**c.__dict__, "savings": round(c.savings, 4)} for c in self.compactions
            ],
            "tokens_per_request": [r.tokens for r in self.requests],
            "warnings": list(self.warnings),
        }


@dataclass
class _Recorder:
    """Collects the manager's events for the report (turn set by the replay loop)."""

    turn: int = 0
    compactions: list[ReplayCompaction] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        if event.kind is EventKind.COMPACTION_FINISHED:
            self.compactions.append(
                ReplayCompaction(
                    self.turn,
                    event.trigger.value if event.trigger else "",
                    event.tokens_before or 0,
                    event.tokens_after or 0,
                    event.duration_ms or 0.0,
                    event.tier.value if event.tier else "",
                    bool(event.receipt and event.receipt.background),
                )
            )
        elif event.kind is EventKind.WARNING:
            self.warnings.append(event.message)


def replay(
    messages: Sequence[Message],
    *,
    context_length: int,
    tools: Sequence[ToolSchema] | None = None,
    config: CompressionConfig | None = None,
    max_tokens: int | None = None,
    model: str | None = None,
    check_invariants: bool = True,
    progress: Callable[[int, int], None] | None = None,
    summarizer: Summarizer | None = None,
    summary_context_length: int | None = None,
    engine: ContextCompressor | None = None,
) -> ReplayReport:
    """Replay ``messages`` (see the module docstring); ``progress(done, total)`` per message.

    ``summarizer`` writes the handoffs (the extractive one when ``None``); ``engine``: a
    ready compressor to replay with instead (the other engine arguments are then unused).
    """
    engine = engine or ContextCompressor(
        config, context_length=context_length, max_tokens=max_tokens, model=model,
        tools=list(tools) if tools else None, summarizer=summarizer,
        summary_context_length=summary_context_length,
    )  # fmt: skip
    recorder = _Recorder()
    # Jobs inline: no agent turn hides them, and the report must not depend on timing.
    manager = ContextManager(engine, tools=tools, on_event=recorder,
                             background=SessionBackground(InlineWorkers()))  # fmt: skip
    schema = tool_schema_tokens(tools)
    working: list[Message] = []
    baseline = schema
    requests: list[ReplayRequest] = []
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and working:
            recorder.turn = len(requests)
            sent, request = _request(manager, working, len(requests), baseline, check_invariants)
            requests.append(request)
            working = manager.after_response({"prompt_tokens": request.tokens}, sent)
        working.append(message)
        baseline += message_tokens(message, image_tokens=engine.config.image_tokens)
        if progress is not None:
            progress(index + 1, len(messages))
    return ReplayReport(
        context_length, manager.window, engine.threshold_tokens, tuple(requests),
        tuple(recorder.compactions), tuple(recorder.warnings),
    )  # fmt: skip


def _request(
    manager: ContextManager, working: list[Message], index: int, baseline: int, check: bool
) -> tuple[list[Message], ReplayRequest]:
    """What the agent sends at an assistant turn (the manager's preflight of the history
    so far) and its row of the report."""
    sent = manager.preflight(working)
    tokens = manager.estimate(sent)
    problems = tuple(violations(sent)) if check else ()
    return sent, ReplayRequest(
        index, tokens, baseline, len(sent), tokens > manager.window, problems
    )
