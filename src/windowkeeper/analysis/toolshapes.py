"""What a tool call did, recognized from common tool shapes.

Agents name the same operations differently (``Bash``, ``execute_bash``, ``terminal``;
``Read``, ``read_file``, ``str_replace_editor view`` ...). This module maps a call to a
:class:`ToolAction` so pruning and the ledger describe it the same way everywhere.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

from ..core.frozen import slot_setters
from ..core.secrets import redact


class ToolKind(enum.StrEnum):
    SHELL = "shell"
    READ = "read"
    WRITE = "write"
    EDIT = "edit"
    SEARCH = "search"
    FETCH = "fetch"
    WEB_SEARCH = "web_search"
    OTHER = "other"


# The kinds as globals for the hot paths: on Python 3.11 ``ToolKind.SHELL`` goes through
# ``EnumType.__getattr__``'s look-up hook (~270 instructions; a global ~10). A stub read
# ~45 of them: 3.4M instructions over the 25 prune-only sessions' 275 stubs.
SHELL_KIND, READ_KIND, WRITE_KIND = ToolKind.SHELL, ToolKind.READ, ToolKind.WRITE
EDIT_KIND, SEARCH_KIND, FETCH_KIND = ToolKind.EDIT, ToolKind.SEARCH, ToolKind.FETCH
WEB_SEARCH_KIND, OTHER_KIND = ToolKind.WEB_SEARCH, ToolKind.OTHER
FILE_KINDS = (READ_KIND, WRITE_KIND, EDIT_KIND)
"""Kinds whose target is a path (a tuple: ``in`` finds a member by identity first)."""


@dataclass(frozen=True, slots=True)
class ToolAction:
    """A recognized tool call: its kind and main target (command, path, pattern or URL)."""

    name: str
    kind: ToolKind
    target: str
    path: str | None = None
    command: str | None = None
    pattern: str | None = None
    url: str | None = None
    line: int | None = None


# A ToolAction made without its frozen ``__init__``, which sets each of its eight slots
# through ``object.__setattr__`` (every tool call of a session is recognized, most of
# them in the compaction that first reads them): the slots' own descriptors set them.
# ``slot_setters`` checks what that relies on; the equality with ``ToolAction(...)`` is
# tested.
_SLOTS = slot_setters(ToolAction)
_new = object.__new__


def _action(
    name: str,
    kind: ToolKind,
    target: str,
    path: str | None = None,
    command: str | None = None,
    pattern: str | None = None,
    url: str | None = None,
    line: int | None = None,
) -> ToolAction:
    """``ToolAction(name, kind, target, path, command, pattern, url, line)``."""
    action: ToolAction = _new(ToolAction)
    set_name, set_kind, set_target, set_path, set_command, set_pattern, set_url, set_line = _SLOTS
    set_name(action, name)
    set_kind(action, kind)
    set_target(action, target)
    set_path(action, path)
    set_command(action, command)
    set_pattern(action, pattern)
    set_url(action, url)
    set_line(action, line)
    return action


_SHELL = {
    "bash", "execute_bash", "terminal", "shell", "run_shell_command", "exec_command",
    "run_command", "execute_command", "run_terminal_cmd", "sh", "powershell", "local_shell",
    "cmd", "run", "exec", "execute", "container.exec", "run_in_terminal",
    "run_terminal_command",
}  # fmt: skip
_READ = {
    "read", "read_file", "view", "open", "cat", "view_file", "readfile", "open_file",
    "read_text_file", "read_many_files", "read_multiple_files",
}  # fmt: skip
_WRITE = {
    "write", "write_file", "create", "create_file", "writefile", "write_to_file",
    "create_new_file",
}  # fmt: skip
_EDIT = {
    "edit", "edit_file", "str_replace", "apply_patch", "patch", "multiedit", "replace",
    "insert", "replace_in_file", "str_replace_based_edit_tool", "notebookedit", "multi_edit",
    "search_replace", "search_and_replace", "replace_string_in_file", "insert_edit_into_file",
    "edit_existing_file", "apply_diff", "insert_content",
}  # fmt: skip
_SEARCH = {
    "grep", "glob", "search", "search_files", "find_file", "search_dir", "search_file",
    "codebase_search", "ripgrep", "find", "list_files", "ls", "list_dir", "file_search",
    "grep_search", "search_file_content", "list_directory", "directory_tree",
}  # fmt: skip
_FETCH = {"webfetch", "web_fetch", "fetch", "browser_navigate", "web_extract", "curl", "fetch_url"}
_WEB_SEARCH = {"websearch", "web_search", "search_web", "google_search", "google_web_search"}
_EDIT_OR_READ = frozenset(_EDIT | _READ)
_KNOWN = frozenset(_SHELL | _READ | _WRITE | _EDIT | _SEARCH | _FETCH | _WEB_SEARCH)
# One editor tool whose ``command`` argument says what it does.
_EDITORS = frozenset({"str_replace_editor", "text_editor"})
_EDITOR_COMMANDS = {
    "view": ToolKind.READ,
    "create": ToolKind.WRITE,
    "write": ToolKind.WRITE,
    "str_replace": ToolKind.EDIT,
    "insert": ToolKind.EDIT,
    "undo_edit": ToolKind.EDIT,
}
# An MCP server's or API's namespace before the operation's own name (``mcp__fs__read_file``,
# ``functions.bash``, ``default_api:run_shell_command``, ``developer__shell``).
_NAMESPACE = re.compile(r".*(?:__|[.:/])")
PATH_KEYS = (
    "file_path", "path", "filename", "file", "target_file", "file_name", "notebook_path",
    "filePath", "filepath", "absolute_path", "relative_workspace_path",
)  # fmt: skip
_PATTERN_KEYS = ("pattern", "query", "regex", "search", "search_term", "file_name", "glob")
_URL_KEYS = ("url", "href", "uri", "urls")
_COMMAND_KEYS = ("command", "cmd", "script", "code")


def _first_str(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    get = args.get  # looked up once: most keys asked about are absent
    for key in keys:
        value = get(key)
        if value is None:
            continue
        if isinstance(value, str):
            value = value.strip()
            if value:
                return value
        elif isinstance(value, list) and value and isinstance(value[0], str):
            return value[0]
    return None


def _line(args: Mapping[str, Any]) -> int | None:
    for key in ("offset", "line", "line_number", "start_line"):
        value = args.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    view_range = args.get("view_range")
    if isinstance(view_range, list) and view_range and isinstance(view_range[0], int):
        return int(view_range[0])
    return None


_PATH_SET = frozenset(PATH_KEYS)
_FILE_NAMES = ((_READ, READ_KIND), (_WRITE, WRITE_KIND), (_EDIT, EDIT_KIND))
_COMMAND_SET = frozenset(_COMMAND_KEYS)


def classify_call(name: str, args: Mapping[str, Any]) -> ToolAction:
    """Recognize a tool call from its name and parsed arguments."""
    key = tool_key(name)
    # Most calls name a few keys and none of the path keys (a shell's command), many none
    # of the command keys: one C test over the call's own keys tells that, instead of a
    # look-up per key asked about (a dict only: another mapping's ``get`` is its own).
    plain = type(args) is dict
    path = None if plain and _PATH_SET.isdisjoint(args) else _first_str(args, PATH_KEYS)
    command = None if plain and _COMMAND_SET.isdisjoint(args) else _first_str(args, _COMMAND_KEYS)
    if key in _EDITORS or (key in _EDIT_OR_READ and command in _EDITOR_COMMANDS):
        kind = _EDITOR_COMMANDS.get(command or "", EDIT_KIND)
        return _action(name, kind, path or "?", path=path, line=_line(args))
    if key in _SHELL or (command and any(w in key for w in ("bash", "shell", "terminal"))):
        return _action(name, SHELL_KIND, command or "?", command=command, path=path)
    for names, kind in _FILE_NAMES:
        if key in names:
            return _action(name, kind, path or "?", path=path, line=_line(args))
    if key in _WEB_SEARCH:
        query = _first_str(args, _PATTERN_KEYS) or "?"
        return _action(name, WEB_SEARCH_KIND, query, pattern=query)
    if key in _SEARCH:
        pattern = _first_str(args, _PATTERN_KEYS) or "?"
        where = _first_str(args, ("path", "dir", "directory", "cwd")) or path
        return _action(name, SEARCH_KIND, pattern, pattern=pattern, path=where)
    url = _first_str(args, _URL_KEYS)
    if key in _FETCH or (url and "fetch" in key):
        return _action(name, FETCH_KIND, url or "?", url=url)
    return _action(name, OTHER_KIND, _generic_target(args), path=path)


@functools.lru_cache(maxsize=1_024)  # a session names a few tools, each call asks again
def tool_key(name: str) -> str:
    """The operation's own name, lower case: a known name as it is, else without its
    namespace and a ``builtin_`` prefix (an unknown name stays what it was)."""
    key = name.lower()
    if key in _KNOWN or key in _EDITORS:
        return key
    base = _NAMESPACE.sub("", key).removeprefix("builtin_")
    return base if base in _KNOWN or base in _EDITORS else key


def is_shell_name(name: str) -> bool:
    """Whether a call named ``name`` is a shell's whatever its arguments hold: what
    :func:`classify_call` recognizes as one with no arguments."""
    return tool_key(name) in _SHELL


def _generic_target(args: Mapping[str, Any]) -> str:
    parts = []
    for key, value in list(args.items())[:2]:
        text = value if isinstance(value, str) else repr(value)
        parts.append(f"{key}={shorten(' '.join(text.split()), 40)}")
    return " ".join(parts)


# The shapes agents report exit codes in, each with a literal that must be present first
# (a cheap ``in`` test saves a regex scan): mini-swe-agent ``<returncode>``, OpenHands
# "exit code N", JSON "exit_code", Python's CalledProcessError wording, a bare "exit N".
_EXIT_WORDS = r"exit(?:ed)?[ _](?:code|status)\s*[:=]?\s*(-?\d+)"
# The case-insensitive pattern has a lower-case twin for an ASCII text lowered: there it
# matches where the other matches in the text (a case-insensitive pattern has no fast
# scan for its leading literal, and OpenHands ends every shell output with "exit code").
_WORDS_LOWER = re.compile(_EXIT_WORDS)
_EXIT_PATTERNS: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    ("<returncode>", re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"), None),
    ("exit", re.compile(_EXIT_WORDS, re.IGNORECASE), _WORDS_LOWER),
    ('"exit_code"', re.compile(r'"exit_code"\s*:\s*(-?\d+)'), None),
    ("exit status", re.compile(r"returned non-zero exit status (\d+)"), None),
    # ``\bexit`` with the literal first: the look-behind (no word character before the
    # "exit" just matched) is the ``\b``, and the engine scans for the literal fast
    ("exit ", re.compile(r"exit(?<!\wexit) (\d+)\b"), None),
)


_RETURNCODE_ONLY = _EXIT_PATTERNS[:1]
_RETURNCODE, _WORDS, _JSON, _STATUS, _BARE = (p for _, p, _ in _EXIT_PATTERNS)
# Where the "exit" of each shape holding one lies from the shape's start.
_JSON_EXIT, _STATUS_EXIT = 1, len("returned non-zero ")
assert _JSON.pattern[_JSON_EXIT:].startswith("exit")
assert _STATUS.pattern[_STATUS_EXIT:].startswith("exit")
assert _BARE.pattern.startswith("exit") and _WORDS_LOWER.pattern.startswith("exit")


def _last_exit(text: str) -> int | None:
    if text.isascii():
        return _last_ascii_exit(text)
    lowered = text.lower()
    # Every shape but mini-swe-agent's holds "exit": an output without it is looked
    # through for one literal, not five.
    patterns = _EXIT_PATTERNS if "exit" in lowered else _RETURNCODE_ONLY
    best: tuple[int, int] | None = None
    for literal, pattern, lower_case in patterns:
        if literal not in lowered:
            continue
        if lower_case is not None and lowered.isascii():
            matches = lower_case.finditer(lowered)
        elif lower_case is not None and (folded := _aligned_fold(text, lowered)) is not None:
            matches = lower_case.finditer(folded)
        else:
            matches = pattern.finditer(text)
        for match in matches:
            if best is None or match.start() > best[0]:
                best = (match.start(), int(match.group(1)))
    return None if best is None else best[1]


def _last_ascii_exit(text: str) -> int | None:
    """:func:`_last_exit` of an ASCII text, by one look for "exit" from its end.

    What must hold (the asserts above, and the shapes' own wording): every shape but
    ``<returncode>`` holds the one "exit" at a fixed place from its start, and no match
    holds another's "exit" or start, so matches never overlap: the last one ``finditer``
    finds is the rightmost. The rightmost "exit" any shape matches at is therefore the
    last shape mentioned (a later "exit" lies past the start of every shape matching at an
    earlier one); shapes matching there start at it (the two never both match), one
    before it (JSON) or ``_STATUS_EXIT`` before it, the latest start winning. A text with
    no "x" in either case holds no "exit" in any: it is not lowered (a copy of up to
    2,000 characters, ~8 instructions each) to find none."""
    best: re.Match[str] | None = None
    if "x" in text or "X" in text:  # a memchr each
        lowered = text.lower()
        at = lowered.rfind("exit")
    else:
        lowered, at = "", -1
    while at >= 0 and best is None:
        best = (
            _WORDS_LOWER.match(lowered, at)
            or _BARE.match(text, at)
            or (_JSON.match(text, at - _JSON_EXIT) if at >= _JSON_EXIT else None)
            or (_STATUS.match(text, at - _STATUS_EXIT) if at >= _STATUS_EXIT else None)
        )
        at = lowered.rfind("exit", 0, at + 3)
    tagged = _rightmost(_RETURNCODE, text, "<returncode>")
    if tagged is not None and (best is None or tagged.start() >= best.start()):
        best = tagged
    return None if best is None else int(best.group(1))


def _rightmost(pattern: re.Pattern[str], text: str, lead: str) -> re.Match[str] | None:
    """The last match of ``pattern``, which starts with ``lead`` and whose matches do not
    hold ``lead`` past their start (so they never overlap)."""
    at = text.rfind(lead)
    while at >= 0:
        match = pattern.match(text, at)
        if match is not None:
            return match
        at = text.rfind(lead, 0, at + len(lead) - 1)
    return None


def _aligned_fold(text: str, lowered: str) -> str | None:
    """``lowered`` with the two letters a case-insensitive pattern also equates with an
    ASCII one (``ı`` with ``i``, ``ſ`` with ``s``) made ASCII, when every character of
    ``text`` lowered to exactly one (the positions line up); else ``None``. There the
    lower-case twin finds what the case-insensitive pattern finds in ``text``."""
    if len(lowered) != len(text):
        return None  # e.g. "İ" lowers to "i" and a combining dot
    return lowered.replace("\u0131", "i").replace("\u017f", "s")


def exit_code(result: str) -> int | None:
    """The exit code a shell tool result reports, if any (the last one mentioned wins)."""
    code = _last_exit(result[-2000:])
    if code is not None or len(result) <= 2000:
        return code  # a short result's head is the tail just read: not scanned twice
    return _last_exit(result[:2000])


# A write tool's own words for replacing a file that existed ("The file … has been
# updated"), as against creating one ("File created successfully at: …").
_OVERWROTE = re.compile(
    r"\b(?:has been (?:updated|modified|overwritten|replaced)|overwr(?:ote|itten)"
    r"|updated (?:the )?file|file (?:was )?updated)\b",
    re.IGNORECASE,
)
_CREATED = re.compile(r"\bcreated?\b", re.IGNORECASE)


def overwrote(result: str | None) -> bool:
    """Whether a write tool's result says the file existed and was replaced."""
    head = (result or "")[:300]
    return bool(_OVERWROTE.search(head)) and not _CREATED.search(head)


def change_verb(kind: ToolKind, result: str | None) -> str:
    """How a successful write or edit is named: ``edited``, ``rewrote`` (a write over a
    file that existed, by the tool's own words) or ``wrote``."""
    if kind is EDIT_KIND:
        return "edited"
    return "rewrote" if overwrote(result) else "wrote"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def line_count(text: str) -> int:
    # ``isspace`` is ``not text.strip()`` for a non-empty text (one whitespace test for
    # both) without copying a long output to find out.
    return text.count("\n") + 1 if text and not text.isspace() else 0


def short_path(path: str, limit: int = 40) -> str:
    """A long path as its last two components (``…/services/parser.ex``): the call's own
    arguments, kept beside a stub, hold the whole path."""
    if len(path) <= limit or "/" not in path.rstrip("/"):
        return path
    parts = path.rstrip("/").rsplit("/", 2)
    return shorten("…/" + "/".join(parts[-2:]), limit)


def one_line(action: ToolAction, result: str, code: int | EllipsisType | None = ...) -> str:
    """An informative one-line description of a tool call and its result.

    ``code``: the shell result's exit code when already known (found by :func:`exit_code`
    otherwise); an unknown one is left out rather than printed as a placeholder.
    """
    label = f"[{action.name}]"
    kind = action.kind
    # Masked before it is cut: a key cut in half can no longer be recognized as one.
    target = " ".join(redact(action.target).split())
    if kind in FILE_KINDS:
        target = short_path(target)
    target = shorten(target, 80)
    if kind is SHELL_KIND:
        code = exit_code(result) if isinstance(code, EllipsisType) else code
        status = "," if code is None else f" -> exit {code},"
        return f"{label} ran `{target}`{status} {line_count(result)} lines output"
    size = f"{len(result):,} chars"  # every other kind's line tells it
    if kind is READ_KIND:
        start = action.line if action.line is not None else 1
        return f"{label} read {target} from line {start} ({size})"
    if kind is WRITE_KIND:
        return f"{label} wrote {target} ({size} result)"
    if kind is EDIT_KIND:
        return f"{label} edited {target} ({size} result)"
    if kind is SEARCH_KIND:
        where = f" in {short_path(action.path)}" if action.path else ""
        lines = line_count(result)
        return f"{label} searched '{shorten(target, 60)}'{where} -> {lines} lines ({size})"
    if kind is FETCH_KIND:
        return f"{label} fetched {target} ({size})"
    if kind is WEB_SEARCH_KIND:
        return f"{label} query='{target}' ({size} result)"
    return f"{label} {target} ({size} result)".replace("]  (", "] (")
