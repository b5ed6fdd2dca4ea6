"""The spec of the work in progress, shown on top of the handoff's budget (design §6 "task
spec"; issue 24: the readers' most common lost point, in every variant, was a spec's exact
requirements — event names, button texts, limits — which the excerpt had left out).

The whole spec of the item in progress (else of the task) is kept beside its excerpt; a
render shows as much more of it as the window's share for it allows (a compaction that
must fit: only the room it measured), never more.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper.analysis.events import Analysis
from windowkeeper.analysis.kinds import handoff_body
from windowkeeper.compaction.plan import fitting_plan, work_spec_room
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.messages import Message, content_text
from windowkeeper.core.tokens import estimate_tokens
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.summary.handoff.extract import Placement, extract_state
from windowkeeper.summary.handoff.fit import fitted, with_work_spec
from windowkeeper.summary.handoff.model import HandoffState, SpecRole
from windowkeeper.summary.handoff.parse import parse_state, split_sections
from windowkeeper.summary.handoff.text import Shown, render, section_text

OK = "<returncode>0</returncode>"
EXACT = [f"- The `export_{n}` column is `field_{n}`, formatted as `%Y-%m-%d`." for n in range(12)]


def item_spec(exact: list[str] = EXACT) -> str:
    """A work item whose rules and done criteria fill the usual excerpt, and whose exact
    names (a section the excerpt ranks low) come after them."""
    rules = [
        f"- Never touch module legacy_{n}: it is frozen until the migration." for n in range(9)
    ]
    done = [f"- Test case {n} passes with the fixture invoices_{n}.csv loaded." for n in range(9)]
    return "\n".join([
        "○ app-7.2 · Write the CSV exporter", "## Constraints", *rules,
        "## Definition of Done", *done, "## Output columns", *exact,
    ])  # fmt: skip


def session(spec: str, rounds: int = 40) -> list[Message]:
    """The epic looked up, the item looked up and claimed, then long work."""
    messages: list[Message] = [system(), user("Work on bead app-7: run bd show app-7 first.")]
    epic = "○ app-7 [EPIC] · CSV export\n## Goal\nExport invoices as CSV.\n" + OK
    messages += [assistant(None, call("e", "bash", command="bd show app-7")), tool("e", epic)]
    messages += [assistant(None, call("i", "bash", command="bd show app-7.2"))]
    messages += [tool("i", spec + "\n" + OK)]
    claim = call("u", "bash", command="bd update app-7.2 --status in_progress")
    messages += [assistant(None, claim), tool("u", OK)]
    for n in range(rounds):
        messages.append(assistant(f"Step {n}.", call(f"c{n}", "bash", command=f"cat mod_{n}.py")))
        messages.append(tool(f"c{n}", f"def f_{n}():\n    return {n}\n" * 60))
    return [*messages, assistant("Continuing."), user("continue")]


def spec_section(messages: list[Message]) -> str:
    for message in messages:
        text = content_text(message.get("content"))
        if "## Task Spec" in text:
            return "\n".join(split_sections(text)["Task Spec"])
    raise AssertionError("no handoff with a Task Spec")


def state_of(spec: str) -> HandoffState:
    turns = session(spec, rounds=0)[1:-2]
    return extract_state(Analysis(turns), HandoffState(), Placement(user_in_tail=False))


def test_the_item_in_progress_shows_its_exact_requirements_on_top_of_the_budget() -> None:
    config = CompressionConfig(prune_only_ratio=0.01)
    result = ContextCompressor(config, context_length=16_000).compress(
        session(item_spec()), force=True
    )
    spec = spec_section(result.messages)
    head = next(line for line in spec.split("\n") if line.startswith("Spec of the item in"))
    assert head.startswith("Spec of the item in progress: `bd show app-7.2`")
    assert "shortened" not in head  # the whole output fits the room: verbatim
    for line in EXACT:
        assert line in spec, line
    # The excerpt the budget alone allows leaves them out (what the room adds).
    state = state_of(item_spec())
    assert EXACT[-1] not in section_text("Task Spec", state, Shown())
    # The next compaction reads the whole spec back from this handoff.
    body = handoff_body(next(content_text(m.get("content")) for m in result.messages
                             if "## Task Spec" in content_text(m.get("content"))))  # fmt: skip
    parsed = parse_state(body or "")
    assert parsed is not None and EXACT[-1] in parsed.specs[-1].text


def test_no_room_renders_the_excerpt_as_before() -> None:
    state = state_of(item_spec())
    (work,) = [s for s in state.specs if s.whole]
    assert work.role is SpecRole.IN_PROGRESS and work.shortened
    shown = fitted(state, 2_000)
    assert with_work_spec(state, shown, 0) == shown
    assert "`bd show app-7.2` · item app-7.2 · shortened" in render(state, shown)


def test_without_an_item_in_progress_the_tasks_spec_gets_the_room() -> None:
    look_up = call("i", "bash", command="bd show app-7.2")
    turns = [
        user("Work on bead app-7.2."),
        assistant(None, look_up),
        tool("i", item_spec() + "\n" + OK),
    ]
    state = extract_state(Analysis(turns), HandoffState(), Placement(user_in_tail=False))
    (task,) = state.specs
    assert task.role is SpecRole.TASK and task.whole
    shown = with_work_spec(state, Shown(), 2_000)
    assert EXACT[-1] in section_text("Task Spec", state, shown)


@settings(max_examples=60, deadline=None)
@given(
    room=st.integers(min_value=0, max_value=1_500),
    exact=st.lists(st.text("abcdefghij `_-", min_size=5, max_size=160), min_size=1, max_size=60),
)
def test_the_spec_never_takes_more_than_its_room(room: int, exact: list[str]) -> None:
    state = state_of(item_spec([f"- {line}" for line in exact]))
    shown = Shown()
    before = estimate_tokens(section_text("Task Spec", state, shown))
    wider = with_work_spec(state, shown, room)
    grown = estimate_tokens(section_text("Task Spec", state, wider)) - before
    assert grown <= room
    # More room never shows less.
    more = with_work_spec(state, shown, room + 200)
    assert more.spec_extra >= wider.spec_extra


def test_a_compaction_that_must_fit_gives_the_spec_only_the_room_it_measured() -> None:
    messages = session(item_spec())
    comp = ContextCompressor(CompressionConfig(prune_only_ratio=0.01), context_length=16_000)
    facts = comp.analyzer.analyze(messages)
    costs = [f.tokens for f in facts]
    usual = comp.plan(messages)
    assert usual.spec_room == work_spec_room(16_000) == 960
    roomy = fitting_plan(messages, costs, usual, comp.config, 16_000, 10**6, facts)
    assert roomy is usual  # a window with room: nothing measured, the whole share
    # Find the room where the budget just fits: the spec gets what is left, notes nothing.
    tight = next(
        plan
        for room in range(2_000, 16_000, 25)
        if (
            plan := fitting_plan(messages, costs, usual, comp.config, 16_000, room, facts)
        ).summary_budget_tokens
        == usual.summary_budget_tokens
    )
    assert 0 <= tight.spec_room < 960 and tight.notes_room == 0
    squeezed = fitting_plan(messages, costs, usual, comp.config, 16_000, 1_000, facts)
    assert squeezed.spec_room == 0 and squeezed.notes_room == 0
    assert replace(usual, spec_room=0).spec_room == 0
