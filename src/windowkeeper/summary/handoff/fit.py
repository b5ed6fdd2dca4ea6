"""Keeping the handoff within its token budget, the least valuable content going first.

The budget goes to the task, the user's messages and constraints, the work state and the
open errors before lists of commands, reads and values (design §5); fewer decisions are
shown whole before any is cut mid-sentence. Each step of :data:`LADDER` lowers one knob
of :class:`~.text.Shown` (found by binary search: the largest value that fits); what a
step takes out stays recoverable — an old user message keeps its first line and its
archive handle, old done work becomes counts, a command list becomes a count (the
files read keep their newest three names until the modified files are cut to 24); the
task's own rules go (the task is verbatim in the context: they are listed for the
handoff read alone); older fixes are kept in brief (failing step, error, fix) once only
the newest are shown whole, and left out last. The task and the pinned constraints are
only ever shortened (head and tail, long sentences cut), never dropped, so a tiny budget
may be exceeded by them alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from operator import attrgetter

from ...analysis.facts import largest_fitting
from ...core.frozen import evolve
from ...core.tokens import estimate_tokens
from .model import HandoffState
from .specs import shown_key
from .text import ALL, TITLES, Shown, section_text

# Which knobs each section reads (a section is rendered again only when one changes).
_KNOBS = {
    "Task": ("task_chars",),
    "Task Spec": ("spec_chars", "spec_extra"),
    "User Messages": ("users_full", "user_line_chars"),
    "Constraints & Preferences": ("constraint_chars", "task_rules"),
    "Work State": ("done", "evidence", "fixed", "fixed_brief", "changes"),
    "Open Errors": ("errors", "error_lines_each"),
    "Key Decisions": ("decisions", "decision_chars"),
    "Files": ("files", "files_read"),
    "Critical Values": ("values",),
    "Next Step": ("last_chars",),
    "State Ledger": ("commands", "error_lines"),
    "Notes": (),
}
# What a section's text depends on, finer than its knobs' values, for a section whose
# knobs often move without changing what it shows and where working that out costs far
# less than a render (a section without one is sized per value of its knobs alone).
_DEPENDS: dict[str, Callable[[HandoffState, Shown], Hashable]] = {
    "Task Spec": lambda state, shown: shown_key(state.specs, shown.spec_chars, shown.spec_extra),
}


@dataclass(frozen=True)
class _Section:
    knobs: Callable[[Shown], Hashable]
    """The values of the section's knobs (a constant for a section without any)."""
    depends: Callable[[HandoffState, Shown], Hashable] | None


_SECTIONS = {
    title: _Section(attrgetter(*knobs) if knobs else (lambda shown: None), _DEPENDS.get(title))
    for title, knobs in _KNOBS.items()
}
_SECTION_OF = {knob: title for title, knobs in _KNOBS.items() for knob in knobs}
LADDER: tuple[tuple[str, int], ...] = (
    ("error_lines", 8), ("commands", 12), ("files_read", 24), ("values", 24), ("spec_chars", 1_000),
    ("decisions", 8), ("done", 10), ("error_lines", 0),
    ("commands", 0), ("evidence", 6), ("fixed", 5), ("files_read", 12),
    ("values", 12), ("files_read", 3), ("error_lines_each", 3), ("done", 4), ("users_full", 6),
    ("values", 8), ("task_rules", 4), ("done", 0), ("evidence", 3), ("fixed", 1),
    ("changes", 2), ("decisions", 3), ("decision_chars", 200), ("spec_chars", 700),
    ("task_rules", 0), ("files", 24), ("user_line_chars", 120), ("users_full", 2),
    ("fixed_brief", 4), ("values", 0), ("decisions", 1), ("changes", 1), ("last_chars", 160),
    ("files_read", 0), ("files", 6), ("evidence", 1), ("fixed_brief", 3), ("fixed", 0),
    ("changes", 0), ("decisions", 0), ("fixed_brief", 0),
    ("users_full", 0), ("spec_chars", 400),
    ("user_line_chars", 60), ("task_chars", 1_500), ("errors", 2), ("error_lines_each", 1),
    ("last_chars", 80), ("files", 0), ("constraint_chars", 200), ("task_chars", 600),
)  # fmt: skip


class _Sizer:
    """Each section of ``state`` sized once per value of its knobs, and once per value of
    what its text depends on where the section says (:data:`_DEPENDS`): the ladder's
    probes, the spec's extra room and the final render share them.

    Only sizes are kept per value; a section's text only for the value it was last
    rendered with (the final render mostly finds it there). Keeping every text tried
    held ~15 renders of a long task spec at once (+0.18 MB peak on the largest session).
    """

    def __init__(self, state: HandoffState) -> None:
        self.state = state
        self._sizes: dict[tuple[str, object], int] = {}
        # Per section (a key is the section's own), not one dict keyed by (title, key):
        # a tuple per size kept is the peak memory's.
        self._by_content: dict[str, dict[Hashable, int]] = {}
        self._last: dict[str, tuple[object, str]] = {}

    def _text(self, title: str, key: object, shown: Shown) -> str:
        last = self._last.get(title)
        if last is not None and last[0] == key:
            return last[1]
        text = section_text(title, self.state, shown)
        self._last[title] = (key, text)
        return text

    def section(self, title: str, shown: Shown) -> int:
        kind = _SECTIONS[title]
        key = kind.knobs(shown)
        size = self._sizes.get((title, key))
        if size is None:
            known: dict[Hashable, int] | None = None
            if kind.depends is not None:
                content = kind.depends(self.state, shown)
                known = self._by_content.setdefault(title, {})
                size = known.get(content)
            if size is None:
                text = self._text(title, key, shown)
                size = estimate_tokens(text) + 1 if text else 0
                if known is not None:
                    known[content] = size
            self._sizes[(title, key)] = size
        return size

    def total(self, shown: Shown) -> int:
        return sum(self.section(title, shown) for title in TITLES)

    def render(self, shown: Shown) -> str:
        """What :func:`~.text.render` gives for ``shown``, from the sections rendered."""
        parts = (self._text(title, _SECTIONS[title].knobs(shown), shown) for title in TITLES)
        return "\n\n".join(part for part in parts if part)


def fitted(state: HandoffState, budget: int) -> Shown:
    """The most a render of ``state`` can show within ``budget`` tokens."""
    return _fitted(_Sizer(state), budget)


def fitted_text(state: HandoffState, budget: int, spec_room: int) -> str:
    """The render of ``state`` within ``budget`` tokens, the spec of the work in progress
    showing more within ``spec_room`` on top: ``render(state, with_work_spec(state,
    fitted(state, budget), spec_room))``, each section rendered once per value tried."""
    sizer = _Sizer(state)
    return sizer.render(_with_work_spec(sizer, _fitted(sizer, budget), spec_room))


def _fitted(sizer: _Sizer, budget: int) -> Shown:
    state, shown = sizer.state, Shown()
    total = sizer.total(shown)
    if total <= budget:
        return shown
    for knob, floor in LADDER:
        current = getattr(shown, knob)
        if current <= floor:
            continue
        high = min(current, _useful_max(state, knob))
        # A knob changes its own section only: the others' size is fixed while it moves.
        title = _SECTION_OF[knob]
        others = total - sizer.section(title, shown)
        best = largest_fitting(floor, high, _fits(sizer, shown, knob, budget - others))
        shown = evolve(shown, **{knob: floor if best is None else best})
        if best is not None:
            return shown
        total = others + sizer.section(title, shown)
    return shown


def _fits(sizer: _Sizer, base: Shown, knob: str, room: int) -> Callable[[int], bool]:
    """Whether ``knob`` at a value keeps its section within ``room`` tokens."""
    title = _SECTION_OF[knob]
    return lambda value: sizer.section(title, evolve(base, **{knob: value})) <= room


def with_work_spec(state: HandoffState, shown: Shown, room: int) -> Shown:
    """``shown`` with the spec of the work in progress showing more of its whole output,
    within ``room`` tokens on top of the budget (design §6 "task spec": what the work
    must meet is what a continuing agent gets wrong from an excerpt; the budget's own
    ladder cuts every spec alike before the state's facts)."""
    return _with_work_spec(_Sizer(state), shown, room)


def _with_work_spec(sizer: _Sizer, shown: Shown, room: int) -> Shown:
    work = next((spec for spec in sizer.state.specs if spec.whole), None)
    if work is None or room <= 0:
        return shown
    base = sizer.section("Task Spec", shown)

    def fits(extra: int) -> bool:
        return sizer.section("Task Spec", evolve(shown, spec_extra=extra)) - base <= room

    best = largest_fitting(1, max(1, len(work.whole) - len(work.text)), fits)
    return shown if best is None else evolve(shown, spec_extra=best)


def _useful_max(state: HandoffState, knob: str) -> int:
    """The knob's largest value that changes anything (binary search starts there)."""
    counts = {
        "users_full": len(state.users), "done": len(state.work.done),
        "decisions": len(state.decisions), "errors": len(state.errors),
        "files": len(state.files), "files_read": len(state.files), "values": len(state.values),
        "commands": len(state.commands), "error_lines": len(state.error_lines),
        "evidence": max((len(i.evidence) for i in state.work.items), default=0),
        "fixed": len(state.work.fixed), "fixed_brief": len(state.work.fixed),
        "changes": len(state.work.changes),
        "task_rules": len(state.task_rules),
    }  # fmt: skip
    lengths = {
        "task_chars": len(state.task.text) if state.task else 0, "user_line_chars": 240,
        "decision_chars": 500, "constraint_chars": 600, "last_chars": len(state.last_action),
        "spec_chars": max((len(spec.text) for spec in state.specs), default=0),
    }  # fmt: skip
    return counts.get(knob, lengths.get(knob, ALL))
