"""Latest first (SPEC §6 v3): the newest result of each check, the last action, and the
next step derived from the newest actions — all as of compaction time.

The next step is the agent's newest stated intent while no call went past it; else the
open item of its newest todo list; else what the state of the work asks for next (the
failure of the last call, a change not tested since, a tested item not yet closed,
committed or pushed the way earlier items were); never a sentence later calls superseded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ...analysis.changes import edit_change
from ...analysis.checks import check_result, check_target, is_check_run
from ...analysis.events import ToolEvent
from ...analysis.facts import caseless_search, collapse, dedupe, item_sentences, paragraphs, prose
from ...analysis.installs import missing_names
from ...analysis.resolution import counts_as_failure
from ...analysis.todos import TodoItem, event_todos
from ...analysis.toolshapes import (
    EDIT_KIND,
    READ_KIND,
    SEARCH_KIND,
    SHELL_KIND,
    WRITE_KIND,
    change_verb,
)
from .fixes import what_failed
from .items import evidence_key, item_status
from .model import OpenError, WorkItem

_TIMES = re.compile(r" ×\d+$")

MAX_LATEST = 4
MAX_CHANGES = 4
_INTENT = re.compile(
    r"\b(?:let me|let's|I'll|I will|I'm going to|I am going to|next,? I|now I(?:'ll| will)?"
    r"|the next step|next step is)\b",
    re.IGNORECASE,
)
_intent = caseless_search(_INTENT)  # lowered in ASCII text: the same answer, faster
# An intent that names its object only by referring back ("that function", "fix it").
_REFERS = re.compile(r"\b(?:that|this|these|those|it|them)\b(?! (?:is|was|the|a|an)\b)", re.I)
INTENT_LABEL = "the agent's newest stated intent; no call followed it yet"
DERIVED_LABEL = "derived at compaction time from the newest actions"
_OPEN = "resolve the open failure of "
STARTED_LABEL = "the agent's newest stated intent; its last calls may have done part of it"


def latest_results(events: Sequence[ToolEvent], previous: Sequence[str]) -> tuple[str, ...]:
    """The newest result of each check (``tests `mix test`: passed (…)``), the carried
    ones updated by these events; newest last. A test target is its command; a lint or
    build target its program and subcommand (whatever files it ran over)."""
    # Read newest first: once MAX_LATEST checks are found, older runs cannot be shown
    # (a check run again is listed at its newest run).
    newest: dict[str, str] = {}
    for event in reversed(events):
        kind = is_check_run(event)
        if kind:
            entry = f"{kind} `{check_target(event.action.command or '')}`: {check_result(event)}"
            newest.setdefault(check_key(entry), entry)
            if len(newest) >= MAX_LATEST:
                break
    carried = {check_key(e): e for e in previous}
    kept = [entry for key, entry in carried.items() if key not in newest]
    return tuple([*kept, *reversed(newest.values())])[-MAX_LATEST:]


def newest_changes(events: Sequence[ToolEvent], previous: Sequence[str]) -> tuple[str, ...]:
    """The newest edits with what they changed (``path: `old` → `new```, the gist of
    :func:`~windowkeeper.analysis.changes.edit_change`), the carried ones first; newest
    last. A reader asks what the code does now, which "edited helpers.py" does not say."""
    # Only the newest MAX_CHANGES distinct entries are kept: the events are read newest
    # first until that many are found (a gist costs a diff of the edit's texts), which
    # keeps what ``dedupe(keep_last=True)`` of all of them keeps, in the same order.
    newest: dict[str, None] = {}
    for event in reversed(events):
        change = edit_change(event)
        if change is not None:
            newest.setdefault(f"{collapse(change[0], 120)}: {change[1]}")
            if len(newest) == MAX_CHANGES:
                return tuple(reversed(newest))
    return tuple(dedupe([*previous, *reversed(newest)], keep_last=True)[-MAX_CHANGES:])


def check_key(entry: str) -> str:
    kind, _, rest = entry.partition(" `")
    target = rest.split("`: ", 1)[0]
    if kind == "tests":
        return f"{kind} {target}"
    return f"{kind} {' '.join(target.split(' && ')[-1].split()[:2])}"


def newest_todos(events: Sequence[ToolEvent]) -> list[tuple[int, list[TodoItem]]] | None:
    """Every todo/plan list the agent wrote, with its position; ``None`` when none."""
    lists = [(e.position, items) for e in events if (items := event_todos(e))]
    return lists or None


def last_action(events: Sequence[ToolEvent], assistant: Sequence[tuple[int, str]]) -> str:
    """The newest call with its result, the agent's words that led to it, and the last
    change before it when the newest call only looked."""
    if not events:
        return ""
    event = events[-1]
    text = f"{_did(event)} ({_outcome(event)})"
    said = [t for p, t in assistant if p <= event.position]
    if said and assistant[len(said) - 1][0] >= max(
        (e.position for e in events[:-1] if e.position < event.position), default=-1
    ):
        words = " ".join(_sentences_of(said[-1]))
        if words:
            text += f"; the agent's words before it: {collapse(words, 220)}"
    if event.action.kind in (READ_KIND, SEARCH_KIND):
        change = next((e for e in reversed(events) if _changed(e)), None)
        if change is not None:
            text += f"; the last change before it: {_did(change)} ({_outcome(change)})"
    return text


def _changed(event: ToolEvent) -> bool:
    kind = event.action.kind
    return kind in (WRITE_KIND, EDIT_KIND) and not event.failed and event.result is not None


def _did(event: ToolEvent) -> str:
    action = event.action
    if action.kind is SHELL_KIND:
        return f"ran {what_failed(event)}"
    verb = {READ_KIND: "read", SEARCH_KIND: "searched"}.get(action.kind, f"called {action.name} on")
    if action.kind in (WRITE_KIND, EDIT_KIND):
        verb = change_verb(action.kind, event.result)
    return f"{verb} {collapse(action.path or action.target, 120)}"


def _outcome(event: ToolEvent) -> str:
    if event.result is None:
        return "no result yet"
    if not event.failed:
        return "ok"
    if not counts_as_failure(event):
        return f"exit {event.exit_code}: nothing found"
    return f"exit {event.exit_code}" if event.exit_code is not None else "failed"


def next_step(
    assistant: Sequence[tuple[int, str]],
    events: Sequence[ToolEvent],
    items: Sequence[WorkItem],
    previous: str,
    errors: Sequence[OpenError] = (),
    plan: Sequence[str] = (),
) -> str:
    """What the agent was about to do at compaction time (see the module docstring):
    its newest intent when no call followed it; else the step the newest actions call
    for, with the newest intent beside it when only its own calls followed it."""
    intent, rounds = _newest_intent(assistant, events)
    if intent and rounds == 0:
        return f"Next ({INTENT_LABEL}): {intent}"
    if not events:
        return previous
    todos = next((found for e in reversed(events) if (found := event_todos(e))), None)
    open_items = [t.text for t in todos if t.status != "done"] if todos else []
    if open_items:
        derived: str | None = f"the newest todo item open: {collapse(open_items[0], 200)}"
    else:
        derived = _from_state(events, items, errors, plan)
    if derived is not None and derived.startswith(_OPEN) and intent and rounds == 1:
        # The agent was looking into something when the turns ended: its words say what;
        # the open failure stays what the looking is for.
        return f"Next ({STARTED_LABEL}): {intent} (still open: {derived[len(_OPEN) :]})"
    if derived is None:
        if intent and rounds == 1:
            return f"Next ({STARTED_LABEL}): {intent}"
        derived = f"continue after the last action ({_did(events[-1])})"
    # The intent that led to the last calls is quoted with the last action.
    return f"Next ({DERIVED_LABEL}): {derived}"


def _newest_intent(
    assistant: Sequence[tuple[int, str]], events: Sequence[ToolEvent]
) -> tuple[str, int]:
    """The newest assistant text's last stated intent, and how many call rounds followed
    it (its own calls are the first)."""
    if not assistant:
        return "", 0
    position, text = assistant[-1]
    rounds = len({e.position for e in events if e.position >= position})
    said = list(_sentences_of(text))
    k = next(
        (k for k in reversed(range(len(said)))
         if _intent(said[k]) and not said[k].endswith("?")),
        None,
    )  # fmt: skip
    if k is None:
        return "", rounds
    intent = said[k].rstrip(":")
    if k and _REFERS.search(intent) and not said[k - 1].endswith("?"):
        # "Let's look at that function": the sentence before names what it refers to.
        intent = f"{said[k - 1]} {intent}"
    return collapse(intent, 300), rounds


def _from_state(
    events: Sequence[ToolEvent],
    items: Sequence[WorkItem],
    errors: Sequence[OpenError],
    plan: Sequence[str],
) -> str | None:
    """The step the state of the work calls for, or ``None`` when it calls for none."""
    last = events[-1]
    if last.result is not None and counts_as_failure(last):
        return _after_failure(last)
    working = [i for i in items if item_status(i).startswith("in progress")]
    steps = {evidence_key(e).split(" ", 1)[0] for i in items for e in i.evidence}
    item = working[-1] if working else None
    status = item_status(item) if item is not None else ""
    after = _after_tests(item, steps) if item is not None else ""
    if plan and (item is None or status.endswith("not tested since")):
        more = f" (then {len(plan) - 1} more: see Pending)" if len(plan) > 1 else ""
        return f"the stated plan's next step: {plan[0]}{more}" + (
            f"; then check the changes of {item.id}" + after if item is not None else ""
        )
    if item is not None and status.endswith("not tested since"):
        changed = _changed_files(item)
        return f"check the changes of {item.id} ({changed}): no test ran after them" + after
    if errors:
        what = errors[-1].what
        return f"{_OPEN}{what} (see Open Errors), then run it again"
    if item is None:
        return None
    if status.endswith("checks failing"):
        return f"make the failing checks of {item.id} pass" + after
    if status.endswith("tested, not closed"):
        return after.removeprefix(", then ") or f"finish {item.id}"
    return f"continue {item.id}"


def _after_failure(last: ToolEvent) -> str:
    """The step a failed last call asks for: what it says is missing installed, then the
    same call again (the obvious continuation a reader must not have to infer)."""
    missing = missing_names(last.result or "", lower=False)
    if not missing:
        return f"fix the failure of {what_failed(last)} (see Open Errors)"
    names = ", ".join(f"`{name}`" for name in missing[:3])
    return f"install the missing {names} (see Open Errors), then run {what_failed(last)} again"


def _after_tests(item: WorkItem, steps: set[str]) -> str:
    """``, then close X, commit and push`` as earlier items were finished."""
    done = [w for w, step in (("close " + item.id, "closed"), ("commit", "committed"),
                              ("push", "pushed")) if step in steps]  # fmt: skip
    if not done:
        return ""
    return ", then " + (", ".join(done[:-1]) + " and " + done[-1] if len(done) > 1 else done[0])


def _changed_files(item: WorkItem) -> str:
    names = [e.split(" ", 1)[1] for e in item.evidence if e.startswith(("edited ", "wrote "))]
    shown = [_TIMES.sub("", n).rsplit("/", 1)[-1] for n in names[-3:]]
    return ", ".join(dict.fromkeys(shown)) or "its changes"


def _sentences_of(text: str) -> Iterator[str]:
    for paragraph in paragraphs(prose(text[:6_000])):
        yield from item_sentences(paragraph)
