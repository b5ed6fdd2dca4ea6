"""Rendering the extractive summary within its token budget.

Trimming lowers one knob at a time, lowest-value content first (verbose prose before
file names, identifiers and errors), and every trim leaves a visible note. Each section
is rendered once per knob value (memoized), and the crossing knob is found by binary
search, so fitting costs O(log n) renders of one section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ...analysis.facts import largest_fitting
from ...analysis.toolshapes import shorten
from ...core.tokens import estimate_tokens
from ..protocol import SECTION_TITLES
from ..sections import NONE, best_indices
from .actions import NOUNS, Action, Condensed
from .state import DELETED_KEY, MODIFIED_KEY

GOAL_CHARS = 600
TRUNCATED = "\n[... summary cut to fit its token budget ...]"
MODIFIED_SHOWN = 10  # Active State lists the newest few; Relevant Files has them all.

Focus = Callable[[str], bool] | None


@dataclass
class Draft:
    """Everything the body can say, before trimming to the budget (paths already short)."""

    snapshot: str
    goal: str
    constraints: list[str]
    condensed: Condensed | None
    actions: list[Action]
    state: dict[str, str]
    modified: list[str]
    deleted: list[str]
    blocked: list[str]
    decisions: list[str]
    questions: list[str]
    files: list[str]
    context: list[str]
    focus: Focus = None
    _memo: dict[tuple[str, int], str] = field(default_factory=dict, repr=False)


# Trim order: lowest value first. Each step lowers one knob to (at least) its floor.
_LADDER: tuple[tuple[str, int], ...] = (
    ("actions", 10), ("decisions", 3), ("questions", 3), ("context", 6), ("actions", 4),
    ("decisions", 0), ("questions", 0), ("goal", 160), ("files", 12), ("context", 0),
    ("actions", 0), ("modified", 5), ("files", 6), ("blocked", 1), ("files", 0),
    ("modified", 0), ("blocked", 0), ("constraints", 0),
)  # fmt: skip
_KNOBS = ("goal", "constraints", "actions", "modified", "blocked", "decisions", "questions")
_SECTION_KNOB = (None, *_KNOBS, "files", "context")


def fit(draft: Draft, budget: int) -> str:
    """The body within ``budget`` tokens, trimming along the ladder."""
    knobs = _full_knobs(draft)
    if _size(draft, knobs) <= budget:
        return render(draft, knobs)
    for name, floor in _LADDER:
        if knobs[name] <= floor:
            continue
        base = knobs

        def fits(value: int, name: str = name, base: dict[str, int] = base) -> bool:
            return _size(draft, {**base, name: value}) <= budget

        best = largest_fitting(floor, base[name], fits)
        knobs = {**base, name: floor if best is None else best}
        if best is not None:
            return render(draft, knobs)
    return _hard_cut(render(draft, knobs), budget)


def _full_knobs(draft: Draft) -> dict[str, int]:
    names = ("actions", "decisions", "context", "questions", "files", "modified", "blocked")
    knobs = {name: len(getattr(draft, name)) for name in names}
    knobs["context"] -= 1  # the date line is always kept
    knobs["modified"] = min(knobs["modified"], MODIFIED_SHOWN)
    return knobs | {"goal": GOAL_CHARS, "constraints": len(draft.constraints)}


def _sections(draft: Draft, knobs: Mapping[str, int]) -> list[str]:
    bodies = []
    for title, knob in zip(SECTION_TITLES, _SECTION_KNOB, strict=True):
        value = knobs[knob] if knob else 0
        key = (title, value)
        if key not in draft._memo:
            body = _BODIES[title](draft, value) or NONE
            draft._memo[key] = f"## {title}\n{body}"
        bodies.append(draft._memo[key])
    return bodies


def _size(draft: Draft, knobs: Mapping[str, int]) -> int:
    return estimate_tokens(render(draft, knobs))


def render(draft: Draft, knobs: Mapping[str, int]) -> str:
    return "\n\n".join(_sections(draft, knobs))


def _bullets(items: Sequence[str], keep: int, what: str, *preferred: Focus) -> str:
    chosen = best_indices(items, keep, *preferred)
    lines = [f"- {items[i]}" for i in chosen]
    if len(items) > len(chosen):
        lines.append(f"- ({len(items) - len(chosen)} {what} omitted for space)")
    return "\n".join(lines)


def _actions_block(draft: Draft, keep: int) -> str:
    texts = [a.text for a in draft.actions]
    chosen = set(best_indices(texts, keep, draft.focus))
    dropped = [a for i, a in enumerate(draft.actions) if i not in chosen]
    kept = [a for i, a in enumerate(draft.actions) if i in chosen]
    lines = [f"{a.number}. {a.text}" for a in kept]
    if not dropped and draft.condensed is None:
        return "\n".join(lines)
    first, last, counts = draft.condensed or (dropped[0].number, dropped[0].number, {})
    counts = dict(counts)
    for action in dropped:
        counts[action.verb] = counts.get(action.verb, 0) + 1
        first, last = min(first, action.number), max(last, action.number)
    summary = ", ".join(
        f"{verb} {n} {NOUNS[verb]}{'' if n == 1 else 's'}"
        for verb, n in sorted(counts.items(), key=lambda kv: list(NOUNS).index(kv[0]))
    )
    gap = " (except those listed)" if any(a.number < last for a in kept) else ""
    return "\n".join([f"{first}–{last}{gap}: condensed — {summary or 'no details'}", *lines])


def _state_block(draft: Draft, keep: int) -> str:
    lines = [f"- {key}: {value}" for key, value in draft.state.items()]
    at = min(3, len(lines))
    for key, paths, shown in (
        (MODIFIED_KEY, draft.modified, keep),
        (DELETED_KEY, draft.deleted, keep),
    ):
        if not paths:
            continue
        picked = [paths[i] for i in best_indices(paths, shown, draft.focus)]
        more = len(paths) - len(picked)
        listed = ", ".join(picked) + (f" (+{more} more)" if more else "")
        lines.insert(at, f"- {key}: {listed}")
        at += 1
    return "\n".join(lines)


def _is_modified(item: str) -> bool:
    return " — modified (" in item


def _is_date(item: str) -> bool:
    return item.startswith("Compacted on ")


_BODIES: dict[str, Callable[[Draft, int], str]] = dict(
    zip(
        SECTION_TITLES,
        (
            lambda d, _: d.snapshot,
            lambda d, n: shorten(d.goal, n),
            lambda d, n: _bullets(d.constraints, n, "constraints"),
            _actions_block,
            _state_block,
            lambda d, n: _bullets(d.blocked, n, "older failures"),
            lambda d, n: _bullets(d.decisions, n, "decisions", d.focus),
            lambda d, n: _bullets(d.questions, n, "questions", d.focus),
            lambda d, n: _bullets(d.files, n, "files", d.focus, _is_modified),
            lambda d, n: _bullets(d.context, n + 1, "values", _is_date, d.focus),
        ),
        strict=True,
    )
)


def _hard_cut(text: str, budget: int) -> str:
    """Last resort for a budget too small for even the untrimmable sections."""
    size = largest_fitting(0, len(text), lambda n: estimate_tokens(text[:n] + TRUNCATED) <= budget)
    if size is None:
        return ""
    return text[:size].rstrip() + TRUNCATED
