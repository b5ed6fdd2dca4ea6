"""The extractive summarizer: a deterministic handoff body written without an LLM (SPEC §6).

It is the embedded default and the fallback when an LLM summarizer fails, so it must
never fail itself, never invent a user ask, and always fit its budget. Every section is
filled mechanically from the turns (and merged with the previous handoff's sections);
when the body is too long, the least valuable content is trimmed first and every trim
leaves a visible note (:mod:`.extractive_render`).

To stay dense, file paths under one shared directory are written relative to it, the
directory declared once in Active State (``Paths relative to: /home/me/proj/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ...analysis.facts import clued_items, collapse, dedupe, sentences
from ..ledger.paths import choose_root, relative
from ..protocol import (
    NO_USER_SNAPSHOT,
    RESTATED_SNAPSHOT,
    SECTION_TITLES,
    SNAPSHOT_HEAD,
    SNAPSHOT_TAIL,
    SummaryOutcome,
    SummaryRequest,
)
from ..sections import NONE, parse_sections, section_items
from . import state as st
from .actions import new_actions, prior_actions
from .render import GOAL_CHARS, Draft, fit

CONSTRAINT_CHARS = 600
MAX_CONSTRAINTS = 40
SAME_AS_SNAPSHOT = "Same as the Historical Task Snapshot."


class ExtractiveSummarizer:
    """Deterministic :class:`~windowkeeper.summary.protocol.Summarizer`; it never fails."""

    @property
    def name(self) -> str:
        return "extractive"

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        return SummaryOutcome(
            body=fit(_draft(request), request.budget_tokens), summarizer=self.name
        )


def _draft(request: SummaryRequest) -> Draft:
    turns = request.turns
    analysis = request.analysed()
    previous = _previous_sections(request.previous_summary or "")
    events = [e for e in analysis.events() if not e.orphan]
    users = list(analysis.users())
    old_root = st.carried_root(previous.get("Active State", ""))
    condensed, actions = prior_actions(previous.get("Completed Actions", ""))
    state, modified, deleted = st.active_state(events, previous.get("Active State", ""), old_root)
    counts = st.relevant_files(events, previous.get("Relevant Files", ""), old_root)
    root = old_root or choose_root([*counts, *modified, *deleted])
    short = _shortener(root)
    if root:
        state = {st.ROOT_KEY: root, **state}
    decisions = dedupe(section_items(previous.get("Key Decisions", "")) + st.decisions(turns))
    note = st.progress_note(turns)
    if note and note not in decisions:
        state[st.PROGRESS_KEY] = note
    start = max([a.number for a in actions] + [condensed[1] if condensed else 0]) + 1
    constraints = section_items(previous.get("Constraints & Preferences", "")) + _constraints(users)
    snapshot = _snapshot(request, previous)
    return Draft(
        snapshot=snapshot,
        goal=_goal(users, previous.get("Goal", ""), snapshot),
        constraints=dedupe(constraints),
        condensed=condensed,
        actions=actions + new_actions(events, start, short),
        state=state,
        modified=[short(p) for p in modified],
        deleted=[short(p) for p in deleted],
        blocked=st.blocked(events, short) or st.carried_blocked(previous.get("Blocked", "")),
        decisions=decisions,
        questions=dedupe(
            section_items(previous.get("Resolved Questions", "")) + st.questions(turns, users)
        ),
        files=st.file_lines(counts, short),
        context=st.context(users, previous.get("Critical Context", ""), request.today),
        focus=st.focus_filter(request.focus_topic),
    )


def _previous_sections(text: str) -> dict[str, str]:
    # A previous summary without our headings (another summarizer's) is kept whole.
    unstructured = {"Critical Context": f"- Earlier summary: {collapse(text, 3_000)}"}
    return parse_sections(text) or (unstructured if text.strip() else {})


def _shortener(root: str) -> Callable[[str], str]:
    def short(path: str) -> str:
        rest = relative(path, root)
        return path if rest is None else rest

    return short


def _snapshot(request: SummaryRequest, previous: Mapping[str, str]) -> str:
    text = request.task_snapshot
    if text is None:
        carried = previous.get(SECTION_TITLES[0], "").strip()
        text = carried if carried and carried != NO_USER_SNAPSHOT else NO_USER_SNAPSHOT
    if len(text) <= SNAPSHOT_HEAD + SNAPSHOT_TAIL:
        return text
    omitted = len(text) - SNAPSHOT_HEAD - SNAPSHOT_TAIL
    return f"{text[:SNAPSHOT_HEAD]}\n[... {omitted:,} chars omitted ...]\n{text[-SNAPSHOT_TAIL:]}"


def _goal(users: Sequence[tuple[int, str]], carried: str, snapshot: str) -> str:
    """The first user ask (or the carried goal); a pointer when it repeats the snapshot."""
    carried = collapse(carried, GOAL_CHARS)
    if carried and not carried.startswith(NONE):
        goal = carried
    elif users and len(users) == 1 and snapshot == RESTATED_SNAPSHOT:
        return SAME_AS_SNAPSHOT  # the only ask is the request restated after the handoff
    elif users:
        goal = collapse(users[0][1], GOAL_CHARS)
    else:
        return f"{NONE}: the summarized turns contain no user message."
    if goal != SAME_AS_SNAPSHOT and collapse(snapshot, GOAL_CHARS) == goal:
        return SAME_AS_SNAPSHOT
    return goal


_RULE = re.compile(
    r"\b(?:must|never|always|don'?t|do not|please|should(?:n'?t)?|prefer|avoid|only"
    r"|make sure|ensure|required?|cannot|can'?t|no need)\b",
    re.IGNORECASE,
)


# ``_RULE`` loosened (no word boundaries, any whitespace between words).
_RULE_CLUES = tuple(
    (word, re.compile(pattern))
    for word, pattern in (
        ("must", "must"), ("never", "never"), ("always", "always"), ("don", "don'?t"),
        ("do", r"do\s+not"), ("please", "please"), ("should", "should"), ("prefer", "prefer"),
        ("avoid", "avoid"), ("only", "only"), ("make", r"make\s+sure"), ("ensure", "ensure"),
        ("require", "require"), ("cannot", "cannot"), ("can", "can'?t"), ("no", r"no\s+need"),
    )
)  # fmt: skip


# "Please <work verb> ..." asks for a task, it states no rule; carried as a constraint it
# would pile up with every request of a long session.
_PLEASE_TASK = re.compile(
    r"^(?:(?:can|could|would) you\s+)?please\s+(?:fix|add|implement|write|create|run|check"
    r"|look|update|help|investigate|find|read|review|refactor|debug|build|test|continue"
    r"|proceed|go|do|start|try|explain|summari[sz]e|show|open|deploy|install|remove|delete"
    r"|rename|move|port|migrate|resolve|handle|finish|change|modify|edit|set up|setup)\b",
    re.IGNORECASE,
)


def _states_rule(sentence: str) -> bool:
    words = {m.group(0).lower() for m in _RULE.finditer(sentence)}
    if not words or sentence.endswith("?") or len(sentence) < 8:
        return False
    return words != {"please"} or not _PLEASE_TASK.match(sentence)


def _constraints(users: Sequence[tuple[int, str]]) -> list[str]:
    """Whole user sentences that state a rule (line wraps joined), verbatim."""
    found = [
        sentence if len(sentence) <= CONSTRAINT_CHARS else sentence[: CONSTRAINT_CHARS - 3] + "..."
        for _, text in users
        for sentence in clued_items(sentences(text), _RULE_CLUES)
        if _states_rule(sentence)
    ]
    return dedupe(found)[-MAX_CONSTRAINTS:]
