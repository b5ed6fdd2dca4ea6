"""Where the work stands (design §5 sections 4-6 and 9): subtasks with evidence, open
errors, decisions with their reasons, and the next step — written deterministically.

"Done" needs evidence from a tool result: a write or edit that succeeded, a test run that
passed, a commit, a command that exited 0 after doing something. A failure that a later
result resolved is listed under the step that resolved it, never as open. When the agent
keeps a todo or plan list (a tool call carrying items with a status), that list is the
work state, each done item checked for evidence since it was last open.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from ...analysis.commands import is_bookkeeping, is_read_only, short_command
from ...analysis.events import ToolEvent
from ...analysis.facts import (
    Clues,
    clued_items,
    collapse,
    dedupe,
    item_sentences,
    paragraphs,
    prose,
)
from ...analysis.gist import is_stub, stub_error
from ...analysis.outputs import event_errors, is_test_command, last_line, test_summary
from ...analysis.resolution import OpenFailures
from ...analysis.todos import TodoItem, todo_items
from ...analysis.toolshapes import ToolAction, ToolKind
from .claims import closed_items, open_claim
from .model import OpenError, WorkState
from .text import shown_command

MAX_DONE, MAX_ERRORS, MAX_DECISIONS, MAX_PLAN = 24, 5, 16, 6
_COMMIT = re.compile(r"^\[[^\]\s]+ ([0-9a-f]{7,40})\] (.+)$", re.M)
_CLAIM = re.compile(
    r"\b(?:I(?:'ve| have) (?:fixed|implemented|completed|finished|resolved|added|updated)"
    r"|(?:is|are|has been|have been) (?:fixed|implemented|done|complete|resolved)"
    r"|all (?:the )?tests (?:now )?pass|works now|now works|successfully (?:fixed|implemented))",
    re.IGNORECASE,
)
_INTENT = re.compile(
    r"\b(?:let me|let's|I'll|I will|I'm going to|I am going to|next,? I|now I(?:'ll| will)?"
    r"|the next step|next step is)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|instead of|rather than|the fix (?:is|was|will be)|root cause"
    r"|(?:I'll|I will|we'll|we will|let's) (?:use|go with|switch|keep|avoid|replace)"
    r"|going with|opted|chose|chosen|the (?:bug|problem|issue|culprit) (?:is|was|lives)"
    r"|turns out|so only)\b",
    re.IGNORECASE,
)
# _DECISION's alternatives lower-cased, each led by a word it needs (facts.Clues): a clue
# matches wherever an alternative does, and hardly anywhere else, so the sentences of
# items that only say "will", "fix" or "issue" are never searched.
_CHOICE = r"(?:use|go with|switch|keep|avoid|replace)"
_DECISION_CLUES: Clues = tuple(
    (word, re.compile(pattern))
    for word, pattern in (
        ("decide", "decide"), ("instead", "instead of"), ("rather", "rather than"),
        ("fix", "the fix (?:is|was|will be)"), ("root", "root cause"),
        ("'ll", "(?:i|we)'ll " + _CHOICE), ("will", "(?:i|we) will " + _CHOICE),
        ("let's", "let's " + _CHOICE), ("going", "going with"), ("opted", "opted"),
        ("chose", "chose"), ("the ", "the (?:bug|problem|issue|culprit) (?:is|was|lives)"),
        ("turns", "turns out"), ("only", "so only"),
    )
)  # fmt: skip


def _target(action: ToolAction) -> str:
    return collapse(action.path or action.target, 120)


def _evidence(event: ToolEvent) -> str | None:
    """What a successful call proves was done, or ``None`` when it proves nothing."""
    if event.result is None or event.failed:
        return None
    action = event.action
    if action.kind in (ToolKind.WRITE, ToolKind.EDIT):
        verb = "Wrote" if action.kind is ToolKind.WRITE else "Edited"
        return f"{verb} {_target(action)} ({action.name} ok)"
    if action.kind is not ToolKind.SHELL or not action.command:
        return None
    command = short_command(action.command, 120)
    if is_test_command(action.command[:2_000]):
        summary = test_summary(event.result)
        return f"Tests passed: `{command}`" + (f" ({summary})" if summary else "")
    commit = _COMMIT.search(event.result[:2_000]) if "commit" in action.command else None
    if commit:
        return f"Committed {commit.group(1)}: {collapse(commit.group(2), 80)}"
    if is_read_only(action.command) or is_bookkeeping(action.command):
        return None  # looks and bookkeeping (tracker reads and updates, chmod) are no work
    code = f"exit {event.exit_code}" if event.exit_code is not None else "no error reported"
    return f"Ran `{command}` ({code})"


def work_state(
    events: Sequence[ToolEvent], assistant: Sequence[tuple[int, str]], previous: WorkState
) -> tuple[WorkState, OpenFailures]:
    """The work state of the turns merged with the previous one, and the failure tracker
    (fed with every event, for the open errors)."""
    tracker = OpenFailures()
    done: list[str] = list(previous.done)
    last_test: ToolEvent | None = None
    edited_since_test: list[str] = []
    evidence_at: list[int] = []
    for index, event in enumerate(events):
        resolved = tracker.add(event)
        proof = closed_items(event, events[:index]) or _evidence(event)
        if proof is None:
            continue
        evidence_at.append(event.position)
        if resolved:
            proof += _resolves([e for r in resolved for e in (*tracker.replaced(r), r)])
        # A step repeated, or a pair of steps repeated in turn (edit, run, edit, run), is
        # one item with a count.
        key = proof.split(" (", 1)[0]
        again = [i for i in (-1, -2) if len(done) >= -i and done[i].split(" (", 1)[0] == key]
        if again and not resolved:
            done[again[0]] = _again(done[again[0]])
        else:
            done.append(proof)
        if proof.startswith("Tests passed") or _is_test(event):
            last_test, edited_since_test = event, []
        elif event.action.kind in (ToolKind.WRITE, ToolKind.EDIT):
            edited_since_test.append(_target(event.action))
    for event in events:  # a failing test run is also a "last test run"
        if _is_test(event) and (last_test is None or event.position > last_test.position):
            last_test = event
    todos = _newest_todos(events)
    if todos is not None:
        state = _from_todos(todos, evidence_at, done, previous)
    else:
        state = _from_events(done, tracker, last_test, edited_since_test, assistant, previous)
        claim = open_claim(events)  # its spec is in the Task Spec section (specs.py)
        if claim:
            state = replace(state, in_progress=(claim, *state.in_progress))
    return state, tracker


def _again(item: str) -> str:
    match = re.search(r" ×(\d+)$", item)
    if match:
        return f"{item[: match.start()]} ×{int(match.group(1)) + 1}"
    return f"{item} ×2"


def _is_test(event: ToolEvent) -> bool:
    command = event.action.command if event.action.kind is ToolKind.SHELL else None
    if not command or event.result is None:
        return False
    return is_test_command(command[:2_000])


# Distinct errors named for the failures one success resolved (the rest are counted).
RESOLVED_ERRORS = 4


def _resolves(failures: Sequence[ToolEvent]) -> str:
    """``"; resolves …"`` naming the errors of the failures a success resolved: the
    attempts that failed before it are what was tried, not only the last one."""
    errors = list(dict.fromkeys(e for e in map(_first_error, failures) if e))
    if not errors:
        return ""
    if len(failures) == 1:
        return f"; resolves the earlier failure: {errors[0]}"
    limit = 160 if len(errors) == 1 else 100
    shown = " | ".join(collapse(error, limit) for error in errors[:RESOLVED_ERRORS])
    more = f" (+{len(errors) - RESOLVED_ERRORS} more)" if len(errors) > RESOLVED_ERRORS else ""
    return f"; resolves {len(failures)} earlier failures: {shown}{more}"


def _first_error(event: ToolEvent) -> str:
    """The error a failure ends with (of a pruned result, the one its stub kept)."""
    if event.result and is_stub(event.result):
        return collapse(stub_error(event.result).split(" | ")[-1], 160)
    errors = event_errors(event)
    return collapse(errors[-1] if errors else last_line(event.result or ""), 160)


def _from_events(
    done: list[str],
    tracker: OpenFailures,
    last_test: ToolEvent | None,
    edited: list[str],
    assistant: Sequence[tuple[int, str]],
    previous: WorkState,
) -> WorkState:
    in_progress: list[str] = []
    open_events = tracker.events()
    if open_events:
        newest = open_events[-1]
        in_progress.append(f"Fixing the failure of {_what(newest)}")
    if last_test is not None and edited and not last_test.failed:
        in_progress.append(
            f"Changed since the last passing test run: {', '.join(dedupe(edited)[-5:])}"
        )
    claims = _unverified_claims(assistant, last_test)
    pending = _stated_plan(assistant) or list(previous.pending)
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


def _what(event: ToolEvent) -> str:
    action = event.action
    if action.kind is ToolKind.SHELL and action.command:
        return shown_command(short_command(action.command, 120))
    return f"{action.kind.value} {_target(action)}"


def _unverified_claims(
    assistant: Sequence[tuple[int, str]], last_test: ToolEvent | None
) -> list[str]:
    """Completion claims of the newest assistant texts with no passing test after them."""
    found: list[str] = []
    for position, text in reversed(assistant[-6:]):
        if last_test is not None and not last_test.failed and last_test.position > position:
            continue
        for sentence in item_sentences(" ".join(prose(text[:4_000]).split())):
            if _CLAIM.search(sentence) and not sentence.endswith("?"):
                found.append(collapse(sentence, 200))
        if len(found) >= 3:
            break
    return dedupe(found)[:3]


_PLAN_HEAD = re.compile(r"(?:next steps?|remaining|to do|todo|plan)\s*:?\s*$", re.IGNORECASE)


def _stated_plan(assistant: Sequence[tuple[int, str]]) -> list[str]:
    """The items of a plan list in the newest assistant text ("Next steps:" + a list)."""
    if not assistant:
        return []
    lines = prose(assistant[-1][1][:6_000]).splitlines()
    for index, line in enumerate(lines):
        if _PLAN_HEAD.search(line.strip().strip("*#")):
            items = [ln.strip() for ln in lines[index + 1 : index + 1 + MAX_PLAN]]
            listed = [
                re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", ln) for ln in items if ln[:1] in "-*+123456789"
            ]
            return [collapse(i, 200) for i in listed if i]
    return []


# --- todo and plan lists ------------------------------------------------------------------


def _newest_todos(events: Sequence[ToolEvent]) -> list[tuple[int, list[TodoItem]]] | None:
    """Every todo/plan list the agent wrote, with its position; ``None`` when none."""
    lists = [(e.position, items) for e in events if (items := todo_items(e.action.name, e.args))]
    return lists or None


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


# --- open errors, decisions, next step ------------------------------------------------------


def open_errors(tracker: OpenFailures, carried: Sequence[OpenError]) -> tuple[OpenError, ...]:
    """The newest failures still open: the carried ones a later success did not resolve,
    then the turns' own."""
    fresh = [_open_error(e) for e in tracker.events()]
    return tuple([*carried, *fresh][-MAX_ERRORS:])


def _open_error(event: ToolEvent) -> OpenError:
    action = event.action
    lines = event_errors(event)[-6:] or [_last_line(event.result or "")]
    if action.kind is ToolKind.SHELL and action.command:
        command = short_command(action.command, 200)
        return OpenError(shown_command(command), tuple(lines), event.exit_code, command)
    return OpenError(_what(event), tuple(lines), event.exit_code, None)


def _last_line(result: str) -> str:
    """The last line of a result; of a pruned one, the error its stub kept (the stub
    itself describes the call, which the handoff already names)."""
    return stub_error(result) if is_stub(result) else last_line(result)


def still_open(carried: Sequence[OpenError], events: Sequence[ToolEvent]) -> list[OpenError]:
    """The previous handoff's open errors that no event of these turns resolved."""
    if not carried:
        return []
    tracker = OpenFailures()
    pseudo = [_pseudo(error) for error in carried]
    for event in pseudo:
        tracker.add(event)
    for event in events:
        tracker.add(event)
    alive = {id(e) for e in tracker.events()}
    ran = {event.action.kind for event in events if event.result is not None and not event.failed}
    kept = []
    for error, event in zip(carried, pseudo, strict=True):
        if id(event) in alive and (error.command or ToolKind.EDIT not in ran):
            kept.append(error)
    return kept


def _pseudo(error: OpenError) -> ToolEvent:
    command = error.command or ""
    kind = ToolKind.SHELL if error.command else ToolKind.OTHER
    action = ToolAction("carried", kind, command or error.what, command=error.command)
    return ToolEvent(-1, action, {}, "\n".join(error.lines), error.exit_code, True)


def focus_words(topic: str | None) -> tuple[str, ...]:
    """The words of a focus topic that items are matched on."""
    return tuple(w for w in re.findall(r"\w+", (topic or "").lower()) if len(w) >= 3)


def decisions(
    assistant: Sequence[tuple[int, str]], previous: Sequence[str], focus: Sequence[str] = ()
) -> tuple[str, ...]:
    """Choices and findings the agent stated, with their reasons: the newest kept, and
    with a focus topic the ones about it first (kept last, where trimming reaches last)."""
    found: list[str] = []
    for _, text in reversed(assistant):
        found.extend(reversed(_decisions_in(text)))
        if not focus and len(set(found)) >= MAX_DECISIONS:
            break
    merged = dedupe([*previous, *reversed(found)], keep_last=True)
    about = [d for d in merged if any(w in d.lower() for w in focus)]
    rest = [d for d in merged if d not in about]
    kept = rest[len(rest) - max(0, MAX_DECISIONS - len(about)) :] + about[-MAX_DECISIONS:]
    return tuple(kept)


def _decisions_in(text: str) -> list[str]:
    body = prose(text[:20_000])
    items = clued_items(paragraphs(body), _DECISION_CLUES)
    return [
        collapse(s, 300)
        for item in items
        for s in item_sentences(item)
        if len(s) >= 20 and s[-1] not in "?:" and _DECISION.search(s)
    ]


def next_step(
    assistant: Sequence[tuple[int, str]], events: Sequence[ToolEvent], previous: str
) -> str:
    """What the agent was about to do, as of the cut, from its newest actions: its newest
    stated intent while no call followed the first call round after it (that round is
    how it set about it); else the open item of its newest todo list and its last call.
    An intent that later calls went past is superseded, never the next step."""
    if assistant:
        position, text = assistant[-1]
        if len({e.position for e in events if e.position >= position}) <= 1:
            intents = [s for s in _sentences_of(text) if _INTENT.search(s) and not s.endswith("?")]
            if intents:
                return collapse(intents[-1], 300)
    if not events:
        return previous
    event = events[-1]
    result = "no result kept" if event.result is None else ("failed" if event.failed else "ok")
    last = f"the last call was {_what(event)} ({result})"
    todos = _newest_todos(events)
    open_items = [t.text for t in todos[-1][1] if t.status != "done"] if todos else []
    if open_items:
        return f"As of the cut, the newest todo item open: {collapse(open_items[0], 200)}; {last}."
    return f"As of the cut, {last}; the turns after this handoff may have gone further."


def _sentences_of(text: str) -> Iterator[str]:
    for paragraph in paragraphs(prose(text[:6_000])):
        yield from item_sentences(paragraph)
