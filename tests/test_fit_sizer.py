"""The handoff's fitting renders each section once per value of its knobs (issue 27).

``fitted_text`` shares one sizer between the budget ladder, the work spec's extra room
and the final render, and a ladder probe sizes only the section of the knob it moves.
What must hold: the text is the one the plain algorithm gives (every probe sizing the
whole render, a fresh render at the end), on generated states of every section.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.facts import largest_fitting
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.summary.handoff import fit
from windowkeeper.summary.handoff.fit import LADDER, fitted, fitted_text, with_work_spec
from windowkeeper.summary.handoff.model import (
    Command,
    HandoffState,
    OpenError,
    Quote,
    Spec,
    SpecRole,
    WorkItem,
    WorkState,
)
from windowkeeper.summary.handoff.text import TITLES, Shown, render, section_text

WORDS = st.sampled_from(
    ["fix", "because", "instead of", "the", "parser", "`x.py`", "tests passed", "edited a.py",
     "committed 1a2b3c4", "closed", "ran pytest", "Changed `y`:", "SQLite doesn't", "é", "→"]
)  # fmt: skip
LINE = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)
LINES = st.lists(LINE, max_size=9).map(tuple)


def _plain_fitted(state: HandoffState, budget: int) -> Shown:
    """The ladder as written before the shared sizer: each probe sizes every section."""

    def total(shown: Shown) -> int:
        texts = (section_text(title, state, shown) for title in TITLES)
        return sum(estimate_tokens(text) + 1 for text in texts if text)

    shown = Shown()
    if total(shown) <= budget:
        return shown
    for knob, floor in LADDER:
        current = getattr(shown, knob)
        if current <= floor:
            continue
        high = min(current, fit._useful_max(state, knob))

        def fits(value: int, knob: str = knob, base: Shown = shown) -> bool:
            return total(replace(base, **{knob: value})) <= budget

        best = largest_fitting(floor, high, fits)
        shown = replace(shown, **{knob: floor if best is None else best})
        if best is not None:
            return shown
    return shown


def _plain_work_spec(state: HandoffState, shown: Shown, room: int) -> Shown:
    work = next((spec for spec in state.specs if spec.whole), None)
    if work is None or room <= 0:
        return shown

    def size(extra: int) -> int:
        text = section_text("Task Spec", state, replace(shown, spec_extra=extra))
        return estimate_tokens(text) + 1 if text else 0

    base = size(shown.spec_extra)
    best = largest_fitting(
        1, max(1, len(work.whole) - len(work.text)), lambda e: size(e) - base <= room
    )
    return shown if best is None else replace(shown, spec_extra=best)


@st.composite
def _specs(draw: st.DrawFn, n: int) -> Spec:
    """A spec, mostly one with a whole output (the extra room shows more of every such
    spec, so the room's search must size them all), with headings and rule lines."""
    lines = st.one_of(LINE, st.sampled_from(["## Rules", "Acceptance:", "- must not add x"]))
    whole = "\n".join(draw(st.lists(lines, max_size=60)))
    # Texts past the ladder's spec_chars floors too, so its probes cut them.
    text = whole[: draw(st.one_of(st.integers(0, 200), st.integers(200, 3_000)))]
    return Spec(f"bd show app-{n}", text, "wkabc", f"app-{n}", role=SpecRole.IN_PROGRESS,
                whole=whole if draw(st.integers(0, 3)) else "")  # fmt: skip


@st.composite
def states(draw: st.DrawFn) -> HandoffState:
    items = tuple(
        WorkItem(f"app-{n}", draw(LINE), draw(LINES)) for n in range(draw(st.integers(0, 4)))
    )
    work = WorkState(
        done=draw(LINES), pending=draw(LINES), items=items, latest=draw(LINES),
        fixed=draw(LINES), changes=draw(LINES),
    )  # fmt: skip
    specs = tuple(draw(_specs(n)) for n in range(draw(st.integers(0, 3))))
    errors = tuple(OpenError(line, draw(LINES), 1, line) for line in draw(LINES)[:3])
    return HandoffState(
        task=Quote("\n".join(draw(LINES)), "wk1"), users=tuple(Quote(x) for x in draw(LINES)),
        specs=specs, constraints=draw(LINES), task_rules=draw(LINES), work=work,
        errors=errors, decisions=draw(LINES), files=tuple((f"src/{x}.py", "modified")
        for x in "abcdefg"[: draw(st.integers(0, 7))]), values=draw(LINES),
        commands=tuple(Command(x, 0) for x in draw(LINES)), error_lines=draw(LINES),
        last_action=draw(LINE), next_step=draw(LINE),
    )  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(states(), st.integers(0, 1_500), st.integers(0, 400))
def test_the_shared_sizer_gives_the_plain_algorithms_text(
    state: HandoffState, budget: int, room: int
) -> None:
    plain = _plain_fitted(state, budget)
    assert fitted(state, budget) == plain
    assert with_work_spec(state, plain, room) == _plain_work_spec(state, plain, room)
    assert fitted_text(state, budget, room) == render(state, _plain_work_spec(state, plain, room))


@settings(max_examples=150, deadline=None)
@given(states(), st.lists(_specs(9), min_size=1, max_size=2), st.integers(0, 2_000))
def test_the_extra_room_sizes_every_spec_it_moves(
    state: HandoffState, more: list[Spec], room: int
) -> None:
    """The room's search sizes the section once per distinct excerpt of every spec with
    a whole output (the extra room moves each of them), as a probe per value would."""
    state = replace(state, specs=(*state.specs, *more))
    shown = Shown(spec_chars=300)
    assert with_work_spec(state, shown, room) == _plain_work_spec(state, shown, room)
    # The ladder's spec_chars probes cut every spec's text (a budget that reaches them).
    budget = room // 2
    assert fitted(state, budget) == _plain_fitted(state, budget)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_specs(0), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 3_000), st.integers(0, 3_000)), min_size=1, max_size=12),
)
def test_the_task_spec_is_sized_as_rendered_whatever_the_probes(
    specs: list[Spec], probes: list[tuple[int, int]]
) -> None:
    """Sizes kept per excerpts shown are the sizes of the section rendered, for every
    spec_chars and spec_extra probed, in any order (each spec's excerpt is in the key)."""
    state = HandoffState(specs=tuple(specs))
    sizer = fit._Sizer(state)
    for chars, extra in probes:
        shown = Shown(spec_chars=chars, spec_extra=extra)
        text = section_text("Task Spec", state, shown)
        assert sizer.section("Task Spec", shown) == (estimate_tokens(text) + 1 if text else 0)


def test_a_section_is_sized_once_per_value_of_what_it_depends_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sizer keys sizes by what a section says its text depends on, whichever section
    says it (not one section singled out): the Critical Values of a state with three
    values show the same text for every ``values`` of 3 or more, so it renders once."""
    state = HandoffState(values=("a = 1", "b = 2", "c = 3"))
    depends = fit._Section(
        fit._SECTIONS["Critical Values"].knobs, lambda s, shown: min(shown.values, len(s.values))
    )
    monkeypatch.setitem(fit._SECTIONS, "Critical Values", depends)
    rendered: list[Shown] = []

    def counted(title: str, state: HandoffState, shown: Shown) -> str:
        rendered.append(shown)
        return section_text(title, state, shown)

    monkeypatch.setattr(fit, "section_text", counted)
    sizer = fit._Sizer(state)
    sizes = [sizer.section("Critical Values", Shown(values=n)) for n in (24, 12, 8, 3, 2)]
    plain = [estimate_tokens(section_text("Critical Values", state, Shown(values=n))) + 1
             for n in (24, 12, 8, 3, 2)]  # fmt: skip
    assert sizes == plain
    assert [shown.values for shown in rendered] == [24, 2]
