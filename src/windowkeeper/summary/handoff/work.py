"""Where the work stands (design §5 section 4): work items with their evidence, the
latest check results, the errors fixed along the way, the rest of the done work, and
what is in progress or pending — written deterministically.

"Done" needs evidence from a tool result: a write or edit that succeeded, a test run that
passed, a commit, a command that exited 0 after doing something; tracker reads and
updates, ``chmod`` and ``mkdir`` are no work. Work done while a work item is claimed is
that item's evidence (:mod:`.items`). A failure a later result resolved is listed under
"fixed along the way" with its fix (:mod:`.fixes`), never as open. When the agent keeps a
todo or plan list (a tool call carrying items with a status), that list is the work
state, each done item checked for evidence since it was last open.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ...analysis.checks import check_passed, hidden_failure, is_check_run
from ...analysis.commands import is_bookkeeping, is_read_only, short_command
from ...analysis.events import ToolEvent
from ...analysis.facts import (
    caseless_search,
    clued_items,
    collapse,
    dedupe,
    item_sentences,
    prose,
    word_clues,
)
from ...analysis.outputs import is_test_command, test_summary
from ...analysis.probes import is_probe
from ...analysis.resolution import OpenFailures, segments
from ...analysis.todos import TodoItem
from ...analysis.toolshapes import EDIT_KIND, SHELL_KIND, WRITE_KIND, ToolAction, change_verb
from .fixes import FixLog, change_of, merged_fixed, what_failed
from .items import ItemTracker, evidence_key, is_closed
from .model import WorkState
from .plans import stated_plan
from .progress import latest_results, newest_changes, newest_todos
from .trail import commit_made

_GIT_PUSH = re.compile(r"\bgit\s+push\b")

_TIMES = re.compile(r" ×(\d+)$")

MAX_DONE, MAX_PLAN = 24, 6
_FIXING = "Fixing the failure of"
# A sentence that asks, plans or checks claims nothing.
_TENTATIVE = re.compile(
    r"[?:]$|\b(?:to see if|to check|to verify|whether|let me|let's|if (?:it|this|the))\b", re.I
)
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have) (?:fixed|implemented|completed|finished|resolved|added|updated)"
    r"|(?:is|are|has been|have been) (?:fixed|implemented|done|complete|resolved)"
    r"|all (?:the )?tests (?:now )?pass|works now|now works|successfully (?:fixed|implemented))",
    re.IGNORECASE,
)
_claim = caseless_search(_CLAIM)  # lowered in ASCII text: the same answer, faster
# A word each alternative of _CLAIM holds (facts.Clues): a sentence none of them is in
# is not searched (a case-insensitive alternation is tried at every character).
_CLAIM_CLUES = word_clues(
    "fixed", "implemented", "complete", "finished", "resolved", "added", "updated", "done",
    "pass", "works",
)  # fmt: skip


_STAGING = re.compile(r"git\s+(?:add|stage|restore\s+--staged|reset)\b")


def _staging(command: str) -> bool:
    """Staging files only (the commit that follows is the work)."""
    if "git" not in command and "cd" not in command:
        return False  # no step can be either (a step is the command's words, collapsed)
    steps = segments(command)
    return bool(steps) and all(_STAGING.match(s) or s.startswith("cd ") for s in steps)


def _target(action: ToolAction) -> str:
    return collapse(action.path or action.target, 120)


def _evidence(event: ToolEvent) -> str | None:
    """What a successful call proves was done, or ``None`` when it proves nothing."""
    if event.result is None or event.failed:
        return None
    action = event.action
    if action.kind in (WRITE_KIND, EDIT_KIND):
        verb = change_verb(action.kind, event.result).capitalize()
        return f"{verb} {_target(action)} ({action.name} ok)"
    if action.kind is not SHELL_KIND or not action.command:
        return None
    if is_test_command(action.command[:2_000]):
        if not check_passed(event):
            return None  # its exit code was piped away and its output says it failed
        summary = test_summary(event.result)
        command = short_command(action.command, 120)
        return f"Tests passed: `{command}`" + (f" ({summary})" if summary else "")
    commit = commit_made(event)
    if commit:
        return f"Committed {commit[0]}: {collapse(commit[1], 80)}"
    # The short form only once the command may be work (most are looks: it was made for
    # every call and dropped).
    if is_read_only(action.command) or is_bookkeeping(action.command):
        return None  # looks and bookkeeping (tracker reads and updates, chmod) are no work
    command = short_command(action.command, 120)
    if _staging(command):
        return None  # staging files only: the commit that follows is the work
    if is_probe(action.command):
        return None  # inline code that only looked
    if hidden_failure(event):
        return None  # its exit code was piped away and its output says it failed
    code = f"exit {event.exit_code}" if event.exit_code is not None else "no error reported"
    return f"Ran `{command}` ({code})"


class DoneSteps:
    """The done list: a step done again (its key, the text before ``" ("``, the same as
    the newest item's with that key) moves that item to the end with its count raised.

    The newest item of a key is found through a dictionary (key → the positions of its
    items, oldest first) instead of a scan back through the list, which made a long
    history's walk quadratic in its done items. The items are kept in a dictionary by
    position: popping one and appending keeps the list's order."""

    def __init__(self, items: Sequence[str]) -> None:
        self._items: dict[int, str] = {}
        self._by_key: dict[str, list[int]] = {}
        self._next = 0
        for item in items:
            self._append(item)

    def _append(self, item: str) -> None:
        self._items[self._next] = item
        self._by_key.setdefault(item.split(" (", 1)[0], []).append(self._next)
        self._next += 1

    def record(self, proof: str) -> None:
        again = self._by_key.get(proof.split(" (", 1)[0])
        self._append(_again(self._items.pop(again.pop())) if again else proof)

    def items(self) -> list[str]:
        return list(self._items.values())


@dataclass
class _Walk:
    """What one pass over the events found besides the done list."""

    done: DoneSteps
    evidence_at: list[int]
    last_test: ToolEvent | None = None
    edited_since_test: list[str] = field(default_factory=list)


def work_state(
    events: Sequence[ToolEvent],
    assistant: Sequence[tuple[int, str]],
    previous: WorkState,
) -> tuple[WorkState, OpenFailures]:
    """The work state of the events merged with the previous one, and the failure
    tracker (fed with every event, for the open errors)."""
    tracker = OpenFailures()
    fixes = FixLog(tracker, assistant)
    items = ItemTracker(events, previous.items)
    walk = _Walk(DoneSteps(previous.done), [], None, [])
    for index, event in enumerate(events):
        fixes.seen(index, event)
        resolved = tracker.add(event)
        if resolved:
            fixes.resolved(event, resolved)
        elif event.failed and tracker.replaced(event):
            fixes.replaced(event)
        attributed = items.add(index)
        proof = None if attributed else _evidence(event)
        if attributed or proof:
            walk.evidence_at.append(event.position)
        if proof is not None:
            _record(walk, event, proof)
    for event in events:  # a failing test run is also a "last test run"
        if _is_test(event) and (walk.last_test is None or event.position > walk.last_test.position):
            walk.last_test = event
    todos = newest_todos(events)
    if todos is not None:
        state = _from_todos(todos, walk.evidence_at, walk.done.items(), previous)
    else:
        state = _from_events(walk, tracker, events, assistant, previous)
    found = items.items()
    if any(not is_closed(i) for i in found):
        # The item's status says it (and Open Errors what failed).
        progress = [p for p in state.in_progress if not p.startswith(_FIXING)]
        state = replace(state, in_progress=tuple(progress))
    state = replace(
        state, items=found, latest=latest_results(events, previous.latest),
        fixed=merged_fixed(previous.fixed, fixes.fixed),
        changes=newest_changes(events, previous.changes),
    )  # fmt: skip
    return state, tracker


def _record(walk: _Walk, event: ToolEvent, proof: str) -> None:
    # A step done again (a file edited again, a script run again, in turn with other
    # steps) is one item with a count, listed where it was done last.
    walk.done.record(proof)
    if proof.startswith("Tests passed") or _is_test(event):
        walk.last_test, walk.edited_since_test = event, []
    elif event.action.kind in (WRITE_KIND, EDIT_KIND):
        walk.edited_since_test.append(_target(event.action))


def _again(item: str) -> str:
    match = _TIMES.search(item)
    if match:
        return f"{item[: match.start()]} ×{int(match.group(1)) + 1}"
    return f"{item} ×2"


def _is_test(event: ToolEvent) -> bool:
    command = event.action.command if event.action.kind is SHELL_KIND else None
    if not command or event.result is None:
        return False
    return is_test_command(command[:2_000])


def _from_events(
    walk: _Walk,
    tracker: OpenFailures,
    events: Sequence[ToolEvent],
    assistant: Sequence[tuple[int, str]],
    previous: WorkState,
) -> WorkState:
    in_progress: list[str] = []
    open_events = tracker.events()
    newest = open_events[-1] if open_events else None
    if newest is not None and not any(change_of(e) for e in events if e.position > newest.position):
        in_progress.append(f"{_FIXING} {what_failed(newest)}")
    last_test, edited = walk.last_test, walk.edited_since_test
    if last_test is not None and edited and not last_test.failed:
        in_progress.append(
            f"Changed since the last passing test run: {', '.join(dedupe(edited)[-5:])}"
        )
    claims = _unverified_claims(assistant, last_test, events)
    pending = stated_plan(assistant, events) or list(previous.pending)
    done = walk.done.items()
    return WorkState(
        tuple(done[-MAX_DONE:]), tuple(claims), tuple(in_progress), tuple(pending[:MAX_PLAN]),
        _earlier(previous.earlier, done[:-MAX_DONE]),
    )  # fmt: skip


def _earlier(
    previous: Sequence[tuple[str, int]], dropped: Sequence[str]
) -> tuple[tuple[str, int], ...]:
    counts = dict(previous)
    for item in dropped:
        verb = item.split(" ", 1)[0].rstrip(":").lower()
        counts[verb] = counts.get(verb, 0) + 1
    return tuple(counts.items())


def _unverified_claims(
    assistant: Sequence[tuple[int, str]], last_test: ToolEvent | None, events: Sequence[ToolEvent]
) -> list[str]:
    """Completion claims of the newest assistant texts that no result backs: neither a
    passing test after them, nor a passing check, commit or push right before them (with
    no change in between)."""
    found: list[str] = []
    backed = _Backed(events)
    for position, text in reversed(assistant[-6:]):
        if last_test is not None and not last_test.failed and last_test.position > position:
            continue
        if position in backed:
            continue
        said = item_sentences(" ".join(prose(text[:4_000]).split()))
        for sentence in clued_items(said, _CLAIM_CLUES):
            if _claim(sentence) and not _TENTATIVE.search(sentence):
                found.append(collapse(sentence, 200))
        if len(found) >= 3:
            break
    return dedupe(found)[:3]


class _Backed:
    """Whether the text at a position follows a result that backs it: a passing check, a
    commit or a push before it, with no change in between (a change at the backing
    call's own message counts before it; the text right after a call's message is
    still backed by it).

    Asked for the few newest texts only, so it looks at the events around each one (the
    newest that set or cleared the backing before it, then those up to it), not at
    every event of the history. The events' positions must not decrease (an
    :class:`~windowkeeper.analysis.events.Analysis` lists them in message order)."""

    def __init__(self, events: Sequence[ToolEvent]) -> None:
        self.events = events
        self.positions = [event.position for event in events]

    def __contains__(self, position: int) -> bool:
        events = self.events
        first = bisect.bisect_left(self.positions, position - 1)  # may reach ``position``
        since: int | None = None
        for k in range(first - 1, -1, -1):
            if _backs(events[k]):
                since = events[k].position
                break
            if _clears(events[k]):
                break
        for event in events[first:]:
            if _backs(event):
                since = event.position
            elif _clears(event):
                since = None
            if since is not None and since <= position:
                return True
            if event.position > position:
                break  # what follows backs only later positions
        return False


def _backs(event: ToolEvent) -> bool:
    """A passing check, a commit, or a push that went through."""
    command = event.action.command or ""
    if (is_check_run(event) and check_passed(event)) or commit_made(event):
        return True
    pushed = "push" in command and _GIT_PUSH.search(command)
    return bool(not event.failed and event.result and pushed)


def _clears(event: ToolEvent) -> bool:
    """A change (not a commit or push) that the backing results before it do not cover."""
    command = event.action.command or ""
    return bool(change_of(event) and not commit_made(event) and " push" not in f" {command}")


def _from_todos(
    lists: list[tuple[int, list[TodoItem]]],
    evidence_at: list[int],
    done: list[str],
    previous: WorkState,
) -> WorkState:
    """The newest list is the state; a done item is verified when evidence exists between
    the list where it was last open and the one that marked it done."""
    last_open: dict[str, int] = {}
    verified: dict[str, bool] = {}
    for position, items in lists:
        for todo in items:
            if todo.status != "done":
                last_open[todo.text] = position
            elif todo.text not in verified:
                since = last_open.get(todo.text, -1)
                verified[todo.text] = any(since < at <= position for at in evidence_at)
    newest = lists[-1][1]
    by = {s: [t.text for t in newest if t.status == s] for s in ("done", "in progress", "pending")}
    proven = [t for t in by["done"] if verified.get(t, False)]
    claimed = [f"{t} (marked done, no tool result shows it)" for t in by["done"] if t not in proven]
    return WorkState(
        tuple(proven + done[-6:]), tuple(claimed), tuple(by["in progress"]),
        tuple(by["pending"]), previous.earlier,
    )  # fmt: skip


def evidence_keys(state: WorkState) -> set[str]:
    """The steps every item's evidence holds (``closed``, ``committed …``)."""
    return {evidence_key(e) for item in state.items for e in item.evidence}
