"""The extractive summarizer: a deterministic handoff body written without an LLM (SPEC §6).

It is the embedded default and the fallback when an LLM summarizer fails, so it must
never fail itself, never invent a user ask, and always fit its budget. Every section is
filled mechanically from the turns (and merged with the previous handoff's sections);
when the body is too long, the least valuable content is trimmed first and every trim
leaves a visible note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby

from .facts import (
    MODIFIED,
    NONE,
    READ,
    ToolEvent,
    best_indices,
    branch_hint,
    collapse,
    cwd_hint,
    dedupe,
    error_lines,
    exact_values,
    file_touches,
    is_background,
    is_test_command,
    largest_fitting,
    last_line,
    parse_sections,
    section_items,
    sentences,
    test_summary,
    tool_events,
    user_texts,
)
from .messages import Message, message_text
from .summarizer import NO_USER_SNAPSHOT, SECTION_TITLES, SummaryOutcome, SummaryRequest
from .tokens import estimate_tokens
from .toolshapes import ToolKind, shorten

SNAPSHOT_HEAD, SNAPSHOT_TAIL = 1_000, 400
GOAL_CHARS = 600
CONSTRAINT_CHARS = 600
MAX_NEW = {"constraints": 40, "decisions": 15, "questions": 10, "context": 40}
MAX_BLOCKED, BLOCKED_LINES = 3, 6
TRUNCATED = "\n[... summary cut to fit its token budget ...]"

Focus = Callable[[str], bool] | None


@dataclass(frozen=True)
class _Action:
    number: int
    verb: str
    text: str


@dataclass
class _Draft:
    """Everything the body can say, before trimming to the budget."""

    snapshot: str
    goal: str
    constraints: list[str]
    condensed: tuple[int, int, dict[str, int]] | None
    actions: list[_Action]
    state: dict[str, str]
    modified: list[str]
    blocked: list[str]
    decisions: list[str]
    questions: list[str]
    files: list[str]
    context: list[str]
    focus: Focus = None


class ExtractiveSummarizer:
    """Deterministic :class:`~windowkeeper.summarizer.Summarizer`; it never fails."""

    @property
    def name(self) -> str:
        return "extractive"

    def summarize(self, request: SummaryRequest) -> SummaryOutcome:
        draft = _draft(request)
        return SummaryOutcome(body=_fit(draft, request.budget_tokens), summarizer=self.name)


# --- gathering -------------------------------------------------------------------------


def _draft(request: SummaryRequest) -> _Draft:
    turns = request.turns
    text = request.previous_summary or ""
    # A previous summary without our headings (another summarizer's) is kept whole.
    unstructured = {"Critical Context": f"- Earlier summary: {collapse(text, 3_000)}"}
    previous = parse_sections(text) or (unstructured if text.strip() else {})
    events = [e for e in tool_events(turns) if not e.orphan]
    users = user_texts(turns)
    condensed, actions = _prior_actions(previous.get("Completed Actions", ""))
    start = max([a.number for a in actions] + [condensed[1] if condensed else 0]) + 1
    state, modified = _active_state(events, previous.get("Active State", ""))
    constraints = section_items(previous.get("Constraints & Preferences", "")) + _constraints(users)
    return _Draft(
        snapshot=_snapshot(request, previous),
        goal=_goal(users, previous.get("Goal", "")),
        constraints=dedupe(constraints),
        condensed=condensed,
        actions=actions + _new_actions(events, start),
        state=state,
        modified=modified,
        blocked=_blocked(events) or _carried_blocked(previous.get("Blocked", "")),
        decisions=dedupe(section_items(previous.get("Key Decisions", "")) + _decisions(turns)),
        questions=dedupe(
            section_items(previous.get("Resolved Questions", "")) + _questions(turns, users)
        ),
        files=_files(events, previous.get("Relevant Files", "")),
        context=_context(users, previous, request),
        focus=_focus(request.focus_topic),
    )


def _snapshot(request: SummaryRequest, previous: Mapping[str, str]) -> str:
    text = request.task_snapshot
    if text is None:
        carried = previous.get(SECTION_TITLES[0], "").strip()
        text = carried if carried and carried != NO_USER_SNAPSHOT else NO_USER_SNAPSHOT
    if len(text) <= SNAPSHOT_HEAD + SNAPSHOT_TAIL:
        return text
    omitted = len(text) - SNAPSHOT_HEAD - SNAPSHOT_TAIL
    return f"{text[:SNAPSHOT_HEAD]}\n[... {omitted:,} chars omitted ...]\n{text[-SNAPSHOT_TAIL:]}"


def _goal(users: Sequence[tuple[int, str]], carried: str) -> str:
    carried = collapse(carried, GOAL_CHARS)
    if carried and not carried.startswith(NONE):
        return carried
    if users:
        return collapse(users[0][1], GOAL_CHARS)
    return f"{NONE}: the summarized turns contain no user message."


_RULE = re.compile(
    r"\b(?:must|never|always|don'?t|do not|please|should(?:n'?t)?|prefer|avoid|only"
    r"|make sure|ensure|required?|cannot|can'?t|no need)\b",
    re.IGNORECASE,
)


def _constraints(users: Sequence[tuple[int, str]]) -> list[str]:
    found = [
        sentence if len(sentence) <= CONSTRAINT_CHARS else sentence[: CONSTRAINT_CHARS - 3] + "..."
        for _, text in users
        for sentence in sentences(text)
        if _RULE.search(sentence) and not sentence.endswith("?") and len(sentence) >= 8
    ]
    return dedupe(found)[-MAX_NEW["constraints"] :]


_PHRASES = {
    ToolKind.SHELL: ("ran", "Ran `{t}`"), ToolKind.READ: ("read", "Read {t}"),
    ToolKind.WRITE: ("wrote", "Wrote {t}"), ToolKind.EDIT: ("edited", "Edited {t}"),
    ToolKind.SEARCH: ("searched", "Searched '{t}'"), ToolKind.FETCH: ("fetched", "Fetched {t}"),
    ToolKind.WEB_SEARCH: ("searched", "Web-searched '{t}'"),
    ToolKind.OTHER: ("called", "Called {n} {t}"),
}  # fmt: skip
# What a condensed count of each verb counts, in the order condensed lines list them.
_NOUNS = {
    "ran": "command", "read": "file", "edited": "file", "wrote": "file", "searched": "time",
    "fetched": "page", "called": "other tool",
}  # fmt: skip
_NUMBERED = re.compile(r"(\d+)[.)]\s+(.*)")
_CONDENSED = re.compile(r"(\d+)\s*[–-]\s*(\d+)(?: \([^)]*\))?:\s*condensed\b(.*)")
_COUNT = re.compile(r"\b(ran|read|edited|wrote|searched|fetched|called) (\d+)\b")


def _prior_actions(body: str) -> tuple[tuple[int, int, dict[str, int]] | None, list[_Action]]:
    condensed = None
    actions: list[_Action] = []
    for item in section_items(body):
        squeezed, numbered = _CONDENSED.fullmatch(item), _NUMBERED.fullmatch(item)
        if squeezed:
            counts = {verb: int(n) for verb, n in _COUNT.findall(squeezed.group(3))}
            condensed = (int(squeezed.group(1)), int(squeezed.group(2)), counts)
        elif numbered:
            actions.append(
                _Action(int(numbered.group(1)), _verb(numbered.group(2)), numbered.group(2))
            )
        else:
            last = max([a.number for a in actions] + [condensed[1] if condensed else 0])
            actions.append(_Action(last + 1, _verb(item), item))
    return condensed, actions


def _verb(text: str) -> str:
    word = text.split(" ", 1)[0].lower()
    word = "searched" if word == "web-searched" else word
    return word if word in _NOUNS else "called"


def _what(event: ToolEvent) -> str:
    phrase = _PHRASES[event.action.kind][1]
    return phrase.format(t=collapse(event.action.target, 120), n=event.action.name).strip()


def _new_actions(events: Sequence[ToolEvent], start: int) -> list[_Action]:
    """One action per call; consecutive calls of the same kind and target collapse."""
    actions = []
    runs = groupby(events, key=lambda e: (e.action.kind, e.action.name, e.action.target))
    for offset, (_, run) in enumerate(runs):
        *_, event = repeats = list(run)
        times = f" ×{len(repeats)}" if len(repeats) > 1 else ""
        text = f"{_what(event)}{times} — {_outcome(event)} [tool: {event.action.name}]"
        actions.append(_Action(start + offset, _PHRASES[event.action.kind][0], text))
    return actions


def _outcome(event: ToolEvent) -> str:
    if event.result is None:
        return "no result kept"
    if event.action.kind is ToolKind.SHELL:
        code = event.exit_code
        status = f"exit {code}" if code is not None else ("failed" if event.failed else "ok")
        summary = test_summary(event.result) if is_test_command(event.action.target) else None
        return f"{status} ({summary})" if summary else status
    if event.failed:
        errors = error_lines(event.result)
        return f"failed: {errors[-1] if errors else last_line(event.result, 120)}"
    return "ok"


_STATE_KEYS = ("Working directory", "Git branch", "Last test run", "Background processes")
_MODIFIED_KEY = "Modified files"
_MORE = re.compile(r"\s*\(\+\d+ more\)$")


def _active_state(events: Sequence[ToolEvent], carried: str) -> tuple[dict[str, str], list[str]]:
    state: dict[str, str] = {}
    for item in section_items(carried):
        key, _, value = item.partition(": ")
        state[key] = value
    listed = _MORE.sub("", state.pop(_MODIFIED_KEY, ""))
    modified = [path for path in listed.split(", ") if path]
    cwd, background = state.get(_STATE_KEYS[0]), []
    for event in events:
        action = event.action
        modified.extend(path for path, how in file_touches(event) if how == MODIFIED)
        if action.kind is not ToolKind.SHELL or not action.command:
            continue
        cwd = cwd_hint(event, cwd) or cwd
        state[_STATE_KEYS[1]] = branch_hint(event) or state.get(_STATE_KEYS[1], "")
        if is_test_command(action.command):
            outcome = _outcome(event)
            state[_STATE_KEYS[2]] = f"`{collapse(action.command, 100)}` — {outcome}"
        if is_background(event):
            background.append(f"`{collapse(action.command, 100)}`")
    if cwd:
        state[_STATE_KEYS[0]] = cwd
    if background:
        state[_STATE_KEYS[3]] = ", ".join(dedupe(background)[-5:])
    ordered = {key: state[key] for key in _STATE_KEYS if state.get(key)}
    ordered.update((k, v) for k, v in state.items() if k not in ordered and v)
    return ordered, dedupe(modified)


def _blocked(events: Sequence[ToolEvent]) -> list[str]:
    """Error lines of the newest failures not followed by a success of the same call."""
    failing: dict[tuple[ToolKind, str], ToolEvent] = {}
    for event in events:
        if event.result is None:
            continue
        key = (event.action.kind, collapse(event.action.target, 200))
        failing.pop(key, None)
        if event.failed:
            failing[key] = event
    entries = []
    for event in list(failing.values())[-MAX_BLOCKED:]:
        assert event.result is not None
        code = f" -> exit {event.exit_code}" if event.exit_code is not None else " failed"
        lines = error_lines(event.result)[-BLOCKED_LINES:] or [last_line(event.result)]
        entries.append("\n".join([f"{_what(event)}{code}:", *(f"  {line}" for line in lines)]))
    return entries


def _carried_blocked(body: str) -> list[str]:
    body = body.strip()
    if not body or body.startswith(NONE):
        return []
    note = "(carried from the previous summary; may since be resolved)"
    body = body.removeprefix("- ")
    return [body if body.startswith(note) else f"{note}\n{body}"]


_DECISION = re.compile(
    r"\b(?:decided|decide to|instead of|rather than|the fix (?:is|was|will be)|root cause"
    r"|(?:I'll|I will|we'll|we will|let's) (?:use|go with|switch|keep|avoid|replace)"
    r"|going with|opted|chose|chosen)\b",
    re.IGNORECASE,
)


def _decisions(turns: Sequence[Message]) -> list[str]:
    """Assistant statements (not questions or lead-ins) that record a choice."""
    found = [
        collapse(sentence, 300)
        for message in turns
        if message.get("role") == "assistant"
        for sentence in sentences(message_text(message))
        if len(sentence) >= 15 and sentence[-1] not in "?:" and _DECISION.search(sentence)
    ]
    return dedupe(found)[-MAX_NEW["decisions"] :]


def _questions(turns: Sequence[Message], users: Sequence[tuple[int, str]]) -> list[str]:
    """``Q: ... → A: ...`` for user questions answered by assistant text before the next ask."""
    found: list[str] = []
    for index, (position, text) in enumerate(users):
        asked = [s for s in sentences(text) if s.endswith("?")][-2:]
        end = users[index + 1][0] if index + 1 < len(users) else len(turns)
        replies = (turns[i] for i in range(position + 1, end))
        answers = [
            message_text(m)
            for m in replies
            if m.get("role") == "assistant" and message_text(m).strip()
        ]
        if asked and answers:
            first = (sentences(answers[-1]) or [answers[-1]])[0]
            found.extend(f"Q: {collapse(q, 200)} → A: {collapse(first, 200)}" for q in asked)
    return dedupe(found)[-MAX_NEW["questions"] :]


_FILE_LINE = re.compile(r"(.+) — (.*)")
_FILE_COUNT = re.compile(r"\b(modified|read) \((\d+)\)")


def _files(events: Sequence[ToolEvent], carried: str) -> list[str]:
    counts: dict[str, dict[str, int]] = {}
    for item in section_items(carried):
        match = _FILE_LINE.fullmatch(item)
        path, note = (match.group(1), match.group(2)) if match else (item, "")
        counts[path] = {kind: int(n) for kind, n in _FILE_COUNT.findall(note)}
    for event in events:
        for path, how in file_touches(event):
            entry = counts.setdefault(path, {})
            entry[how] = entry.get(how, 0) + 1
    lines = []
    for path, entry in counts.items():
        note = ", ".join(f"{k} ({entry[k]})" for k in (MODIFIED, READ) if entry.get(k))
        lines.append(f"{path} — {note}" if note else path)
    return lines


def _context(
    users: Sequence[tuple[int, str]], previous: Mapping[str, str], request: SummaryRequest
) -> list[str]:
    carried = []
    for item in section_items(previous.get("Critical Context", "")):
        if item.startswith("Compacted on "):
            item = "Previously compacted on " + item.removeprefix("Compacted on ")
        carried.append(item)
    new = [value for _, text in users for value in exact_values(text)]
    return dedupe(
        [f"Compacted on {request.today.isoformat()}", *carried, *new[-MAX_NEW["context"] :]]
    )


def _focus(topic: str | None) -> Focus:
    words = [w for w in re.findall(r"\w+", (topic or "").lower()) if len(w) >= 3]
    if not words:
        return None
    return lambda item: any(word in item.lower() for word in words)


# --- rendering within the budget -------------------------------------------------------

# Trim order: lowest value first. Each step lowers one knob to (at least) its floor.
_LADDER: tuple[tuple[str, int], ...] = (
    ("actions", 10), ("decisions", 3), ("context", 6), ("files", 12), ("questions", 3),
    ("actions", 4), ("files", 6), ("decisions", 0), ("context", 0), ("questions", 0),
    ("modified", 5), ("actions", 0), ("blocked", 1), ("files", 0), ("modified", 0),
    ("goal", 160), ("blocked", 0), ("constraints", 0),
)  # fmt: skip
MODIFIED_SHOWN = 10  # Active State lists the newest few; Relevant Files has them all.


def _full_knobs(draft: _Draft) -> dict[str, int]:
    names = ("actions", "decisions", "context", "questions", "files", "modified", "blocked")
    knobs = {name: len(getattr(draft, name)) for name in names}
    knobs["context"] -= 1  # the date line is always kept
    knobs["modified"] = min(knobs["modified"], MODIFIED_SHOWN)
    return knobs | {"goal": GOAL_CHARS, "constraints": len(draft.constraints)}


def _bullets(items: Sequence[str], keep: int, what: str, *preferred: Focus) -> str:
    chosen = best_indices(items, keep, *preferred)
    lines = [f"- {items[i]}" for i in chosen]
    if len(items) > len(chosen):
        lines.append(f"- ({len(items) - len(chosen)} {what} omitted for space)")
    return "\n".join(lines)


def _actions_block(draft: _Draft, keep: int) -> str:
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
        f"{verb} {n} {_NOUNS[verb]}{'' if n == 1 else 's'}"
        for verb, n in sorted(counts.items(), key=lambda kv: list(_NOUNS).index(kv[0]))
    )
    gap = " (except those listed)" if any(a.number < last for a in kept) else ""
    return "\n".join([f"{first}–{last}{gap}: condensed — {summary or 'no details'}", *lines])


def _state_block(draft: _Draft, keep: int) -> str:
    lines = [f"- {key}: {value}" for key, value in draft.state.items()]
    if draft.modified:
        shown = [draft.modified[i] for i in best_indices(draft.modified, keep, draft.focus)]
        more = len(draft.modified) - len(shown)
        listed = ", ".join(shown) + (f" (+{more} more)" if more else "")
        lines.insert(min(2, len(lines)), f"- {_MODIFIED_KEY}: {listed}")
    return "\n".join(lines)


def _is_modified(item: str) -> bool:
    return " — modified (" in item


def _is_date(item: str) -> bool:
    return item.startswith("Compacted on ")


def _render(draft: _Draft, knobs: Mapping[str, int]) -> str:
    goal = shorten(draft.goal, knobs["goal"])
    bodies = (
        draft.snapshot,
        goal,
        _bullets(draft.constraints, knobs["constraints"], "constraints"),
        _actions_block(draft, knobs["actions"]),
        _state_block(draft, knobs["modified"]),
        _bullets(draft.blocked, knobs["blocked"], "older failures"),
        _bullets(draft.decisions, knobs["decisions"], "decisions", draft.focus),
        _bullets(draft.questions, knobs["questions"], "questions", draft.focus),
        _bullets(draft.files, knobs["files"], "files", draft.focus, _is_modified),
        _bullets(draft.context, knobs["context"] + 1, "values", _is_date, draft.focus),
    )
    return "\n\n".join(
        f"## {title}\n{body or NONE}" for title, body in zip(SECTION_TITLES, bodies, strict=True)
    )


def _fit(draft: _Draft, budget: int) -> str:
    knobs = _full_knobs(draft)
    text = _render(draft, knobs)
    if estimate_tokens(text) <= budget:
        return text
    for name, floor in _LADDER:
        if knobs[name] <= floor:
            continue
        base = knobs

        def fits(value: int, name: str = name, base: dict[str, int] = base) -> bool:
            return estimate_tokens(_render(draft, {**base, name: value})) <= budget

        best = largest_fitting(floor, base[name], fits)
        knobs = {**base, name: floor if best is None else best}
        if best is not None:
            return _render(draft, knobs)
    return _hard_cut(_render(draft, knobs), budget)


def _hard_cut(text: str, budget: int) -> str:
    """Last resort for a budget too small for even the untrimmable sections."""
    size = largest_fitting(0, len(text), lambda n: estimate_tokens(text[:n] + TRUNCATED) <= budget)
    if size is None:
        return ""
    return text[:size].rstrip() + TRUNCATED
