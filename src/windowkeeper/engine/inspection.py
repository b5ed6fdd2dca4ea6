"""Where the tokens of a conversation go, and what a compaction would do with them.

Pure computation behind ``windowkeeper inspect`` (rendering lives in :mod:`windowkeeper.cli.app`).
Every figure is the rough estimate of :mod:`windowkeeper.core.tokens`, split so that the
categories add up exactly to :func:`~windowkeeper.core.tokens.estimate_request_tokens`:

- a message's own tokens (content, per-message overhead, ``tool_call_id``, ``name``,
  reasoning) go to its role's category (system/developer, user, assistant, or the tool
  result's tool name);
- image parts go to ``images`` at their flat price, whatever the role;
- tool-call envelopes (name, id, JSON arguments) go to ``tool_calls``;
- tool schemas go to ``tool_schemas``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.messages import Message, ToolSchema, call_id, call_name, image_count, tool_calls
from ..core.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    TextCounter,
    message_tokens,
    tool_schema_tokens,
)

UNKNOWN_TOOL = "(unknown)"


@dataclass(frozen=True)
class ToolUsage:
    """Tokens and number of results of one tool (by the name of the call that produced them)."""

    name: str
    count: int
    tokens: int


@dataclass(frozen=True)
class TokenBreakdown:
    """Estimated prompt tokens of a request, by category; ``total`` is their exact sum."""

    system: int
    tool_schemas: int
    user_text: int
    assistant_text: int
    tool_calls: int
    tool_results: int
    images: int
    image_count: int
    image_tokens_each: int
    tool_call_count: int
    by_tool: tuple[ToolUsage, ...]
    """Tool results per tool name, most tokens first (ties by name)."""

    @property
    def total(self) -> int:
        return (
            self.system
            + self.tool_schemas
            + self.user_text
            + self.assistant_text
            + self.tool_calls
            + self.tool_results
            + self.images
        )

    def categories(self) -> dict[str, int]:
        """The seven categories, in display order."""
        return {
            "system": self.system,
            "tool_schemas": self.tool_schemas,
            "user_text": self.user_text,
            "assistant_text": self.assistant_text,
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "images": self.images,
        }

    def top_tools(self, limit: int) -> tuple[tuple[ToolUsage, ...], ToolUsage | None]:
        """The ``limit`` heaviest tools and one aggregate of the rest (``None`` if no rest)."""
        head, rest = self.by_tool[: max(0, limit)], self.by_tool[max(0, limit) :]
        if not rest:
            return head, None
        other = ToolUsage(
            f"other ({len(rest)} tools)",
            sum(t.count for t in rest),
            sum(t.tokens for t in rest),
        )
        return head, other


def _envelope_tokens(call: Mapping[str, Any], count: TextCounter | None) -> int:
    # Measured through message_tokens itself so the split can never drift from the
    # estimate it explains, whatever tokens.py charges for an envelope.
    return message_tokens({"tool_calls": [call]}, count=count) - MESSAGE_OVERHEAD_TOKENS


def breakdown(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSchema] | None = None,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> TokenBreakdown:
    """Split the estimated request tokens of ``messages`` + ``tools`` into categories
    (``count``: the text counter, the character estimate when ``None``)."""
    sums = {"system": 0, "user": 0, "assistant": 0, "calls": 0, "images": 0}
    images = calls_seen = 0
    names: dict[str, str] = {}
    per_tool: dict[str, list[int]] = {}
    for message in messages:
        total = message_tokens(message, image_tokens=image_tokens, count=count)
        pictures = image_count(message)
        images += pictures
        sums["images"] += pictures * image_tokens
        envelope = 0
        for call in tool_calls(message):
            names[call_id(call)] = call_name(call)
            envelope += _envelope_tokens(call, count)
            calls_seen += 1
        sums["calls"] += envelope
        own = total - pictures * image_tokens - envelope
        role = message.get("role")
        if role == "tool":
            name = names.get(str(message.get("tool_call_id")), UNKNOWN_TOOL)
            entry = per_tool.setdefault(name, [0, 0])
            entry[0] += 1
            entry[1] += own
        elif role in ("system", "developer"):
            sums["system"] += own
        elif role == "user":
            sums["user"] += own
        else:
            sums["assistant"] += own
    by_tool = _heaviest_first(per_tool)
    return TokenBreakdown(
        system=sums["system"],
        tool_schemas=tool_schema_tokens(tools),
        user_text=sums["user"],
        assistant_text=sums["assistant"],
        tool_calls=sums["calls"],
        tool_results=sum(usage.tokens for usage in by_tool),
        images=sums["images"],
        image_count=images,
        image_tokens_each=image_tokens,
        tool_call_count=calls_seen,
        by_tool=by_tool,
    )


def _heaviest_first(per_tool: Mapping[str, list[int]]) -> tuple[ToolUsage, ...]:
    usages = (ToolUsage(name, count, tokens) for name, (count, tokens) in per_tool.items())
    return tuple(sorted(usages, key=lambda usage: (-usage.tokens, usage.name)))


class PlanLike(Protocol):
    """The fields of ``compressor.CompactionPlan`` this module reads."""

    @property
    def head_end(self) -> int: ...
    @property
    def tail_start(self) -> int: ...
    @property
    def prune_indices(self) -> tuple[int, ...]: ...
    @property
    def restated_user(self) -> int | None: ...
    @property
    def compressible(self) -> bool: ...
    @property
    def summary_budget_tokens(self) -> int: ...


@dataclass(frozen=True)
class Segment:
    """A contiguous run of messages ``[start, end)`` and its estimated tokens."""

    start: int
    end: int
    tokens: int

    @property
    def messages(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class PlanSummary:
    """What a compaction would do: protected head, summarized middle, verbatim tail."""

    compressible: bool
    head: Segment
    middle: Segment
    tail: Segment
    pruned_outputs: int
    pruned_tokens: int
    restated_index: int | None
    summary_budget_tokens: int

    @property
    def restates_request(self) -> bool:
        return self.restated_index is not None


def summarize_plan(
    messages: Sequence[Message],
    plan: PlanLike,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> PlanSummary:
    """Turn a compaction plan into segment sizes.

    Indices are clamped so the three segments always partition the messages, even for a
    plan that reports nothing to compress.
    """
    size = len(messages)
    head_end = min(max(plan.head_end, 0), size)
    tail_start = min(max(plan.tail_start, head_end), size)
    sizes = [message_tokens(m, image_tokens=image_tokens, count=count) for m in messages]

    def segment(start: int, end: int) -> Segment:
        return Segment(start, end, sum(sizes[start:end]))

    pruned = [i for i in plan.prune_indices if head_end <= i < tail_start]
    return PlanSummary(
        compressible=plan.compressible,
        head=segment(0, head_end),
        middle=segment(head_end, tail_start),
        tail=segment(tail_start, size),
        pruned_outputs=len(pruned),
        pruned_tokens=sum(sizes[i] for i in pruned),
        restated_index=plan.restated_user,
        summary_budget_tokens=plan.summary_budget_tokens,
    )


@dataclass(frozen=True)
class Inspection:
    """Everything ``windowkeeper inspect`` reports about one request."""

    messages: int
    context_length: int
    max_tokens: int | None
    threshold: float
    threshold_tokens: int
    tokens: TokenBreakdown
    plan: PlanSummary

    @property
    def usage_of_window(self) -> float:
        return self.tokens.total / self.context_length if self.context_length else 0.0

    @property
    def usage_of_threshold(self) -> float:
        return self.tokens.total / self.threshold_tokens if self.threshold_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of ``windowkeeper inspect --json``.

        Keys: ``messages``, ``context_length``, ``max_tokens``, ``threshold``,
        ``threshold_tokens``, ``total_tokens``, ``usage_of_window`` and
        ``usage_of_threshold`` (ratios), ``over_threshold``, ``breakdown`` (``system``,
        ``tool_schemas``, ``user_text``, ``assistant_text``, ``tool_calls``,
        ``tool_results``, ``images``; they sum to ``total_tokens``), ``images``
        (``count``, ``tokens_each``), ``tool_call_count``, ``tool_results_by_tool``
        (``name``, ``count``, ``tokens``; all tools, heaviest first) and ``plan``
        (``compressible``; ``head``/``middle``/``tail`` with ``messages`` and
        ``tokens``, the middle also ``pruned_outputs`` and ``pruned_tokens``;
        ``restated_request``, ``restated_index``, ``summary_budget_tokens``).
        """
        return {
            "messages": self.messages,
            "context_length": self.context_length,
            "max_tokens": self.max_tokens,
            "threshold": self.threshold,
            "threshold_tokens": self.threshold_tokens,
            "total_tokens": self.tokens.total,
            "usage_of_window": round(self.usage_of_window, 4),
            "usage_of_threshold": round(self.usage_of_threshold, 4),
            "over_threshold": self.tokens.total >= self.threshold_tokens,
            "breakdown": self.tokens.categories(),
            "images": {
                "count": self.tokens.image_count,
                "tokens_each": self.tokens.image_tokens_each,
            },
            "tool_call_count": self.tokens.tool_call_count,
            "tool_results_by_tool": [
                {"name": t.name, "count": t.count, "tokens": t.tokens} for t in self.tokens.by_tool
            ],
            "plan": self._plan_dict(),
        }

    def _plan_dict(self) -> dict[str, Any]:
        plan = self.plan
        segments: dict[str, dict[str, Any]] = {
            name: {"messages": seg.messages, "tokens": seg.tokens}
            for name, seg in (("head", plan.head), ("middle", plan.middle), ("tail", plan.tail))
        }
        segments["middle"]["pruned_outputs"] = plan.pruned_outputs
        segments["middle"]["pruned_tokens"] = plan.pruned_tokens
        return {
            "compressible": plan.compressible,
            **segments,
            "restated_request": plan.restates_request,
            "restated_index": plan.restated_index,
            "summary_budget_tokens": plan.summary_budget_tokens,
        }


class Planner(Protocol):
    """The part of ``ContextCompressor`` an inspection needs."""

    @property
    def threshold_tokens(self) -> int: ...

    def plan(self, messages: list[Message]) -> PlanLike: ...


def inspect_conversation(
    messages: list[Message],
    tools: Sequence[ToolSchema] | None,
    planner: Planner,
    *,
    context_length: int,
    max_tokens: int | None,
    threshold: float,
    image_tokens: int = IMAGE_TOKENS,
    count: TextCounter | None = None,
) -> Inspection:
    """Token breakdown plus the compaction plan of ``planner`` for one request."""
    return Inspection(
        messages=len(messages),
        context_length=context_length,
        max_tokens=max_tokens,
        threshold=threshold,
        threshold_tokens=planner.threshold_tokens,
        tokens=breakdown(messages, tools, image_tokens, count),
        plan=summarize_plan(messages, planner.plan(messages), image_tokens, count),
    )
