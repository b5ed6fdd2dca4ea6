"""The work state's lazy readings agree with the whole-history passes they replaced.

The work-state walk asks what a call changed, whether it ran a check and whether it
backs a claim only where the handoff uses the answer: the fixes' ranges, the newest
texts' backing, the newest check results (issue 27). Each property builds the same
events twice (fresh memos) and compares the lazy reading with the plain pass, kept here
as the reference.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.checks import check_passed, check_result, check_target, is_check_run
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.resolution import OpenFailures
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.summary.handoff import work
from windowkeeper.summary.handoff.fixes import FixLog, change_of
from windowkeeper.summary.handoff.progress import MAX_LATEST, check_key, latest_results
from windowkeeper.summary.handoff.trail import commit_made

_COMMANDS = [
    "pytest tests/test_a.py", "python -m pytest -x", "ruff check .", "make build",
    "git commit -m 'fix parser'", "git push origin main", "git add a.py", "ls -la",
    "sed -i 's/a/b/' a.py", "echo hi > f.txt", "cat a.py", "pytest tests/test_b.py",
    "cd /w && git commit -am wip && git push",
]  # fmt: skip
_RESULTS = [
    "", "ok", "3 passed in 0.1s", "1 failed, 2 passed", "FAILED tests/test_a.py::t",
    "[main 1a2b3c4] fix parser\n 1 file changed", "All checks passed!", "error: build failed",
    "To host:r.git\n   1a2b3c4..5d6e7f8  main -> main",
]  # fmt: skip

Maker = Callable[[int], ToolEvent]


_CHECKS = [c for c in _COMMANDS if c.startswith(("pytest", "python -m", "ruff", "make"))]


@st.composite
def _event(draw: st.DrawFn, commands: Sequence[str] = _COMMANDS) -> Maker:
    """An event maker (a fresh memo on each call): a shell call, an edit or a read."""
    shape = draw(st.sampled_from(["shell", "shell", "shell", "edit", "read"]))
    result = draw(st.sampled_from(_RESULTS)) if draw(st.integers(0, 5)) else None
    code = draw(st.sampled_from([None, 0, 1]))
    failed = result is not None and (code == 1 or (code is None and result.startswith("error")))
    if shape == "shell":
        command = draw(st.sampled_from(commands))
        action = ToolAction("bash", ToolKind.SHELL, command, command=command)
        args: dict[str, object] = {"command": command}
    else:
        kind = ToolKind.EDIT if shape == "edit" else ToolKind.READ
        action = ToolAction(shape, kind, "/w/a.py", path="/w/a.py")
        args = {"path": "/w/a.py"}

    def make(position: int) -> ToolEvent:
        return ToolEvent(position, action, args, result, code, failed)

    return make


# Positions as an Analysis gives them: in message order, several calls to a message.
_history = st.lists(st.tuples(_event(), st.integers(0, 2)), max_size=25)
# Mostly check runs: enough distinct checks for the newest-first walk to stop early.
_checks = st.lists(st.tuples(_event(_CHECKS), st.integers(0, 2)), max_size=25)


def _events(history: Sequence[tuple[Maker, int]]) -> list[ToolEvent]:
    position, events = 0, []
    for make, step in history:
        position += step
        events.append(make(position))
    return events


def _plain_backed(events: Sequence[ToolEvent]) -> set[int]:
    """The pass the lazy backing replaced: every event read, oldest first."""
    backed: set[int] = set()
    since: int | None = None
    for event in events:
        command = event.action.command or ""
        if change_of(event) and not commit_made(event) and " push" not in f" {command}":
            since = None
        proof = (is_check_run(event) and check_passed(event)) or commit_made(event)
        pushed = "push" in command and re.search(r"\bgit\s+push\b", command)
        if proof or (not event.failed and event.result and pushed):
            since = event.position
        if since is not None:
            backed.update(range(since, event.position + 2))
    return backed


@settings(max_examples=400, deadline=None)
@given(_history)
def test_the_backing_of_a_text_is_the_whole_pass(history: list[tuple[Maker, int]]) -> None:
    plain = _plain_backed(_events(history))
    lazy = work._Backed(_events(history))
    end = sum(step for _, step in history) + 3
    assert {p for p in range(-1, end) if p in lazy} == {p for p in plain if p < end}


def _plain_latest(events: Sequence[ToolEvent], previous: Sequence[str]) -> tuple[str, ...]:
    latest = {check_key(e): e for e in previous}
    for event in events:
        kind = is_check_run(event)
        if kind:
            entry = f"{kind} `{check_target(event.action.command or '')}`: {check_result(event)}"
            latest.pop(check_key(entry), None)
            latest[check_key(entry)] = entry
    return tuple(latest.values())[-MAX_LATEST:]


_carried = st.lists(
    st.sampled_from([
        "tests `pytest tests/test_a.py`: passed", "tests `pytest tests/test_a.py`: failed",
        "lint `ruff check .`: passed", "build `make build`: failed", "tests `tox`: passed",
    ]), max_size=6,
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.one_of(_history, _checks), _carried)
def test_the_newest_results_are_the_whole_pass(
    history: list[tuple[Maker, int]], previous: list[str]
) -> None:
    assert latest_results(_events(history), previous) == _plain_latest(_events(history), previous)


def _plain_between(events: Sequence[ToolEvent], start: int, end: int) -> str:
    """The eager change list the fix log kept: every event's change, then bisected."""
    at = [i for i, e in enumerate(events) if change_of(e) is not None]
    names = [change for e in events if (change := change_of(e)) is not None]
    low, high = bisect.bisect_right(at, start), bisect.bisect_left(at, end)
    changes = list(dict.fromkeys(names[low:high]))
    more = len(changes) - 3
    return ", ".join(changes[-3:]) + (f" (+{more} earlier)" if more > 0 else "") if changes else ""


@settings(max_examples=300, deadline=None)
@given(_history, st.integers(0, 26), st.integers(0, 26))
def test_a_fix_names_the_changes_an_eager_log_would(
    history: list[tuple[Maker, int]], first: int, second: int
) -> None:
    events = _events(history)
    log = FixLog(OpenFailures())
    for index, event in enumerate(events):
        log.seen(index, event)
    plain = _events(history)
    if first < len(events) and second < len(events):
        found = log._between(events[first], events[second])
        assert found == (_plain_between(plain, first, second) if second > first else "")
