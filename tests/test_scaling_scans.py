"""The extraction's walks over a long history stay linear (issue 27 point 3): each shortcut
here gives what the scan it replaced gave, compared on generated input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.summary.handoff import claims
from windowkeeper.summary.handoff.claims import title_sources
from windowkeeper.summary.handoff.work import DoneSteps, _again

# Keys collide often; some items carry " (", a count " ×N", or both; a count appended to
# an item without " (" changes its key (the old scan's behaviour, kept).
_PROOFS = st.sampled_from([
    "Edited a.py (edit ok)", "Edited a.py (edit ok) ×3", "Edited a.py", "Edited a.py ×2",
    "Ran `make` (exit 0)", "Ran `make` (no error reported)", "Ran `make`", "Tests passed: `t`",
    "Tests passed: `t` (3 passed)", "Wrote b.py (write ok) ×2", "Wrote b.py (write ok)", "",
    " (", "x (y (z",
])  # fmt: skip


def _scanned(previous: list[str], proofs: list[str]) -> list[str]:
    """The done list as the scan back through the list built it (before DoneSteps)."""
    done = list(previous)
    for proof in proofs:
        key = proof.split(" (", 1)[0]
        again = next(
            (i for i in range(len(done) - 1, -1, -1) if done[i].split(" (", 1)[0] == key), None
        )
        if again is not None:
            done.append(_again(done.pop(again)))
        else:
            done.append(proof)
    return done


@settings(max_examples=1_000, deadline=None)
@given(st.lists(_PROOFS, max_size=8), st.lists(_PROOFS, max_size=40))
def test_done_steps_match_the_scan_back_through_the_list(
    previous: list[str], proofs: list[str]
) -> None:
    done = DoneSteps(previous)
    for proof in proofs:
        done.record(proof)
    assert done.items() == _scanned(previous, proofs)


_COMMANDS = st.sampled_from([
    "bd show app-7", "bd list", "gh issue view 12", "bd close app-7 --reason done",
    "bd update app-8 --status in_progress", "cat notes.md", "ls", "", "  bd ready",
    "jira comment X-1 hi", "linear search foo",
])  # fmt: skip
_RESULTS = st.sampled_from([
    "○ app-7 · Add export  [P1]", "app-8: Fix the parser", "✓ Closed app-7: Closed",
    "title:\tThe twelfth issue\nstate: open", "app-7 [P2] [task] - Rename things",
    "nothing here", "app-8 - in progress", "",
])  # fmt: skip


def _event(position: int, command: str, result: str, shell: bool) -> ToolEvent:
    if shell:
        action = ToolAction("bash", ToolKind.SHELL, command, command=command)
    else:
        action = ToolAction("read", ToolKind.READ, command, path=command)
    return ToolEvent(position, action, {}, result, None, False)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(_COMMANDS, _RESULTS, st.booleans()), max_size=12),
)
def test_title_sources_are_the_order_titled_read_per_item(
    rows: list[tuple[str, str, bool]],
) -> None:
    events = [_event(i, *row) for i, row in enumerate(rows)]
    sources = title_sources(events)
    looks = [e for e in events if claims._LISTING.match(e.action.command or "")]
    others = [e for e in events if not claims._CHANGES.match(e.action.command or "")]
    assert sources == [*reversed(looks), *reversed(others)]
