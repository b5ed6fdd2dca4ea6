"""Reading a rendered handoff body back into its :class:`~.model.HandoffState`.

:func:`parse_state` reads exactly what :func:`~.text.render` wrote. Headings are looked
for outside fences only, so a user's own markdown quoted in the handoff is never
misread; a section of another summarizer's is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .model import Command, HandoffState, OpenError, Quote, WorkState
from .paths import parse_paths
from .quoting import parse_list, read_fence, unquote
from .specs import parse_specs
from .text import (
    COMMANDS,
    COVERED,
    EARLIER_COMMANDS,
    ENVIRONMENT_LABELS,
    ERROR_LINES,
    LAST_ACTION,
    NONE,
    NOTES_BESIDE,
    OPEN,
    ORIGINAL,
    ORIGINAL_IN_HEAD,
    READ_ONLY,
    STATUSES,
    TASK_RULES,
    TITLES,
)
from .valuetext import parse_values
from .worktext import AS_OF, parse_work

_COMMAND_LINE = re.compile(r"- (.*?)(?: -> exit (-?\d+))?", re.DOTALL)
_COUNT = re.compile(r"([^,]+?) (\d+)(?:, |$)")
_HEADING = re.compile(r"## (.+?)\s*")


def split_sections(text: str, titles: Sequence[str] = TITLES) -> dict[str, list[str]]:
    """The lines of each section of ``titles``, headings found outside fences only."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        fenced = read_fence(lines, index)
        if fenced is not None and current is not None:
            current.extend(lines[index : fenced[1]])
            index = fenced[1]
            continue
        heading = _HEADING.fullmatch(line)
        if heading and heading.group(1) in titles:
            current = sections.setdefault(heading.group(1), [])
        elif heading:
            current = None  # another summarizer's section: not ours to read
        elif current is not None:
            current.append(line)
        index += 1
    return sections


def parse_state(text: str) -> HandoffState | None:
    """The state a rendered handoff body holds; ``None`` when it is not one of ours."""
    sections = split_sections(text)
    if "Task" not in sections and "State Ledger" not in sections:
        return None
    task, in_head, request = _parse_task(sections.get("Task", []))
    root, files, unlisted = _parse_files(sections.get("Files", []))
    ledger = _parse_ledger(sections.get("State Ledger", []))
    notes = read_fence(sections.get("Notes", []), 0)
    work_lines, work_notes = _beside(sections.get("Work State", []))
    next_lines, next_notes = _beside(sections.get("Next Step", []))
    decision_lines, decision_notes = _beside(sections.get("Key Decisions", []))
    work = parse_work(work_lines)
    values, commits = parse_values(_plain(sections.get("Critical Values", [])))
    last_action, next_step = _parse_next(_plain(next_lines))
    constraints, task_rules = _parse_constraints(sections.get("Constraints & Preferences", []))
    written = _written(work, work_lines, work_notes, decision_notes, next_notes)
    return HandoffState(
        task=task,
        task_in_head=in_head,
        request=request,
        users=_parse_users(sections.get("User Messages", [])),
        specs=parse_specs(sections.get("Task Spec", [])),
        constraints=constraints,
        task_rules=task_rules,
        work=work,
        written=written,
        errors=_parse_errors(sections.get("Open Errors", [])),
        decisions=tuple(_items(decision_lines)),
        root=root,
        files=files,
        unlisted=unlisted,
        values=values,
        commits=commits,
        next_step=next_step,
        last_action=last_action,
        commands=ledger.commands,
        read_only=ledger.counts,
        earlier_commands=ledger.earlier,
        environment=_parse_environment(work_lines),
        error_lines=ledger.error_lines,
        covered=ledger.covered,
        notes=notes[0] if notes else "",
    )


def _written(
    work: WorkState,
    work_lines: Sequence[str],
    work_notes: str,
    decision_notes: str,
    next_notes: str,
) -> tuple[tuple[str, str], ...]:
    """(section, text) of what a summary model wrote in its own words beside the parsed
    sections; a work state none of whose lines parse is carried as it was."""
    written: tuple[tuple[str, str], ...] = ()
    if work_notes:
        written = (("Work State", work_notes),)
    elif work == WorkState() and [line for line in _plain(work_lines) if not _framing(line)]:
        written = (("Work State", "\n".join(work_lines).strip()),)
    if decision_notes:
        written += (("Key Decisions", decision_notes),)
    if next_notes:
        written += (("Next Step", next_notes),)
    return written


def _parse_constraints(lines: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The pinned constraints, then the task's rules (after their label)."""
    cut = list(lines).index(TASK_RULES) if TASK_RULES in lines else len(lines)
    return tuple(_items(lines[:cut])), tuple(_items(lines[cut:]))


def split_notes(lines: Sequence[str]) -> tuple[list[str], str | None]:
    """A section's extracted lines, and the summary model's notes below them (``None``:
    the section has no notes line)."""
    if NOTES_BESIDE not in lines:
        return list(lines), None
    cut = list(lines).index(NOTES_BESIDE)
    return list(lines[:cut]), "\n".join(lines[cut + 1 :]).strip()


def _beside(lines: Sequence[str]) -> tuple[list[str], str]:
    extracted, notes = split_notes(lines)
    return extracted, notes or ""


def _framing(line: str) -> bool:
    """A line the extractive Work State writes around the state (not a model's text)."""
    return line == AS_OF or line.partition(": ")[0] in ENVIRONMENT_LABELS


def _plain(lines: Sequence[str]) -> list[str]:
    return [line for line in lines if line.strip() and line.strip() != NONE]


def _items(lines: Sequence[str]) -> list[str]:
    return [unquote(line[2:]) for line in lines if line.startswith("- ")]


_QUOTE_HEAD = re.compile(r"(.*?)(?: \((shortened; )?recall (wk\w+)\))?:")


def _parse_task(lines: Sequence[str]) -> tuple[Quote | None, bool, Quote | None]:
    task = request = None
    in_head = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line == ORIGINAL_IN_HEAD:
            in_head = True
        head = _QUOTE_HEAD.fullmatch(line)
        fenced = read_fence(lines, index + 1) if head else None
        if head and fenced:  # another fenced part (the task's opening) is skipped
            quoted = Quote(fenced[0], head.group(3) or "", bool(head.group(2)))
            if head.group(1) == ORIGINAL:
                task = quoted
            elif head.group(1) == OPEN:
                request = quoted
            index = fenced[1]
            continue
        index += 1
    return task, in_head, request


_USER_HEAD = re.compile(r"- (wk\w+|wk\?)( \(shortened\))?:(?: (.*))?")


def _parse_users(lines: Sequence[str]) -> tuple[Quote, ...]:
    users: list[Quote] = []
    index = 0
    while index < len(lines):
        head = _USER_HEAD.fullmatch(lines[index])
        index += 1
        if not head:
            continue
        handle = "" if head.group(1) == "wk?" else head.group(1)
        if head.group(3) is not None:
            users.append(Quote(head.group(3), handle, bool(head.group(2))))
            continue
        fenced = read_fence(lines, index)
        if fenced is not None:
            users.append(Quote(fenced[0], handle, bool(head.group(2))))
            index = fenced[1]
    return tuple(users)


def _parse_environment(lines: Sequence[str]) -> tuple[tuple[str, str], ...]:
    found = []
    for line in lines:
        label, sep, value = line.partition(": ")
        if sep and label in ENVIRONMENT_LABELS:
            found.append((label, unquote(value)))
    return tuple(found)


_ERROR_HEAD = re.compile(r"- (.*?)(?: -> exit (-?\d+)| failed)")


def _parse_errors(lines: Sequence[str]) -> tuple[OpenError, ...]:
    errors: list[OpenError] = []
    for line in lines:
        head = _ERROR_HEAD.fullmatch(line)
        if head:
            what = head.group(1)
            command = _command_of(what)
            code = int(head.group(2)) if head.group(2) is not None else None
            errors.append(OpenError(what, (), code, command))
        elif line.startswith("  ") and errors:
            last = errors[-1]
            errors[-1] = OpenError(last.what, (*last.lines, unquote(line[2:])), last.exit_code,
                                   last.command)  # fmt: skip
    return tuple(reversed(errors))  # rendered newest first


def _command_of(what: str) -> str | None:
    if len(what) >= 2 and what[0] == "`" and what[-1] == "`":
        return what[1:-1]
    if what.startswith('"'):
        return unquote(what)
    return None


_UNLISTED = re.compile(r"(?:^| )\(and (\d+) more\)$")


def _parse_files(
    lines: Sequence[str],
) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, int], ...]]:
    """The root, the files and the counts of files not listed of a Files section."""
    root = ""
    files: list[tuple[str, str]] = []
    unlisted: list[tuple[str, int]] = []
    for line in lines:
        if line.startswith("Root: "):
            root = unquote(line[len("Root: ") :])
            continue
        label, _, rest = line.partition(": ")
        status = label.lower()
        if status in STATUSES:
            more = _UNLISTED.search(rest)
            if more:
                unlisted.append((status, int(more.group(1))))
                rest = rest[: more.start()]
            files.extend((path, status) for path in parse_paths(parse_list(rest), root))
    return root, tuple(files), tuple(unlisted)


@dataclass(frozen=True)
class _Ledger:
    commands: tuple[Command, ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    error_lines: tuple[str, ...] = ()
    earlier: int = 0
    covered: str = ""


_OLD_ERROR_LINES = "Error lines:"


def _parse_ledger(lines: Sequence[str]) -> _Ledger:
    commands: list[Command] = []
    errors: list[str] = []
    counts: tuple[tuple[str, int], ...] = ()
    earlier = 0
    covered = ""
    block = ""
    for line in lines:
        if line in (COMMANDS, ERROR_LINES, _OLD_ERROR_LINES):
            block = line
        elif line.startswith(EARLIER_COMMANDS):
            earlier = int(line[len(EARLIER_COMMANDS) :].strip() or 0)
            block = ""
        elif line.startswith(READ_ONLY):
            counts = tuple((k.strip(), int(n)) for k, n in _COUNT.findall(line[len(READ_ONLY) :]))
            block = ""
        elif line.startswith(COVERED + " "):
            covered = unquote(line[len(COVERED) + 1 :])
            block = ""
        elif line.startswith("- ") and block == COMMANDS:
            match = _COMMAND_LINE.fullmatch(line)
            if match:
                shown = match.group(1)
                command = shown[1:-1] if shown[:1] == "`" == shown[-1:] else unquote(shown)
                code = int(match.group(2)) if match.group(2) is not None else None
                commands.append(Command(command, code))
        elif line.startswith("- ") and block:
            errors.append(unquote(line[2:]))
    return _Ledger(tuple(commands), counts, tuple(errors), earlier, covered)


def _parse_next(lines: Sequence[str]) -> tuple[str, str]:
    """The last action and the next step of a Next Step section."""
    if lines and lines[0].startswith(LAST_ACTION + " "):
        return unquote(lines[0][len(LAST_ACTION) + 1 :]), "\n".join(lines[1:]).strip()
    return "", "\n".join(lines).strip()
