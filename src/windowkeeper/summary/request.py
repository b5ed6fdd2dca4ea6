"""What a summarizer is asked for, and the handoff body it becomes (sections + ledger)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ..analysis.events import Analysis
from ..analysis.kinds import live_text
from ..analysis.record import Analyzer, MessageFacts
from ..compaction.boundaries import newest_real_user
from ..compaction.handoff import split_ledger
from ..compaction.plan import CompactionPlan, restatement
from ..core.messages import Message
from ..core.tokens import estimate_tokens
from .ledger.ledger import extract_ledger, merge_ledgers, parse_ledger, render_ledger
from .protocol import (
    RESTATED_SNAPSHOT,
    SNAPSHOT_HEAD,
    SNAPSHOT_TAIL,
    USER_AFTER_SNAPSHOT,
    SummaryRequest,
)
from .redact import redact_messages

LEDGER_SHARE = 0.50
"""Fraction of the handoff budget reserved for the deterministic state ledger (the denser
carrier of exact facts; sections that need less leave the rest to it)."""


def summary_request(
    messages: Sequence[Message],
    turns: list[Message],
    plan: CompactionPlan,
    focus_topic: str | None,
    today: date,
    analysis: Analysis | None = None,
    facts: Sequence[MessageFacts] | None = None,
) -> SummaryRequest:
    """What the summarizer gets; the ledger's share of the budget is held back.

    ``analysis``: of ``turns``; ``facts``: the records of ``messages`` (both made here when
    not given).
    """
    analysis = analysis or Analysis(turns)
    facts = facts if facts is not None else Analyzer().analyze(messages)
    previous = split_ledger(plan.previous_summary)[0] if plan.previous_summary else None
    ledger_budget = int(plan.summary_budget_tokens * LEDGER_SHARE)
    snapshot = _task_snapshot(messages, analysis, plan, facts)
    masked = redact_messages(turns)  # no summarizer reads a secret (SPEC §6)
    return SummaryRequest(
        turns=masked,
        previous_summary=previous or None,
        focus_topic=focus_topic,
        budget_tokens=max(200, plan.summary_budget_tokens - ledger_budget),
        today=today,
        task_snapshot=snapshot,
        has_user_turn=any(f.real_user for f in facts),
        analysis=analysis if masked is turns else None,  # else of what it does not read
    )


def _task_snapshot(
    messages: Sequence[Message],
    analysis: Analysis,
    plan: CompactionPlan,
    facts: Sequence[MessageFacts],
) -> str | None:
    """The newest user input up to the end of the summarized turns, verbatim.

    A long request restated after the handoff is only pointed to. A long autonomous run may
    summarize no user turn at all: the request is then the newest one in the protected
    head, or (when the user only speaks in the tail) a note saying so, never a claim that
    the session has no user.
    """
    restated = restatement(messages, plan)
    if restated is not None:
        # A long request is only pointed to: quoting it here as well would pay for it
        # twice, and the snapshot would cut it anyway. A short one is quoted verbatim.
        request = live_text(restated)
        return request if len(request) <= SNAPSHOT_HEAD + SNAPSHOT_TAIL else RESTATED_SNAPSHOT
    index = newest_real_user((), 0, analysis.facts)
    if index is not None:
        return live_text(analysis.messages[index])
    head = newest_real_user((), 0, facts[: plan.head_end])
    if head is not None:
        return live_text(messages[head])
    return USER_AFTER_SNAPSHOT if any(f.real_user for f in facts) else None


def handoff_body(
    sections: str,
    turns: list[Message],
    plan: CompactionPlan,
    analysis: Analysis | None = None,
) -> str:
    """Section text plus the deterministic ledger, merged with the previous one."""
    # Extracted from redacted turns: a bare value lifted out of its context ("quoted:
    # 'hunter2'") can no longer be told from an ordinary one. Turns without secrets are
    # the same list, and keep their analysis.
    masked = redact_messages(turns)
    ledger = extract_ledger(masked, analysis if masked is turns else None)
    if plan.previous_summary:
        ledger = merge_ledgers(parse_ledger(split_ledger(plan.previous_summary)[1]), ledger)
    remaining = max(200, plan.summary_budget_tokens - estimate_tokens(sections))
    ledger_text = render_ledger(ledger, remaining)
    return f"{sections.strip()}\n\n{ledger_text}".strip() if ledger_text else sections.strip()
