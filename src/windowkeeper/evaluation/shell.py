"""Files a shell command touched and modified, read by the evaluation's own simple rules.

Deliberately independent of ``windowkeeper.analysis.shellfacts`` (the code whose output is
measured): a file counts as modified when the command redirects into it (``>``, ``>>``,
``&>``, ``tee``), edits it in place (``sed -i``, ``perl -i``), copies or moves onto it
(``cp``, ``mv``, ``install``, ``ln``), creates or deletes it (``touch``, ``create``,
``rm``), or when a patch in the command names it (``*** Update File: x``, ``+++ b/x``).
Every other path-looking word of a command counts as touched. Heredoc bodies are not
commands: they are only searched for patch headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_HEREDOC = re.compile(
    r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1([^\n]*)\n(.*?)(?:^\s*\2\s*$|\Z)", re.S | re.M
)
_PATCH_FILE = re.compile(
    r"^(?:\*\*\* (?:Add|Update|Delete) File: |\+\+\+ b/|--- a/)(\S[^\n]*?)\s*$", re.M
)
_WORD = re.compile(
    r"(?P<op>\d?>>?|&>>?|<<-?|<|\|\||&&|[|;&\n()])"
    r"""|(?P<word>(?:[^\s'"|;&<>()\\]|\\.|'[^']*'|"(?:\\.|[^"\\])*")+)"""
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_LOCATION = re.compile(r"(?:::|:\d).*$")
_DOTTED_NAME = re.compile(r"^[\w@+-][\w.@+-]*$")
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "command", "exec", "xargs", "timeout"})
_MODIFY_ALL = frozenset({"touch", "truncate", "tee", "rm", "unlink", "create", "shred", "rmdir"})
_TO_LAST = frozenset({"cp", "install", "ln", "rsync"})
# Programs whose first word is a pattern (grep) or a task / subcommand (``mix deps.get``).
_NOT_A_FILE_FIRST = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "mix", "npm", "yarn", "pnpm", "make",
     "rake", "cargo", "go", "poetry", "uv", "pip", "pip3", "bundle", "gradle", "dotnet"}
)  # fmt: skip
_SKIP_PROGRAMS = frozenset({"cd", "pushd", "mkdir", "echo", "printf", "export"})
_GIT_MODIFY = frozenset({"mv", "rm", "checkout", "restore", "apply"})
_DEVICES = ("/dev/", "/proc/")


def looks_like_path(word: str) -> bool:
    """A word that names a file: has a ``/`` or a short extension; no spaces, globs, URLs."""
    if not word or len(word) > 240 or word[0] in "-$~%+" or "://" in word:
        return False
    if any(c in word for c in " \t\n*?[]{}$`\"'=,") or _ASSIGNMENT.match(word):
        return False
    name = word.rstrip("/").rsplit("/", 1)[-1]
    if "/" in word.rstrip("/"):
        return any(c.isalnum() for c in name)
    if not _DOTTED_NAME.match(name) or name.count(".") not in (1, 2):
        return False
    ext = name.rsplit(".", 1)[1]
    limit = 5 if name.count(".") == 1 else 3
    return 0 < len(ext) <= limit and ext[0].isalpha() and not name.startswith(".")


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    out, quote, i = [], "", 0
    while i < len(word):
        char = word[i]
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and i + 1 < len(word):
                i += 1
                out.append(word[i])
            else:
                out.append(char)
        elif char in "'\"":
            quote = char
        elif char == "\\" and i + 1 < len(word):
            i += 1
            out.append(word[i])
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _simple_commands(command: str) -> Iterator[tuple[list[str], list[str], list[str]]]:
    """(words, redirect targets written, redirect sources read) of each simple command."""
    words: list[str] = []
    written: list[str] = []
    read: list[str] = []
    pending: str | None = None
    for match in _WORD.finditer(command):
        op, word = match.group("op"), match.group("word")
        if op is not None:
            if op in ("<", "<<", "<<-") or ">" in op:
                pending = op
                continue
            if words or written or read:
                yield words, written, read
            words, written, read, pending = [], [], [], None
            continue
        value = _unquote(word)
        if pending is None:
            words.append(value)
        elif ">" in pending:
            if not value.startswith("&") and not value.startswith(_DEVICES):
                written.append(value)
        elif pending == "<":
            read.append(value)
        pending = None
    if words or written or read:
        yield words, written, read


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program name (without directory) and its arguments, past env and wrappers."""
    index = 0
    while index < len(words) and (_ASSIGNMENT.match(words[index]) or words[index] in _WRAPPERS):
        index += 1
    if index >= len(words):
        return "", []
    return words[index].rsplit("/", 1)[-1], words[index + 1 :]


def _operands(program: str, args: list[str]) -> tuple[list[str], list[str]]:
    """(touched, modified) among one program's arguments."""
    paths = [a for a in args if looks_like_path(a)]
    if program in _SKIP_PROGRAMS:
        return [], []
    if program == "git":
        return ([], paths) if args[:1] and args[0] in _GIT_MODIFY else (paths, [])
    if program in _NOT_A_FILE_FIRST:
        positional = [a for a in args if not a.startswith("-")]
        skip = positional[0] if positional else None
        return [p for p in paths if p != skip], []
    if program in ("sed", "perl"):
        in_place = any(a.startswith(("-i", "-pi")) or a == "--in-place" for a in args)
        script = next((a for a in args if not a.startswith("-")), None)
        files = [p for p in paths if p != script or "-e" in args]
        return ([], files) if in_place else (files, [])
    if program == "mv" or program in _MODIFY_ALL:
        return [], paths
    if program in _TO_LAST:
        return paths[:-1], paths[-1:]
    if program == "find":
        return [a for a in args[:1] if looks_like_path(a)], []
    return paths, []


def _strip_location(path: str) -> str:
    """``tests/test_x.py::test_y`` and ``x.py:12:3`` name the file before the colon."""
    return _LOCATION.sub("", path)


def shell_files(command: str) -> tuple[list[str], list[str]]:
    """(touched, modified) files of a shell command line or script, in order, distinct."""
    touched: dict[str, None] = {}
    modified: dict[str, None] = {}
    for match in _HEREDOC.finditer(command):
        for name in _PATCH_FILE.findall(match.group(4)):
            modified[name] = None
    body_free = _HEREDOC.sub(lambda m: f"<< _ {m.group(3)}\n", command)
    for name in _PATCH_FILE.findall(body_free):
        modified[name] = None
    for words, written, read in _simple_commands(body_free):
        program, args = _program(words)
        seen, changed = _operands(program, args)
        for path in (*seen, *read):
            touched[_strip_location(path)] = None
        for path in (*changed, *written):
            modified[_strip_location(path)] = None
    clean = [p for p in modified if p and looks_like_path(p)]
    return [p for p in touched if p and looks_like_path(p) and p not in modified], clean
