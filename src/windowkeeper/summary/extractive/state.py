"""Active State, Blocked, Key Decisions, Resolved Questions, Relevant Files and Critical
Context of the extractive summary, each merged with the previous summary's section.

File paths are written relative to the summary's root (``Paths relative to:`` in Active
State); carried paths are made absolute again with the previous root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date

from ...analysis.events import ToolEvent
from ...analysis.facts import (
    clued_items,
    collapse,
    dedupe,
    item_sentences,
    matching_clues,
    paragraphs,
    prose,
    sentences,
)
from ...analysis.outputs import event_errors, exact_values, is_test_command, last_line
from ...analysis.resolution import OpenFailures
from ...analysis.shellfacts import (
    DELETED,
    MODIFIED,
    READ,
    branch_hint,
    cwd_hint,
    file_touches,
    is_background,
)
from ...analysis.toolshapes import ToolKind
from ...core.messages import Message, message_text
from ..sections import NONE, section_items
from .actions import outcome_of, what

MAX_NEW = {"decisions": 15, "questions": 10, "context": 40}
MAX_BLOCKED, BLOCKED_LINES = 3, 6
ROOT_KEY = "Paths relative to"
STATE_KEYS = ("Working directory", "Git branch", "Last test run", "Background processes")
MODIFIED_KEY, DELETED_KEY = "Modified files", "Deleted files"
_MORE = re.compile(r"\s*\(\+\d+ more\)$")


def carried_root(active_state: str) -> str:
    """The root a previous summary's paths are relative to ("" when none)."""
    for item in section_items(active_state):
        key, _, value = item.partition(": ")
        if key == ROOT_KEY and value.endswith("/"):
            return value
    return ""


def absolute(path: str, root: str) -> str:
    return root + path if root and path and not path.startswith(("/", "~")) else path


def active_state(
    events: Sequence[ToolEvent], carried: str, root: str
) -> tuple[dict[str, str], list[str], list[str]]:
    """State key/values, modified files and deleted files (absolute, oldest first)."""
    state: dict[str, str] = {}
    for item in section_items(carried):
        key, _, value = item.partition(": ")
        state[key] = value
    state.pop(ROOT_KEY, None)
    files = {absolute(p, root): True for p in _listed(state.pop(MODIFIED_KEY, ""))}
    files.update((absolute(p, root), False) for p in _listed(state.pop(DELETED_KEY, "")))
    cwd, background = state.get(STATE_KEYS[0]), []
    for event in events:
        for path, how in file_touches(event):
            if how in (MODIFIED, DELETED):
                files.pop(path, None)
                files[path] = how == MODIFIED
        command = event.action.command
        if event.action.kind is not ToolKind.SHELL or not command:
            continue
        cwd = cwd_hint(event, cwd) or cwd
        state[STATE_KEYS[1]] = branch_hint(event) or state.get(STATE_KEYS[1], "")
        if is_test_command(command[:2_000]):
            state[STATE_KEYS[2]] = f"`{collapse(command, 100)}` — {outcome_of(event)}"
        if is_background(event):
            background.append(f"`{collapse(command, 100)}`")
    if cwd:
        state[STATE_KEYS[0]] = cwd
    if background:
        state[STATE_KEYS[3]] = ", ".join(dedupe(background)[-5:])
    ordered = {key: state[key] for key in STATE_KEYS if state.get(key)}
    ordered.update((k, v) for k, v in state.items() if k not in ordered and v)
    return ordered, [p for p, ok in files.items() if ok], [p for p, ok in files.items() if not ok]


def _listed(value: str) -> list[str]:
    return [path for path in _MORE.sub("", value).split(", ") if path]


def blocked(events: Sequence[ToolEvent], short: Callable[[str], str]) -> list[str]:
    """Error lines of the newest failures that no later success resolved."""
    tracker = OpenFailures()
    for event in events:
        tracker.add(event)
    entries = []
    for event in tracker.events()[-MAX_BLOCKED:]:
        assert event.result is not None
        code = f" -> exit {event.exit_code}" if event.exit_code is not None else " failed"
        lines = event_errors(event)[-BLOCKED_LINES:] or [last_line(event.result)]
        head = f"{what(event, short)}{code}:"
        entries.append("\n".join([head, *(f"  {line}" for line in lines)]))
    return entries


def carried_blocked(body: str) -> list[str]:
    body = body.strip()
    if not body or body.startswith(NONE):
        return []
    note = "(carried from the previous summary; may since be resolved)"
    body = body.removeprefix("- ")
    return [body if body.startswith(note) else f"{note}\n{body}"]


_CHOICE = r"(?:use|go\s+with|switch|keep|avoid|replace)"
# Choices and findings an agent states in its own words ("the bug is in X", "so only Y
# had the problem"): the reasons behind the work, which tool calls do not show.
_DECISION = re.compile(
    r"\b(?:decided|decide to|instead of|rather than|the fix (?:is|was|will be)|root cause"
    r"|(?:I'll|I will|we'll|we will|let's) (?:use|go with|switch|keep|avoid|replace)"
    r"|going with|opted|chose|chosen|the (?:bug|problem|issue|culprit) (?:is|was|lives)"
    r"|turns out|so only)\b",
    re.IGNORECASE,
)


# ``_DECISION`` loosened (any whitespace between words, no word boundaries, "the" and the
# subject dropped) into clues for the text without code blocks (as sentences are split).
_DECISION_CLUES = tuple(
    (word, re.compile(pattern))
    for word, pattern in (
        ("decide", "decide"), ("instead", r"instead\s+of"), ("rather", r"rather\s+than"),
        ("fix", r"fix\s+(?:is|was|will\s+be)"), ("root", r"root\s+cause"),
        ("'ll", rf"'ll\s+{_CHOICE}"), ("will", rf"will\s+{_CHOICE}"),
        ("let's", rf"let's\s+{_CHOICE}"), ("going", r"going\s+with"), ("opted", "opted"),
        ("chose", "chose"), ("bug", r"bug\s+(?:is|was|lives)"),
        ("problem", r"problem\s+(?:is|was|lives)"), ("issue", r"issue\s+(?:is|was|lives)"),
        ("culprit", r"culprit\s+(?:is|was|lives)"),
        ("turns", r"turns\s+out"), ("only", r"so\s+only"),
    )
)  # fmt: skip


PROGRESS_KEY = "Last progress note"


def progress_note(turns: Sequence[Message]) -> str | None:
    """The agent's newest own status report in the summarized turns (its words carry
    what the tool calls do not: what is done, what is verified, what was left out)."""
    for message in reversed(turns):
        if message.get("role") != "assistant":
            continue
        text = collapse(prose(message_text(message)[:4_000]), 400)
        if len(text) >= 80 and not text.endswith("?"):
            return text
    return None


def decisions(turns: Sequence[Message]) -> list[str]:
    """Assistant statements (not questions or lead-ins) that record a choice."""
    # Only the paragraphs a clue touches are split into sentences; a clue that matches
    # within a paragraph matches in the prose it was joined from.
    texts = (prose(message_text(m)[:20_000]) for m in turns if m.get("role") == "assistant")
    clued = ((text, matching_clues(text, _DECISION_CLUES)) for text in texts)
    found = [
        collapse(sentence, 300)
        for text, clues in clued
        if clues
        for item in clued_items(paragraphs(text), clues)
        for sentence in item_sentences(item)
        if len(sentence) >= 15 and sentence[-1] not in "?:" and _DECISION.search(sentence)
    ]
    return dedupe(found)[-MAX_NEW["decisions"] :]


def questions(turns: Sequence[Message], users: Sequence[tuple[int, str]]) -> list[str]:
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
_FILE_COUNT = re.compile(r"\b(modified|read|deleted) \((\d+)\)")


def relevant_files(
    events: Sequence[ToolEvent], carried: str, root: str
) -> dict[str, dict[str, int]]:
    """Touch counts per absolute path, in order of first mention."""
    counts: dict[str, dict[str, int]] = {}
    for item in section_items(carried):
        match = _FILE_LINE.fullmatch(item)
        path, note = (match.group(1), match.group(2)) if match else (item, "")
        counts[absolute(path, root)] = {kind: int(n) for kind, n in _FILE_COUNT.findall(note)}
    for event in events:
        for path, how in file_touches(event):
            entry = counts.setdefault(path, {})
            entry[how] = entry.get(how, 0) + 1
    return counts


def file_lines(counts: Mapping[str, Mapping[str, int]], short: Callable[[str], str]) -> list[str]:
    lines = []
    for path, entry in counts.items():
        note = ", ".join(f"{k} ({entry[k]})" for k in (MODIFIED, DELETED, READ) if entry.get(k))
        lines.append(f"{short(path)} — {note}" if note else short(path))
    return lines


def context(users: Sequence[tuple[int, str]], carried_items: str, today: date) -> list[str]:
    carried = []
    for item in section_items(carried_items):
        if item.startswith("Compacted on "):
            item = "Previously compacted on " + item.removeprefix("Compacted on ")
        carried.append(item)
    new = [value for _, text in users for value in exact_values(text)]
    return dedupe([f"Compacted on {today.isoformat()}", *carried, *new[-MAX_NEW["context"] :]])


def focus_filter(topic: str | None) -> Callable[[str], bool] | None:
    words = [w for w in re.findall(r"\w+", (topic or "").lower()) if len(w) >= 3]
    if not words:
        return None
    return lambda item: any(word in item.lower() for word in words)
