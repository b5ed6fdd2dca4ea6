"""The deterministic state ledger (SPEC §9): what the agent touched, ran and hit.

Extracted mechanically from tool calls, their results and the user's text, carried
forward across compactions by :func:`merge_ledgers`, and never left to an LLM. The
rendered text is compact and :func:`parse_ledger` reads back exactly what
:func:`render_ledger` wrote, so the ledger survives any number of compactions.

Rendered format (every line optional except the heading)::

    ## State Ledger
    Files modified: src/a.py, "odd, name.py"
    Files read: README.md
    Commands:
    - `pytest -x tests/` -> exit 1
    - `make build` -> exit ?
    Errors:
    - tests/test_x.py:12: AssertionError
    Identifiers: #1234, ABC-42, https://example.com/x
    (3 older entries omitted)

An item is written bare unless it could be misread: a list item containing a comma, any
item with surrounding whitespace, a line break or a leading double quote, or the empty
item is written as a JSON string literal instead. Commands sit between one pair of
backticks and the line always ends with `` -> exit <code>``; the parser reads the code
from the end, so backticks and arrows inside a command are unambiguous.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .facts import (
    READ,
    URL,
    WINDOW_CHARS,
    ToolEvent,
    collapse,
    dedupe,
    error_lines,
    file_touches,
    largest_fitting,
    tool_events,
    user_texts,
)
from .handoff import LEDGER_HEADING
from .messages import Message, message_text
from .tokens import estimate_tokens
from .toolshapes import ToolKind, shorten

COMMAND_CHARS = 160
MAX_FILES = 400
MAX_COMMANDS = 200
MAX_ERRORS = 40
MAX_IDENTIFIERS = 100


@dataclass(frozen=True)
class CommandRecord:
    """A shell command (one line, whitespace collapsed) and its exit code, if reported."""

    command: str
    exit_code: int | None


@dataclass(frozen=True)
class Ledger:
    """Files, commands, errors and identifiers of a session, oldest first."""

    files_read: tuple[str, ...] = ()
    files_modified: tuple[str, ...] = ()
    commands: tuple[CommandRecord, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.files_read
            or self.files_modified
            or self.commands
            or self.errors
            or self.identifiers
        )


# --- identifiers -----------------------------------------------------------------------

_TICKET = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{1,9})-\d{1,6}(?![\w-])")
_NOT_TICKETS = frozenset({"UTF", "SHA", "ISO", "GPT", "TLS", "SSL", "AES", "RSA", "HTTP", "UCS"})
_SLUG_ID = re.compile(
    r"(?<![\w./-])[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)+(?:\.\d+)+(?![\w-]|\.\w)"
)
_ISSUE = re.compile(r"(?<![\w&#/])#\d{1,6}\b")
_SHA = re.compile(r"(?<![\w-])[0-9a-f]{7,40}(?![\w-])")
_UUID = re.compile(r"(?<![\w-])[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?![\w-])")
_GIT_SHA_LINE = re.compile(r"^(?:commit )?([0-9a-f]{7,40})\b|^\[[^\]\s]+ ([0-9a-f]{7,40})\]", re.M)
_GIT_COMMAND = re.compile(r"(?:^|[\s;&|(])(?:git|gh)\s")


def _is_sha(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def text_identifiers(text: str, *, uuids: bool = False) -> list[str]:
    """Ticket ids, issue numbers, commit SHAs, URLs (and UUIDs when asked) in order."""
    found: list[tuple[int, str]] = []
    for match in _TICKET.finditer(text):
        if match.group(1) not in _NOT_TICKETS:
            found.append((match.start(), match.group(0)))
    for pattern in (_SLUG_ID, _ISSUE):
        found.extend((m.start(), m.group(0)) for m in pattern.finditer(text))
    found.extend((m.start(), m.group(0)) for m in _SHA.finditer(text) if _is_sha(m.group(0)))
    if uuids:
        found.extend((m.start(), m.group(0)) for m in _UUID.finditer(text))
    for match in URL.finditer(text):
        found.append((match.start(), shorten(match.group(0).rstrip(".,;:!?*"), 200)))
    return dedupe(value for _, value in sorted(found))


def event_identifiers(event: ToolEvent) -> list[str]:
    """Identifiers of a tool call: from its command or URL, and from git/gh output only."""
    action = event.action
    source = action.command if action.kind is ToolKind.SHELL else action.url
    found = text_identifiers(source or "")
    if action.command and event.result and _GIT_COMMAND.search(" " + action.command):
        head = event.result[:WINDOW_CHARS]
        for match in _GIT_SHA_LINE.finditer(head):
            sha = match.group(1) or match.group(2)
            if _is_sha(sha):
                found.append(sha)
        found.extend(shorten(m.group(0).rstrip(".,;:!?"), 200) for m in URL.finditer(head))
    return dedupe(found)


# --- extraction ------------------------------------------------------------------------


def extract_ledger(turns: Sequence[Message]) -> Ledger:
    """The ledger of ``turns``: tool calls with their results, plus user/assistant text.

    Errors and identifiers keep transcript order: a message's text comes before the
    results of the calls it makes.
    """
    read: list[str] = []
    modified: list[str] = []
    commands: list[CommandRecord] = []
    errors: list[tuple[int, int, str]] = []
    identifiers: list[tuple[int, int, str]] = []
    for event in tool_events(turns):
        action, at = event.action, event.position
        for path, how in file_touches(event):
            (read if how == READ else modified).append(path)
        if action.kind is ToolKind.SHELL and action.command:
            commands.append(CommandRecord(collapse(action.command, COMMAND_CHARS), event.exit_code))
        if event.result and (action.kind in (ToolKind.SHELL, ToolKind.OTHER) or event.failed):
            errors.extend((at, 1, line) for line in error_lines(event.result))
        identifiers.extend((at, 1, value) for value in event_identifiers(event))
    for at, text in user_texts(turns):
        errors.extend((at, 0, line) for line in error_lines(text))
        identifiers.extend((at, 0, value) for value in text_identifiers(text, uuids=True))
    for at, message in enumerate(turns):
        if message.get("role") == "assistant":
            identifiers.extend((at, 0, value) for value in text_identifiers(message_text(message)))
    errors.sort(key=lambda entry: entry[:2])
    identifiers.sort(key=lambda entry: entry[:2])
    found = [e[2] for e in errors], [i[2] for i in identifiers]
    return _normalized(read, modified, commands, *found)


def _normalized(
    read: Iterable[str],
    modified: Iterable[str],
    commands: Iterable[CommandRecord],
    errors: Iterable[str],
    identifiers: Iterable[str],
) -> Ledger:
    """Deduplicate and cap: files and ids keep their first mention, commands and errors
    their newest (so a re-run moves to the end); over a cap the newest entries stay."""
    return Ledger(
        files_read=tuple(dedupe(read)[-MAX_FILES:]),
        files_modified=tuple(dedupe(modified)[-MAX_FILES:]),
        commands=tuple(list(dict.fromkeys(reversed(list(commands))))[::-1][-MAX_COMMANDS:]),
        errors=tuple(dedupe(errors, keep_last=True)[-MAX_ERRORS:]),
        identifiers=tuple(dedupe(identifiers)[-MAX_IDENTIFIERS:]),
    )


def merge_ledgers(old: Ledger, new: Ledger) -> Ledger:
    """Order-preserving union, ``old`` first; the same rules as extraction apply."""
    return _normalized(
        old.files_read + new.files_read,
        old.files_modified + new.files_modified,
        old.commands + new.commands,
        old.errors + new.errors,
        old.identifiers + new.identifiers,
    )


# --- rendering -------------------------------------------------------------------------

_MODIFIED = "Files modified: "
_READ = "Files read: "
_IDENTIFIERS = "Identifiers: "
_COMMANDS = "Commands:"
_ERRORS = "Errors:"
# Characters str.splitlines() breaks on; json.dumps leaves the last three unescaped.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_JSON_UNESCAPED_BREAKS = re.compile("[\x85\u2028\u2029]")
_OMITTED = re.compile(r"\((\d+) older entr(?:y|ies) omitted\)")
_COMMAND_LINE = re.compile(r"- (.*) -> exit (-?\d+|\?)", re.DOTALL)
# Drop order when over budget: first category listed loses its oldest entries first.
_DROP_ORDER = ("commands", "files_read", "errors", "identifiers", "files_modified")


def _quote(text: str) -> str:
    literal = json.dumps(text, ensure_ascii=False)
    return _JSON_UNESCAPED_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", literal)


def _needs_quote(text: str) -> bool:
    return not text or text != text.strip() or text[0] == '"' or bool(_LINE_BREAKS.search(text))


def _item(text: str) -> str:
    """A line item: bare unless it could be misread."""
    return _quote(text) if _needs_quote(text) else text


def _list_item(text: str) -> str:
    """An inline list item: bare unless it could be misread (commas separate items)."""
    return _quote(text) if _needs_quote(text) or "," in text else text


def _command(record: CommandRecord) -> str:
    text = record.command
    shown = _quote(text) if _LINE_BREAKS.search(text) else f"`{text}`"
    code = "?" if record.exit_code is None else str(record.exit_code)
    return f"- {shown} -> exit {code}"


def _lines(ledger: Ledger, omitted: int) -> list[str]:
    lines = [LEDGER_HEADING]
    if ledger.files_modified:
        lines.append(_MODIFIED + ", ".join(map(_list_item, ledger.files_modified)))
    if ledger.files_read:
        lines.append(_READ + ", ".join(map(_list_item, ledger.files_read)))
    if ledger.commands:
        lines.append(_COMMANDS)
        lines.extend(map(_command, ledger.commands))
    if ledger.errors:
        lines.append(_ERRORS)
        lines.extend(f"- {_item(error)}" for error in ledger.errors)
    if ledger.identifiers:
        lines.append(_IDENTIFIERS + ", ".join(map(_list_item, ledger.identifiers)))
    if omitted:
        lines.append(f"({omitted} older {'entry' if omitted == 1 else 'entries'} omitted)")
    return lines


def _text(ledger: Ledger, omitted: int) -> str:
    return "\n".join(_lines(ledger, omitted))


def render_ledger(ledger: Ledger, budget_tokens: int) -> str:
    """The ledger as text within ``budget_tokens``; ``""`` when empty or nothing fits.

    Over budget, the oldest commands go first, then the oldest reads, then the oldest
    errors; identifiers and modified files go last. An omission line counts them.
    """
    if ledger.is_empty():
        return ""
    omitted = 0
    current = ledger
    for field in _DROP_ORDER:
        if estimate_tokens(_text(current, omitted)) <= budget_tokens:
            break
        entries: tuple[object, ...] = getattr(current, field)
        total, base, done = len(entries), current, omitted

        def fits(keep: int, field: str = field, base: Ledger = base, gone: int = done) -> bool:
            trimmed = _keep_newest(base, field, keep)
            dropped = len(getattr(base, field)) - keep
            return estimate_tokens(_text(trimmed, gone + dropped)) <= budget_tokens

        keep = largest_fitting(0, total, fits)
        kept = 0 if keep is None else keep
        current, omitted = _keep_newest(base, field, kept), done + total - kept
    text = _text(current, omitted)
    return text if estimate_tokens(text) <= budget_tokens else ""


def _keep_newest(ledger: Ledger, field: str, keep: int) -> Ledger:
    entries: tuple[Any, ...] = getattr(ledger, field)
    kept: dict[str, Any] = {field: entries[len(entries) - keep :] if keep else ()}
    return replace(ledger, **kept)


# --- parsing ---------------------------------------------------------------------------


def _unquote(text: str) -> str:
    if text.startswith('"'):
        value = json.loads(text)
        if isinstance(value, str):
            return value
    return text


def _parse_list(text: str) -> tuple[str, ...]:
    """Inline items separated by ``", "``; quoted items are JSON string literals."""
    items: list[str] = []
    decoder = json.JSONDecoder()
    index = 0
    while index <= len(text):
        if text.startswith('"', index):
            value, index = decoder.raw_decode(text, index)
            items.append(str(value))
        else:
            end = text.find(",", index)
            end = len(text) if end < 0 else end
            items.append(text[index:end])
            index = end
        if not text.startswith(", ", index):
            break
        index += 2
    return tuple(items)


def _parse_command(line: str) -> CommandRecord | None:
    match = _COMMAND_LINE.fullmatch(line)
    if not match:
        return None
    shown, code = match.group(1), match.group(2)
    if len(shown) >= 2 and shown[0] == "`" and shown[-1] == "`":
        command = shown[1:-1]
    else:
        command = _unquote(shown)
    return CommandRecord(command, None if code == "?" else int(code))


def parse_ledger(text: str) -> Ledger:
    """Read a rendered ledger back; unknown lines and the omission line are ignored."""
    start = text.find(LEDGER_HEADING)
    if start < 0:
        return Ledger()
    fields: dict[str, tuple[str, ...]] = {}
    commands: list[CommandRecord] = []
    errors: list[str] = []
    block = ""
    for line in text[start + len(LEDGER_HEADING) :].split("\n"):
        if line.startswith("- ") and block == _COMMANDS:
            record = _parse_command(line)
            if record is not None:
                commands.append(record)
            continue
        if line.startswith("- ") and block == _ERRORS:
            errors.append(_unquote(line[2:]))
            continue
        block = line if line in (_COMMANDS, _ERRORS) else ""
        for prefix in (_MODIFIED, _READ, _IDENTIFIERS):
            if line.startswith(prefix):
                fields[prefix] = _parse_list(line[len(prefix) :])
    return Ledger(
        files_read=fields.get(_READ, ()),
        files_modified=fields.get(_MODIFIED, ()),
        commands=tuple(commands),
        errors=tuple(errors),
        identifiers=fields.get(_IDENTIFIERS, ()),
    )
