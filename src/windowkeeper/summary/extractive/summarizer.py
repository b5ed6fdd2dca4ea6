"""The extractive summarizer: a deterministic handoff body written without an LLM (design §5).

It is the embedded default and the fallback when an LLM summarizer fails, so it must
never fail itself, never invent a user ask, and always fit its budget. Every section is
filled mechanically from the turns and merged with the previous handoff
(:mod:`windowkeeper.summary.handoff`); when the body is too long, the least valuable
content is condensed first (:mod:`windowkeeper.summary.handoff.fit`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..handoff.extract import extract_state, previous_state
from ..handoff.fit import fitted_text
from ..handoff.model import HandoffState
from ..protocol import SummaryOutcome, SummaryRequest

_WORD = re.compile(r"\w+")


class ExtractiveSummarizer:
    """Deterministic :class:`~windowkeeper.summary.protocol.Summarizer`; it never fails."""

    @property
    def name(self) -> str:
        return "extractive"

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        state = request.state
        if state is None:  # called on its own, not by the compressor
            previous = previous_state(request.previous_summary)
            state = extract_state(request.analysed(), previous, focus=request.focus_topic)
        if request.focus_topic:
            state = focused(state, request.focus_topic)
        body = fitted_text(state, request.budget_tokens, request.spec_on_top)
        return SummaryOutcome(body=body, summarizer=self.name)


def focused(state: HandoffState, topic: str) -> HandoffState:
    """``state`` with the items about ``topic`` moved last in their lists, so trimming to
    the budget (which keeps the newest) keeps them longest."""
    words = [w for w in _WORD.findall(topic.lower()) if len(w) >= 3]
    if not words:
        return state

    def last(items: tuple[str, ...]) -> tuple[str, ...]:
        about = [i for i in items if any(w in i.lower() for w in words)]
        return (*[i for i in items if i not in about], *about)

    return replace(
        state,
        decisions=last(state.decisions),
        values=last(state.values),
        work=replace(state.work, done=last(state.work.done)),
    )
