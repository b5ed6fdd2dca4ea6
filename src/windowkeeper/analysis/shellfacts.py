"""Facts read from tool calls: files touched, working directory, branch, background jobs.

Shell commands are only tokenized (``shlex``) when a cheap pattern says they may write
or delete a file; everything else is a bounded regular-expression scan.
"""

from __future__ import annotations

import functools
import re
import shlex

from .events import ToolEvent, remembered
from .facts import WINDOW_CHARS, any_search
from .toolshapes import ToolKind

READ, MODIFIED, DELETED = "read", "modified", "deleted"
COMMAND_SCAN = 2_000
"""Characters of a command line scanned for state hints (heredocs can be huge)."""

_PATHY = re.compile(r"[\w.~+@-]*[./][\w./~+@-]*")
_OPERATORS = frozenset({"&&", "||", "|", ";", "&"})
# Only a command line matching one of these can write or delete a file the way we
# recognize. Each starts with a literal (look-behinds follow it), which the regex engine
# finds fast.
_MAY_TOUCH = tuple(
    re.compile(pattern)
    for pattern in (
        r">(?<![0-9&>]>)>?(?!&|\s*/dev/null)", r"tee(?<!\wtee)\b", r"sed(?<!\wsed)\b.*\s-i",
        r"perl(?<!\wperl)\b.*\s-i", r"git(?<!\wgit)\s+(?:mv|rm)\b", r"rm(?<!\wrm)\s",
        r"unlink(?<!\wunlink)\s",
    )
)  # fmt: skip
_FILE_NAME = re.compile(r"[^/]+\.[\w-]+")


def file_touches(event: ToolEvent) -> list[tuple[str, str]]:
    """(path, READ, MODIFIED or DELETED) for each file a call read, changed or removed.

    A search confined to one file (its path has an extension) counts as a read of it.
    """
    return list(remembered(event, "touches", _file_touches))


def _file_touches(event: ToolEvent) -> tuple[tuple[str, str], ...]:
    action = event.action
    if action.kind is ToolKind.READ and action.path:
        return ((action.path, READ),)
    if action.kind in (ToolKind.WRITE, ToolKind.EDIT) and action.path:
        return ((action.path, MODIFIED),)
    if action.kind is ToolKind.SEARCH and action.path and _is_file_name(action.path):
        return ((action.path, READ),)
    if action.kind is ToolKind.SHELL and action.command:
        return shell_touches(action.command)
    return ()


def _is_file_name(path: str) -> bool:
    return _FILE_NAME.fullmatch(path.rstrip("/").rsplit("/", 1)[-1]) is not None and (
        "*" not in path
    )


def shell_written_files(command: str) -> list[str]:
    """Files an obvious shell write touches: redirects, ``sed -i``, ``tee``, ``git mv``."""
    return [path for path, how in shell_touches(command) if how == MODIFIED]


@functools.lru_cache(maxsize=1_024)
def shell_touches(command: str) -> tuple[tuple[str, str], ...]:
    """(path, MODIFIED or DELETED) of the first line of a shell command, in order.

    Remembered: the summarizer and the ledger ask for the same commands.
    """
    first = command.strip().split("\n", 1)[0]
    if not any_search(_MAY_TOUCH, first):
        return ()
    return _tokenized_touches(first)


@functools.lru_cache(maxsize=2_048)
def _tokenized_touches(first: str) -> tuple[tuple[str, str], ...]:
    """Tokenizing is the slow part; the summarizer and the ledger ask for the same lines."""
    touched: list[tuple[str, str]] = []
    for tokens in _segments(first):
        touched.extend((path, MODIFIED) for path in _written(tokens))
        touched.extend((path, DELETED) for path in _deleted(tokens))
    return tuple(dict.fromkeys((path, how) for path, how in touched if _path_like(path)))


def _segments(line: str) -> list[list[str]]:
    try:
        tokens = shlex.split(line)
    except ValueError:
        tokens = line.split()
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS:
            segments.append([])
        elif token.endswith(";"):
            segments[-1].append(token.rstrip(";"))
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _written(tokens: list[str]) -> list[str]:
    written: list[str] = []
    for index, token in enumerate(tokens):
        if token in {">", ">>"} and index + 1 < len(tokens):
            written.append(tokens[index + 1])
        elif token.startswith(">") and len(token) > 1 and token[1] not in ">&":
            written.append(token.lstrip(">"))
    head = tokens[0].rsplit("/", 1)[-1]
    if head in {"sed", "perl"} and any(t.startswith("-i") for t in tokens[1:]):
        written.append(tokens[-1])
    elif head == "tee":
        written.extend(t for t in tokens[1:] if not t.startswith("-"))
    elif tokens[:2] == ["git", "mv"] and len(tokens) >= 4:
        written.append(tokens[-1])
    return written


def _deleted(tokens: list[str]) -> list[str]:
    """Operands of ``rm``, ``git rm`` and ``unlink`` (up to a redirect)."""
    head = tokens[0].rsplit("/", 1)[-1]
    if head in {"rm", "unlink"}:
        operands = tokens[1:]
    elif tokens[:2] == ["git", "rm"]:
        operands = tokens[2:]
    else:
        return []
    found = []
    for token in operands:
        if token.startswith((">", "2>", "&>")) or token in {"<", "2>&1"}:
            break
        if not token.startswith("-"):
            found.append(token)
    return found


def _path_like(token: str) -> bool:
    return bool(_PATHY.fullmatch(token)) and not token.startswith("-") and token != "/dev/null"


_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)\s*(?:&&|;|$)")
# Prompts that show the working directory, each with a literal it needs; matched in the
# text after a prepended line break, so a line start is a literal ``\n`` the engine finds.
_PROMPT_CWDS = (
    ("(Current directory: ", re.compile(r"\(Current directory: ([^)\n]+)\)")),
    ("@", re.compile(r"\n[\w.-]+@[\w.-]+:((?:/|~)[^\s#$]*)\s*[#$]")),
    ("$", re.compile(r"\n(/[\w./-]*)\$\s*$", re.MULTILINE)),
)
_BRANCH_COMMAND = re.compile(
    r"git(?<!\wgit)\s+(?:checkout\s+-[bB]|switch\s+-[cC]|worktree\s+add\s+-b|switch)\s+"
    r"([\w./-]+)"
)
_BRANCH_OUTPUT = re.compile(r"^(?:On branch|Switched to (?:a new )?branch) '?([\w./-]+)'?", re.M)
_BACKGROUND = tuple(
    re.compile(pattern)
    for pattern in (
        r"nohup(?<!\Snohup)\s", r"&(?<!&&)\s*(?:$|(?:disown|echo|sleep)\b)",
        r"setsid(?<!\wsetsid)\s", r"tmux(?<!\wtmux)\s+new(?:-session)?\b.*\s-d\b",
        r"screen(?<!\wscreen)\s+-d",
    )
)  # fmt: skip


def cwd_hint(event: ToolEvent, previous: str | None) -> str | None:
    """The working directory after a shell call: prompt in the output, ``cd``, or an arg."""
    prompt = _prompt_cwd(event.result[-WINDOW_CHARS:]) if event.result else None
    if prompt is not None:
        return prompt
    match = _CD.match((event.action.command or "")[:COMMAND_SCAN])
    if match:
        target = match.group(1)
        if target.startswith(("/", "~")) or previous is None:
            return target
        return f"{previous.rstrip('/')}/{target}"
    for key in ("workdir", "cwd", "working_directory", "dir"):
        value = event.args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _prompt_cwd(text: str) -> str | None:
    """The directory of the last prompt in ``text``."""
    lined = "\n" + text
    last: tuple[int, str] | None = None
    for literal, pattern in _PROMPT_CWDS:
        if literal in text:
            for match in pattern.finditer(lined):
                if last is None or match.start() > last[0]:
                    last = (match.start(), match.group(1))
    return last[1].strip() if last else None


def branch_hint(event: ToolEvent) -> str | None:
    tail = event.result[-WINDOW_CHARS:] if event.result else ""
    if "On branch" in tail or "Switched to " in tail:
        found = _BRANCH_OUTPUT.findall(tail)
        if found:
            return str(found[-1])
    command = (event.action.command or "")[:COMMAND_SCAN]
    match = _BRANCH_COMMAND.search(command) if "git" in command else None
    if match and not match.group(1).startswith("-"):
        return match.group(1)
    return None


_BACKGROUND_WORDS = ("nohup", "&", "setsid", "tmux", "screen")


def is_background(event: ToolEvent) -> bool:
    if event.args.get("run_in_background") is True:
        return True
    command = (event.action.command or "")[:COMMAND_SCAN].strip()
    return any(
        word in command and pattern.search(command) is not None
        for word, pattern in zip(_BACKGROUND_WORDS, _BACKGROUND, strict=True)
    )


# --- exact values ----------------------------------------------------------------------
