"""The facts the evaluation checks, extracted by its own deliberately simple rules.

Independent of the code it measures (``windowkeeper.analysis``, the ledger, the
summarizers), so that it cannot flatter the compressor. From each original message that
leaves the verbatim context:

* ``file`` / ``modified_file``: paths named by tool calls (argument keys such as
  ``path`` or ``file_path``; modified by an edit/write/create tool) and by shell commands
  (:mod:`.shell`). Findable when the path's last two components appear as a token
  (``models/query.py``), so a handoff that lists files under their repository root counts.
* ``error``: exception and error names (``ValueError``, ``ENOENT``, ``TS2345``) on the
  error lines of tool results; ``error_line``: up to four error lines per tool result
  (the first two and the last two), their first 100 characters as a phrase.
* ``id``: commit SHAs (7-40 hex digits with a letter and a digit), UUIDs, ticket ids
  (``PAY-1423``), issue/PR numbers (``#123``) and URLs (findable by host and path); at
  most ten per message (the first five and the last five), so that a dump of data does
  not outweigh everything else.
* ``user_term``: up to 12 key terms of every real user message (identifiers and numbers
  first, then the longest uncommon words), case-insensitive.
* ``task``: the first 80 characters of the session's first real user message.

A token fact must be a token of its own message (see :mod:`.text`); a candidate that is
only part of a larger token (``ABC-12`` inside ``fix/ABC-12-x``) is not a fact.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.messages import content_text
from .ids import issues, shas, tickets, urls, uuids
from .shell import looks_like_path, shell_files
from .text import (
    Entry,
    encode,
    flatten,
    has_token,
    ordered_tokens,
    tokenize,
)


class FactKind(enum.StrEnum):
    FILE = "file"
    MODIFIED_FILE = "modified_file"
    ERROR = "error"
    ERROR_LINE = "error_line"
    ID = "id"
    USER_TERM = "user_term"
    TASK = "task"


class Match(enum.StrEnum):
    """How a fact is looked for in a context."""

    TOKEN = "token"
    LOWER_TOKEN = "lower_token"
    PHRASE = "phrase"


@dataclass(frozen=True)
class Fact:
    """One fact: ``text`` as the transcript has it, ``needle`` as it is looked for."""

    kind: FactKind
    text: str
    needle: bytes
    match: Match


TASK_CHARS = 80
ERROR_LINE_CHARS = 100
USER_TERMS = 12
IDS_PER_MESSAGE = 10

_PATH_KEYS = frozenset(
    {"path", "file_path", "filepath", "filename", "file", "file_name", "notebook_path",
     "target_file", "absolute_path"}
)  # fmt: skip
_SHELL_KEYS = ("command", "cmd", "script")
_SHELL_HINTS = ("bash", "shell", "terminal", "exec", "command", "run", "sh")
_EDIT_HINTS = ("write", "edit", "create", "replace", "insert", "patch", "delete", "remove",
               "rename", "move", "append")  # fmt: skip
_EDIT_COMMANDS = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "edit",
                            "append", "delete"})  # fmt: skip
_READ_COMMANDS = frozenset({"view", "read", "cat", "show", "list"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (\S[^\n]*?)\s*$", re.M)

_ERROR_LINE = re.compile(
    r"^[ \t]*(?:E[ \t]+)?((?:[\w.]*(?:Error|Exception)(?=:|[ \t]*$)|FAILED\b|ERROR\b|error\b|"
    r"fatal:|panic:|npm ERR!|\*\* \()[^\n]*)",
    re.M,
)
_ERROR_NAME = re.compile(r"\b(?:[A-Z]\w*(?:Error|Exception)|E[A-Z]{3,}|[A-Z]{1,3}\d{3,5})\b")
_NOT_ERROR_NAMES = frozenset({"ERROR", "ERRORS", "EXCEPTION", "EXPECTED", "EXIT", "EXAMPLE",
                              "EMPTY", "ENABLED", "EXISTS", "ENTRY", "ENV", "EOF"})  # fmt: skip
# Words that say nothing about a session (only words of 6+ letters are candidates).
_COMMON = frozenset(
    {
        "actually",
        "already",
        "always",
        "another",
        "answer",
        "anything",
        "around",
        "available",
        "because",
        "before",
        "better",
        "between",
        "called",
        "change",
        "changed",
        "changes",
        "consider",
        "continue",
        "currently",
        "described",
        "description",
        "details",
        "different",
        "directory",
        "either",
        "ensure",
        "everything",
        "example",
        "feature",
        "features",
        "following",
        "function",
        "functions",
        "however",
        "implement",
        "implementation",
        "information",
        "instead",
        "issue",
        "little",
        "looking",
        "making",
        "method",
        "methods",
        "minimal",
        "modified",
        "modify",
        "necessary",
        "needed",
        "needs",
        "number",
        "output",
        "please",
        "possible",
        "problem",
        "provide",
        "provided",
        "question",
        "rather",
        "really",
        "repository",
        "requirements",
        "result",
        "results",
        "running",
        "second",
        "should",
        "simply",
        "something",
        "specific",
        "support",
        "sure",
        "system",
        "thanks",
        "things",
        "thinking",
        "through",
        "trying",
        "update",
        "updated",
        "uploaded",
        "using",
        "wanted",
        "whether",
        "within",
        "without",
        "working",
    }
)


# --- real user messages --------------------------------------------------------------

_SYNTHETIC_BLOCK = re.compile(
    r"<(task-notification|system-reminder|local-command-[\w-]+|command-name|command-message|"
    r"bash-stdout|bash-stderr|environment_details|user-prompt-submit-hook)>.*?</\1>",
    re.S,
)
_TAG = re.compile(r"</?(?:command-args|bash-input)>")
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user[^\]]*\]\s*")
_SYNTHETIC_STARTS = (
    "Stop hook feedback:",
    "This session is being continued from a previous conversation",
    "Please continue working on the task",
    "Caveat: The messages below were generated",
    "Base directory for this skill",
    "[SUGGESTION MODE",
)


def user_text(message: Mapping[str, Any]) -> str | None:
    """What a real user typed in a user message; ``None`` for a synthetic one (task
    notifications, interruption markers, hook feedback, pasted continuations)."""
    if message.get("role") != "user":
        return None
    text = _SYNTHETIC_BLOCK.sub("", content_text(message.get("content")))
    text = _INTERRUPTED.sub("", _TAG.sub("", text)).strip()
    if not text or text.startswith(_SYNTHETIC_STARTS):
        return None
    return text


def task_fact(message: Mapping[str, Any]) -> Fact | None:
    text = user_text(message)
    if text is None:
        return None
    head = flatten(encode(text))[: TASK_CHARS * 4].decode("utf-8", "ignore")[:TASK_CHARS]
    return Fact(FactKind.TASK, head, encode(head.strip()), Match.PHRASE)


def _user_terms(text: str) -> list[str]:
    lowered = encode(text.lower())
    tokens = tokenize(lowered)
    ordered = [t.decode("utf-8", "ignore") for t in ordered_tokens(lowered)]
    idents = [t for t in ordered if _identifier(t)]
    words = sorted(
        {t for t in ordered if t.isalpha() and len(t) >= 6 and t not in _COMMON},
        key=lambda w: (-len(w), ordered.index(w)),
    )
    terms = [t for t in dict.fromkeys([*idents, *words]) if has_token(tokens, encode(t))]
    return terms[:USER_TERMS]


def _identifier(token: str) -> bool:
    if not 2 <= len(token) <= 60 or token.isalpha():
        return False
    if token.isdigit():
        return True
    has_alpha = any(c.isalpha() for c in token)
    return has_alpha and (any(c.isdigit() for c in token) or any(c in "_./@#" for c in token))


# --- extraction ----------------------------------------------------------------------


def _needle_of_path(path: str) -> str:
    parts = [p for p in path.strip().rstrip("/").split("/") if p and p != "."]
    return "/".join(parts[-2:])


def _path_facts(touched: list[str], modified: list[str]) -> Iterator[Fact]:
    for path in touched:
        yield Fact(FactKind.FILE, path, encode(_needle_of_path(path)), Match.TOKEN)
    for path in modified:
        needle = encode(_needle_of_path(path))
        yield Fact(FactKind.FILE, path, needle, Match.TOKEN)
        yield Fact(FactKind.MODIFIED_FILE, path, needle, Match.TOKEN)


def _call_files(name: str, args: Any) -> tuple[list[str], list[str]]:
    name = name.lower()
    if not isinstance(args, Mapping):
        return [], []
    touched: list[str] = []
    modified: list[str] = []
    command = next((args[k] for k in _SHELL_KEYS if isinstance(args.get(k), str)), None)
    edit_tool = any(hint in name for hint in _EDIT_HINTS)
    if command is not None and not edit_tool and any(h in name for h in _SHELL_HINTS):
        seen, changed = shell_files(command)
        touched += seen
        modified += changed
    action = args.get("command") if isinstance(args.get("command"), str) else None
    edits = action in _EDIT_COMMANDS if action else edit_tool
    if action in _READ_COMMANDS:
        edits = False
    for key, value in args.items():
        if key in _PATH_KEYS and isinstance(value, str) and looks_like_path(value.strip()):
            (modified if edits else touched).append(value.strip())
        elif isinstance(value, str) and "*** " in value:
            modified += _PATCH_FILE.findall(value)
    return touched, modified


def _error_facts(text: str) -> Iterator[Fact]:
    lines = list(dict.fromkeys(m.group(1).strip() for m in _ERROR_LINE.finditer(text)))
    chosen = lines if len(lines) <= 4 else [*lines[:2], *lines[-2:]]
    for line in lines:
        for name in _ERROR_NAME.findall(line):
            if name not in _NOT_ERROR_NAMES:
                yield Fact(FactKind.ERROR, name, encode(name), Match.PHRASE)
    for line in chosen:
        phrase = flatten(encode(line))[: ERROR_LINE_CHARS * 4]
        phrase = encode(phrase.decode("utf-8", "ignore")[:ERROR_LINE_CHARS].strip())
        if len(phrase) >= 12:
            yield Fact(FactKind.ERROR_LINE, line[:ERROR_LINE_CHARS], phrase, Match.PHRASE)


def _id_facts(data: bytes) -> Iterator[Fact]:
    for url, host_path in urls(data):
        yield Fact(FactKind.ID, url.decode("utf-8", "replace"), host_path, Match.TOKEN)
    for scan in (shas, uuids, tickets, issues):
        for value in scan(data):
            yield Fact(FactKind.ID, value.decode("utf-8", "replace"), value, Match.TOKEN)


def message_facts(entry: Entry) -> list[Fact]:
    """Every fact of one original message (its :class:`~.text.Entry`)."""
    message = entry.message
    role = message.get("role")
    if role in ("system", "developer"):
        return []
    facts: list[Fact] = []
    for name, args in entry.calls:
        facts += _path_facts(*_call_files(name, args))
    if role == "tool":
        facts += _error_facts(content_text(message.get("content")))
    facts += _id_facts(entry.data)
    typed = user_text(message)
    if typed is not None:
        terms = _user_terms(typed)
        facts += (Fact(FactKind.USER_TERM, t, encode(t), Match.LOWER_TOKEN) for t in terms)
    kept = [f for f in dict.fromkeys(facts) if _findable_in_own(f, entry.tokens, entry.flat)]
    ids = [f for f in kept if f.kind is FactKind.ID]
    if len(ids) <= IDS_PER_MESSAGE:
        return kept
    # A dump of data (a fixture of UUIDs, a long log) must not outweigh everything else:
    # its first and last few ids stand for it.
    ids.sort(key=lambda f: entry.data.find(f.needle))
    half = IDS_PER_MESSAGE // 2
    chosen = {*ids[:half], *ids[-half:]}
    return [f for f in kept if f.kind is not FactKind.ID or f in chosen]


def _findable_in_own(fact: Fact, tokens: set[bytes], flat: bytes) -> bool:
    if fact.match is Match.PHRASE:
        return fact.needle in flat
    if fact.match is Match.TOKEN:
        return bool(fact.needle) and has_token(tokens, fact.needle)
    return True  # user terms are chosen among the message's own tokens
