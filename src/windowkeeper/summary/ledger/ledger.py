"""The deterministic state ledger (SPEC §9): what the agent touched, ran and hit.

Extracted mechanically from tool calls, their results and the user's text, carried
forward across compactions by :func:`merge_ledgers`, and never left to an LLM. The
rendered text is compact and :func:`parse_ledger` reads back exactly what
:func:`render_ledger` wrote, so the ledger survives any number of compactions.

Rendered format (every line optional except the heading)::

    ## State Ledger
    Root: /home/me/proj/
    Files modified: src/a.py, "odd, name.py", /etc/hosts
    Files deleted: scripts/tmp.py
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
item is written as a JSON string literal instead. ``Root:`` declares a directory shared by
many file paths: a bare file item not starting with ``/`` is relative to it, while quoted
items and bare absolute paths are taken literally. Commands sit between one pair of
backticks and the line always ends with `` -> exit <code>``; the parser reads the code
from the end, so backticks and arrows inside a command are unambiguous.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...analysis.events import Analysis
from ...analysis.facts import collapse, dedupe, largest_fitting
from ...analysis.identifiers import event_identifiers, text_identifiers
from ...analysis.outputs import error_lines, event_errors
from ...analysis.shellfacts import DELETED, READ, file_touches
from ...analysis.toolshapes import ToolKind
from ...compaction.handoff import LEDGER_HEADING
from ...core.messages import Message, message_text
from ...core.tokens import estimate_tokens
from .paths import choose_root, parse_paths, render_paths

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
    files_deleted: tuple[str, ...] = ()
    commands: tuple[CommandRecord, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.files_read
            or self.files_modified
            or self.files_deleted
            or self.commands
            or self.errors
            or self.identifiers
        )


# --- extraction ------------------------------------------------------------------------


def extract_ledger(turns: Sequence[Message], analysis: Analysis | None = None) -> Ledger:
    """The ledger of ``turns``: tool calls with their results, plus user/assistant text.

    Errors and identifiers keep transcript order: a message's text comes before the
    results of the calls it makes. A file deleted after its last change is listed as
    deleted, not modified.
    """
    read: list[str] = []
    files: dict[str, bool] = {}  # path -> exists (modified) or not (deleted)
    commands: list[CommandRecord] = []
    errors: list[tuple[int, int, str]] = []
    identifiers: list[tuple[int, int, str]] = []
    analysis = analysis or Analysis(turns)
    for event in analysis.events():
        action, at = event.action, event.position
        for path, how in file_touches(event):
            if how == READ:
                read.append(path)
            else:
                _touch(files, path, deleted=how == DELETED)
        if action.kind is ToolKind.SHELL and action.command:
            commands.append(CommandRecord(collapse(action.command, COMMAND_CHARS), event.exit_code))
        if event.result and (action.kind in (ToolKind.SHELL, ToolKind.OTHER) or event.failed):
            errors.extend((at, 1, line) for line in event_errors(event))
        identifiers.extend((at, 1, value) for value in event_identifiers(event))
    for at, text in analysis.users():
        errors.extend((at, 0, line) for line in error_lines(text))
        identifiers.extend((at, 0, value) for value in text_identifiers(text, uuids=True))
    for at, message in enumerate(turns):
        if message.get("role") == "assistant":
            identifiers.extend((at, 0, value) for value in text_identifiers(message_text(message)))
    errors.sort(key=lambda entry: entry[:2])
    identifiers.sort(key=lambda entry: entry[:2])
    modified = [path for path, exists in files.items() if exists]
    deleted = [path for path, exists in files.items() if not exists]
    found = [e[2] for e in errors], [i[2] for i in identifiers]
    return _normalized(read, modified, deleted, commands, *found)


def _touch(files: dict[str, bool], path: str, *, deleted: bool) -> None:
    """Record a change: a path whose state flips moves to its newest position."""
    if path in files and files[path] is not deleted:
        return
    files.pop(path, None)
    files[path] = not deleted


def _normalized(
    read: Iterable[str],
    modified: Iterable[str],
    deleted: Iterable[str],
    commands: Iterable[CommandRecord],
    errors: Iterable[str],
    identifiers: Iterable[str],
) -> Ledger:
    """Deduplicate and cap: files and ids keep their first mention, commands and errors
    their newest (so a re-run moves to the end); over a cap the newest entries stay."""
    return Ledger(
        files_read=tuple(dedupe(read)[-MAX_FILES:]),
        files_modified=tuple(dedupe(modified)[-MAX_FILES:]),
        files_deleted=tuple(dedupe(deleted)[-MAX_FILES:]),
        commands=tuple(list(dict.fromkeys(reversed(list(commands))))[::-1][-MAX_COMMANDS:]),
        errors=tuple(dedupe(errors, keep_last=True)[-MAX_ERRORS:]),
        identifiers=tuple(dedupe(identifiers)[-MAX_IDENTIFIERS:]),
    )


def merge_ledgers(old: Ledger, new: Ledger) -> Ledger:
    """Order-preserving union, ``old`` first; the same rules as extraction apply (a file
    ``new`` deleted is no longer modified, one it changed is no longer deleted)."""
    gone, changed = set(new.files_deleted), set(new.files_modified)
    return _normalized(
        old.files_read + new.files_read,
        [p for p in old.files_modified if p not in gone] + list(new.files_modified),
        [p for p in old.files_deleted if p not in changed] + list(new.files_deleted),
        old.commands + new.commands,
        old.errors + new.errors,
        old.identifiers + new.identifiers,
    )


# --- rendering -------------------------------------------------------------------------

_ROOT = "Root: "
_MODIFIED = "Files modified: "
_DELETED = "Files deleted: "
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
_DROP_ORDER = (
    "commands", "files_read", "errors", "identifiers", "files_deleted", "files_modified",
)  # fmt: skip
_FILE_LISTS = ((_MODIFIED, "files_modified"), (_DELETED, "files_deleted"), (_READ, "files_read"))


def _quote(text: str) -> str:
    literal = json.dumps(text, ensure_ascii=False)
    return _JSON_UNESCAPED_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", literal)


def _needs_quote(text: str) -> bool:
    return not text or text != text.strip() or text[0] == '"' or bool(_LINE_BREAKS.search(text))


@functools.lru_cache(maxsize=1_024)
def _item(text: str) -> str:
    """A line item: bare unless it could be misread."""
    return _quote(text) if _needs_quote(text) else text


@functools.lru_cache(maxsize=4_096)
def _list_item(text: str) -> str:
    """An inline list item: bare unless it could be misread (commas separate items)."""
    return _quote(text) if _needs_quote(text) or "," in text else text


@functools.lru_cache(maxsize=1_024)
def _command(record: CommandRecord) -> str:
    text = record.command
    shown = _quote(text) if _LINE_BREAKS.search(text) else f"`{text}`"
    code = "?" if record.exit_code is None else str(record.exit_code)
    return f"- {shown} -> exit {code}"


def _lines(ledger: Ledger, omitted: int) -> list[str]:
    lines = [LEDGER_HEADING]
    root = choose_root(ledger.files_modified + ledger.files_deleted + ledger.files_read)
    if root:
        lines.append(_ROOT + _item(root))
    for prefix, field in _FILE_LISTS:
        paths: tuple[str, ...] = getattr(ledger, field)
        if paths:
            lines.append(prefix + _paths(paths, root))
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


@functools.lru_cache(maxsize=64)
def _paths(paths: tuple[str, ...], root: str) -> str:
    """Remembered: fitting to the budget renders the same lists many times."""
    return render_paths(paths, root, _list_item, _quote)


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


def _parse_list(text: str) -> list[tuple[str, bool]]:
    """Inline items separated by ``", "``, each with whether it was quoted (a JSON string
    literal)."""
    items: list[tuple[str, bool]] = []
    decoder = json.JSONDecoder()
    index = 0
    while index <= len(text):
        if text.startswith('"', index):
            value, index = decoder.raw_decode(text, index)
            items.append((str(value), True))
        else:
            end = text.find(",", index)
            end = len(text) if end < 0 else end
            items.append((text[index:end], False))
            index = end
        if not text.startswith(", ", index):
            break
        index += 2
    return items


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
    block, root = "", ""
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
        if line.startswith(_ROOT):
            root = _unquote(line[len(_ROOT) :])
        for prefix in (_MODIFIED, _DELETED, _READ):
            if line.startswith(prefix):
                fields[prefix] = parse_paths(_parse_list(line[len(prefix) :]), root)
        if line.startswith(_IDENTIFIERS):
            fields[_IDENTIFIERS] = tuple(v for v, _ in _parse_list(line[len(_IDENTIFIERS) :]))
    return Ledger(
        files_read=fields.get(_READ, ()),
        files_modified=fields.get(_MODIFIED, ()),
        files_deleted=fields.get(_DELETED, ()),
        commands=tuple(commands),
        errors=tuple(errors),
        identifiers=fields.get(_IDENTIFIERS, ()),
    )
