"""What a summarizer is asked for, and the handoff body its answer becomes.

The compressor extracts the handoff state mechanically (:mod:`.handoff.extract`) before
any summarizer runs; the summarizer writes the judgment sections
(:data:`~.protocol.WRITTEN_TITLES`) and :func:`compose` fills every other section from
the state, within the budget. The extractive summarizer renders the state whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from ..analysis.events import Analysis
from ..analysis.kinds import live_text
from ..analysis.record import Analyzer, MessageFacts
from ..analysis.specexcerpt import spec_chars
from ..compaction.plan import CompactionPlan, restatement
from ..core.messages import Message
from ..core.tokens import estimate_tokens
from .handoff.extract import Placement, extract_state, previous_state
from .handoff.fit import fitted_text
from .handoff.model import HandoffState
from .handoff.parse import split_sections
from .handoff.text import NOTES_BESIDE
from .handoff.users import written_text
from .protocol import WRITTEN_TITLES, SummaryRequest, written_budget
from .redact import MaskedTurns, Masks, masked_analysis
from .trim import trim_sections, trim_text

SNAPSHOT_CHARS = 1_400
LABEL_TOKENS = estimate_tokens(NOTES_BESIDE) + 1


def summary_request(
    messages: Sequence[Message],
    turns: list[Message],
    plan: CompactionPlan,
    focus_topic: str | None,
    today: date,
    analysis: Analysis | None = None,
    facts: Sequence[MessageFacts] | None = None,
) -> SummaryRequest:
    """What the summarizer gets: the turns, the previous handoff, the extracted state.

    ``analysis``: of ``turns``; ``facts``: the records of ``messages`` (both made here when
    not given).
    """
    # No summarizer reads a secret, and nothing is extracted from one (design §5).
    original = analysis or Analysis(turns)
    masks: Masks = {}  # the turns' and the tail's texts masked once each
    analysis = masked_analysis(original, masks)
    facts = facts if facts is not None else Analyzer().analyze(messages)
    previous = previous_state(plan.previous_summary)
    # The handoff's state covers the tail too (what it lifts from there is masked alike).
    tail = masked_analysis(Analysis(messages[plan.tail_start :], facts[plan.tail_start :]), masks)
    head = Analysis(messages[: plan.head_end], facts[: plan.head_end])
    where = placement(facts, plan, messages)
    chars = spec_chars(plan.summary_budget_tokens)
    state = extract_state(analysis, previous, where, focus_topic, tail, head, spec_chars=chars)
    return SummaryRequest(
        turns=MaskedTurns(original.facts),
        previous_summary=plan.previous_summary or None,
        focus_topic=focus_topic,
        budget_tokens=plan.summary_budget_tokens,
        today=today,
        task_snapshot=_snapshot(messages, plan, state),
        has_user_turn=any(f.role == "user" and written_text(f) for f in facts),
        analysis=analysis,
        state=state,
        notes_on_top=notes_on_top(plan),
        spec_on_top=plan.spec_room,
        kept_after=MaskedTurns(facts[plan.tail_start :]),
    )


def notes_on_top(plan: CompactionPlan) -> int:
    """What a summary model's notes may add to the handoff budget: their share of it, as
    far as the window allows. The notes add judgment (reasons, what was tried and why)
    to the extracted state; taking their room out of the state's budget would trade the
    state's facts (fixes, files, the spec) for them (the reader benchmark's LLM variant)."""
    # The share, and the lines that label the notes where they sit beside the state.
    share = written_budget(plan.summary_budget_tokens) + len(WRITTEN_TITLES) * LABEL_TOKENS
    return share if plan.notes_room is None else min(share, plan.notes_room)


def placement(
    facts: Sequence[MessageFacts], plan: CompactionPlan, messages: Sequence[Message]
) -> Placement:
    """Where the user's own words stay verbatim after this compaction."""
    written = [i for i, f in enumerate(facts) if f.role == "user" and written_text(f)]
    restated = restatement(messages, plan)
    return Placement(
        task_in_head=bool(written) and written[0] < plan.head_end,
        user_in_tail=any(i >= plan.tail_start for i in written),
        restated=restated is not None,
        restated_text=live_text(restated) if restated is not None else "",
    )


def _snapshot(messages: Sequence[Message], plan: CompactionPlan, state: HandoffState) -> str | None:
    """The newest request for a summarizer's prompt (it is never asked to write it)."""
    restated = restatement(messages, plan)
    if restated is not None:
        text = live_text(restated)
        return text if len(text) <= SNAPSHOT_CHARS else text[:SNAPSHOT_CHARS] + " …"
    quoted = state.request or (state.users[-1] if state.users else state.task)
    return quoted.text if quoted is not None else None


def compose(body: str, request: SummaryRequest, *, complete: bool) -> str:
    """The handoff body: ``body`` itself when it is a complete render of the request's
    state (the extractive summarizer's), else the state with ``body``'s judgment sections
    beside the extracted ones, within the budget plus the notes' room on top."""
    if complete:
        return body
    assert request.state is not None
    state, budget = request.state, request.budget_tokens
    share = written_budget(budget)
    written = written_sections(body, share)
    merged = replace(state, written=written)
    if not written and body.strip():  # free text without our headings: kept as notes
        merged = replace(state, notes=trim_text(body.strip(), share))
    room = budget + min(request.notes_on_top, _cost(merged))
    return fitted_text(merged, room, request.spec_on_top)


def _cost(merged: HandoffState) -> int:
    """Tokens the notes add to a render: each written section with the line that labels
    it beside the extracted state, or the free-text notes."""
    texts = (estimate_tokens(text) + 1 + LABEL_TOKENS for _, text in merged.written)
    return sum(texts) + (estimate_tokens(merged.notes) if merged.notes else 0)


def written_sections(body: str, budget: int) -> tuple[tuple[str, str], ...]:
    """A summarizer's judgment sections within ``budget`` tokens in all: whole lines are
    left out, the oldest first, never cut mid-text (:mod:`.trim`); a summary model's
    length is never trusted."""
    sections = split_sections(body, titles=WRITTEN_TITLES)
    found = [(title, "\n".join(sections.get(title, [])).strip()) for title in WRITTEN_TITLES]
    found = [(t, text) for t, text in found if text and text.lower() not in ("none", "none.")]
    return trim_sections(found, budget)
