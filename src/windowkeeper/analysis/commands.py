"""What a shell command line does to files, and whether it only reads.

A command line is split into its lines (heredoc bodies set aside) and each line into its
steps (``&&``, ``||``, ``;``, ``|``), each judged by the program it runs (past ``sudo``,
``timeout 60``, ``python -m`` …). A step writes a file by redirect, ``tee``, ``sed -i`` /
``perl -i``, ``cp`` / ``mv`` / ``install`` / ``ln`` (into a directory: the files named),
``touch``, ``git mv`` / ``checkout --`` / ``restore``, ``patch`` / ``git apply`` (the
files of a patch written in the same command), and the programs and scripts of
:mod:`.writers`; it deletes with ``rm``, ``unlink``, ``git rm`` and the source of ``mv``.
Relative paths are joined to the working directory when it is known (a ``cd`` earlier in
the line counts). A path is one shell word, spaces, brackets and parentheses included.

Everything is bounded: only the first :data:`SCAN_CHARS` characters of a command are
read, and the tokenizer runs only on lines a cheap pattern says may write.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator, Sequence

from ..core.alternation import word_alternation
from ..core.hint_scan import line_scanner
from .patches import diff_targets, patch_program
from .shellwords import (
    SCAN_CHARS,
    final_cwd,
    heredoc_rows,
    joined,
    lines_of,
    step_cwd,
    steps_of,
)
from .writers import (
    INTERPRETERS,
    PROGRAMS,
    SCRIPT_HINTS,
    copied,
    in_place,
    in_place_files,
    program_writes,
    script_writes,
    until_redirect,
    unwrapped,
)

READ, MODIFIED, DELETED = "read", "modified", "deleted"

Touch = tuple[str, str]

_OPERATORS = frozenset({"&&", "||", "|", ";", "&"})
# Only a line matching this can write or delete a file the way we recognize (the program
# names nested by prefix, so most positions are rejected after one comparison).
_TOUCHERS = ("tee", "sed", "perl", "git", "rm", "unlink", "cp", "mv", "install", "ln", "touch",
             "patch", "truncate", *PROGRAMS)  # fmt: skip
_TOUCHER_WORDS = r"\b" + word_alternation(_TOUCHERS) + r"\b"
_MAY_TOUCH = re.compile(r">(?<![0-9&>]>)>?(?!&|\s*/dev/null)|" + _TOUCHER_WORDS)
_PATHY = re.compile(r"(?! )[\w.~+@()\[\],% -]*[./][\w./~+@()\[\],% -]*(?<! )")
_READ_ONLY = frozenset({
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "find", "ls", "ll", "tree", "pwd", "echo", "printf", "wc", "file", "stat", "du", "df",
    "which", "whereis", "type", "diff", "cmp", "sort", "uniq", "cut", "nl", "od", "xxd",
    "hexdump", "strings", "sed", "awk", "jq", "true", "date", "env", "printenv", "id",
    "whoami", "uname", "basename", "dirname", "realpath", "readlink", "column", "tr",
})  # fmt: skip
_GIT_READ_ONLY = frozenset({
    "status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "branch",
    "describe", "shortlog", "reflog", "remote", "config",
})  # fmt: skip


def heredoc_files(command: str, cwd: str | None) -> tuple[tuple[str, str], ...]:
    """(file, text) of each heredoc the command writes to one file (``cat > fix.patch
    <<'EOF'``, ``tee notes.md <<EOF``), the file joined to the working directory."""
    text = command[:SCAN_CHARS]
    if "<<" not in text:
        return ()
    found: list[tuple[str, str]] = []
    here = cwd
    for line, bodies in heredoc_rows(text):
        steps = steps_of(line)
        for tokens in steps:
            here = step_cwd(tokens, here)
        targets = {p for tokens in steps for p, how in _step_touches(tokens) if how == MODIFIED}
        if len(bodies) == 1 and len(targets) == 1:
            found.append((joined(targets.pop(), here), bodies[0]))
    return tuple(found)


@functools.lru_cache(maxsize=1_024)
def written_patches(command: str, cwd: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(patch file, the files its diff changes) of each diff a command writes to a file."""
    if "+++ " not in command[:SCAN_CHARS]:
        return ()
    found = ((path, diff_targets(text)) for path, text in heredoc_files(command, cwd))
    return tuple((posixpath.normpath(path), targets) for path, targets in found if targets)


def command_touches(command: str, cwd: str | None = None) -> tuple[Touch, ...]:
    """(path, MODIFIED or DELETED) of every file the command writes or removes, in order."""
    return command_files(command, cwd)[0]


def command_reads(command: str, cwd: str | None = None) -> tuple[Touch, ...]:
    """(path, READ) of every file a viewer or search in the command reads (``cat x.py``,
    ``sed -n 1,40p x.py``, ``grep -n foo x.py``), in order; writes are
    :func:`command_touches`' business."""
    return command_files(command, cwd)[1]


_VIEWERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "wc"})
_SCRIPT_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "sed", "awk"})
"""Programs whose first operand is a pattern or script, unless ``-e`` / ``-f`` gives it."""
_READER_WORDS = r"\b" + word_alternation(_VIEWERS | _SCRIPT_FIRST) + r"\b"
_MAY_READ = re.compile(_READER_WORDS)
# Both gates over every line of a command in one Hyperscan pass (``>``, the writers'
# words, the readers' words); the regexes above then run only on the lines it names. Most
# lines of an inline script match neither, and each regex tries its alternation at every
# position of a line (~300 instructions a character).
_LINE_GATES = line_scanner((">", _TOUCHER_WORDS, _READER_WORDS))
_SCANNED_CHARS = 200
"""Commands shorter than this are searched line by line (a scan's own cost is more)."""


@functools.lru_cache(maxsize=4_096)
def line_gates(command: str) -> tuple[tuple[bool, bool], ...]:
    """(``_MAY_TOUCH`` matches, ``_MAY_READ`` matches) for each line of the command
    (:func:`lines_of`), computed once for every reader of it."""
    lines = lines_of(command)[0]
    if _LINE_GATES is None or len(command) < _SCANNED_CHARS or not lines:
        return tuple((_MAY_TOUCH.search(x) is not None, _MAY_READ.search(x) is not None)
                     for x in lines)  # fmt: skip
    arrows, touchers, readers = _LINE_GATES.lines(lines)
    touching = arrows | touchers
    return tuple(
        (
            index in touching and _MAY_TOUCH.search(line) is not None,
            index in readers and _MAY_READ.search(line) is not None,
        )
        for index, line in enumerate(lines)
    )


@functools.lru_cache(maxsize=2_048)
def command_files(
    command: str, cwd: str | None = None
) -> tuple[tuple[Touch, ...], tuple[Touch, ...]]:
    """(:func:`command_touches`, :func:`command_reads`) of a command, from one walk over
    its lines: a line is tokenized once for both. Remembered: agents re-run the same
    commands.

    Each reader follows ``cd`` through the lines it looks at (its gate's, and those that
    say ``cd ``), so each keeps its own working directory."""
    lines, bodies = lines_of(command)
    touched: list[Touch] = []
    read: list[Touch] = []
    at_touch = at_read = cwd
    for line, (touches, reads) in zip(lines, line_gates(command), strict=True):
        cd = "cd " in line
        if not (touches or reads or cd):
            continue
        for tokens in steps_of(line):
            if touches or cd:
                at_touch = step_cwd(tokens, at_touch)
            if reads or cd:
                at_read = step_cwd(tokens, at_read)
            if touches:
                touched.extend(
                    (joined(p, at_touch), how) for p, how in _step_touches(tokens) if _path_like(p)
                )
            if reads:
                read.extend((joined(p, at_read), READ) for p in _step_reads(tokens))
    touched.extend(_script_touches(command, lines, bodies, cwd))
    return tuple(dict.fromkeys(touched)), tuple(dict.fromkeys(read))


def _script_touches(
    command: str, lines: Sequence[str], bodies: Sequence[str], cwd: str | None
) -> Iterator[Touch]:
    """The files the scripts in a command write (heredoc bodies, inline code) and the
    files of a patch it applies, joined to the working directory its ``cd`` steps leave."""
    here = final_cwd(lines, cwd)
    scripts = list(bodies)
    text = command[:SCAN_CHARS]
    if any(w in text for w in SCRIPT_HINTS) and any(i in text for i in INTERPRETERS):
        scripts.append("\n".join(lines))
    written = [path for body in scripts for path in script_writes(body)]
    if _applies_patch(lines):
        written.extend(path for body in bodies for path in diff_targets(body))
    return ((joined(path, here), MODIFIED) for path in written if _path_like(path))


# --- one reading of each step ----------------------------------------------------------
# A step (its words, as :func:`steps_of` makes them) is read by every reader of a command:
# the files it writes and reads, whether it only reads, whether it keeps the books. Each
# fact is made once per distinct step and remembered (agents run the same steps in many
# commands), and every reader shares the step's program words (made once, not per reader).

_STEPS_KEPT = 4_096


@functools.lru_cache(maxsize=_STEPS_KEPT)
def _step_program(tokens: tuple[str, ...]) -> tuple[Sequence[str], str, list[str], str]:
    """(program words, program name, program words without redirects, their program name)
    of a step."""
    words = _program_words(tokens)
    plain = _unredirected(words)
    return (
        words,
        words[0].rsplit("/", 1)[-1] if words else "",
        plain,
        plain[0].rsplit("/", 1)[-1] if plain else "",
    )


@functools.lru_cache(maxsize=_STEPS_KEPT)
def _step_reads(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The files a viewing or searching step reads."""
    words, head, _, _ = _step_program(tokens)
    if head not in _VIEWERS and head not in _SCRIPT_FIRST:
        return ()
    if head in ("sed", "perl") and any(in_place(t, head) for t in words[1:]):
        return ()  # an in-place edit: a write
    operands = _operands(until_redirect(words[1:]))
    if head in _SCRIPT_FIRST and not any(t in ("-e", "-f") for t in words[1:]):
        operands = operands[1:]
    return tuple(p for p in operands if _path_like(p) and _looks_like_file(p))


@functools.lru_cache(maxsize=_STEPS_KEPT)
def _step_touches(tokens: tuple[str, ...]) -> tuple[Touch, ...]:
    """(path, MODIFIED or DELETED) of each file a step writes or removes, in order."""
    return tuple(_touches_of(tokens))


def _touches_of(tokens: tuple[str, ...]) -> Iterator[Touch]:
    for index, token in enumerate(tokens):
        if token in {">", ">>"} and index + 1 < len(tokens):
            yield tokens[index + 1], MODIFIED
        elif token.startswith(">") and len(token) > 1 and token.lstrip(">")[:1] != "&":
            yield token.lstrip(">"), MODIFIED
    words, head, _, _ = _step_program(tokens)
    if not words:
        return
    operands = _operands(words[1:])
    if head in {"sed", "perl"} and any(in_place(t, head) for t in words[1:]):
        yield from ((path, MODIFIED) for path in in_place_files(words[1:]))
    elif head == "tee":
        yield from ((path, MODIFIED) for path in operands)
    elif head in {"cp", "mv"} and len(operands) >= 2:
        sources, written = copied(words[1:], operands)
        if head == "mv":
            yield from ((path, DELETED) for path in sources)
        yield from ((path, MODIFIED) for path in written)
    elif head in {"install", "ln"} and len(operands) >= 2:
        yield operands[-1], MODIFIED
    elif head in {"touch", "truncate"}:
        yield from ((path, MODIFIED) for path in operands)
    elif head in {"rm", "unlink"}:
        yield from ((path, DELETED) for path in until_redirect(operands))
    elif head == "git" and len(words) >= 3:
        yield from _git_touches(words[1], _operands(words[2:]))
    else:
        yield from ((path, MODIFIED) for path in program_writes(head, words[1:]))


def _git_touches(verb: str, operands: list[str]) -> Iterator[Touch]:
    if verb == "rm":
        yield from ((path, DELETED) for path in operands)
    elif verb == "mv" and len(operands) >= 2:
        yield operands[0], DELETED
        yield operands[-1], MODIFIED
    elif verb in {"checkout", "restore"}:
        yield from ((path, MODIFIED) for path in operands if _looks_like_file(path))


def _program_words(tokens: Sequence[str]) -> Sequence[str]:
    """The step's words from the program it runs on: the assignments before it (``X=1
    cmd``) and runners in front of it (``sudo``, ``timeout 60`` …) left out; later
    ``name=value`` words are arguments (``dd of=out.img``, ``make CC=gcc``)."""
    index = 0
    if tokens and "=" in tokens[0]:
        while index < len(tokens) and _is_assignment(tokens[index]):
            index += 1
    return unwrapped(tokens[index:] if index else tokens)


def _is_assignment(token: str) -> bool:
    name, sep, _ = token.partition("=")
    return bool(sep) and name.isidentifier()


def _operands(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if not t.startswith("-") and t not in {"<", ">", ">>", "2>&1"}]


def _applies_patch(lines: Sequence[str]) -> bool:
    """A step of ``lines`` runs ``patch`` or ``git apply`` (not a check or a dry run)."""
    for line in lines:
        if "patch" not in line and "apply" not in line:
            continue
        for tokens in steps_of(line):
            if patch_program(_step_program(tokens)[0]):
                return True
    return False


def _looks_like_file(path: str) -> bool:
    return "." in path.rsplit("/", 1)[-1] and not path.startswith("-")


def _path_like(token: str) -> bool:
    return bool(_PATHY.fullmatch(token)) and not token.startswith("-") and token != "/dev/null"


# --- read-only commands ----------------------------------------------------------------


@functools.lru_cache(maxsize=4_096)
def is_read_only(command: str) -> bool:
    """Whether a shell command only reads: every step runs a reading program (``cat``,
    ``grep``, ``ls``, ``sed`` without ``-i``, ``git status`` ...) and nothing is
    redirected into a file."""
    lines, bodies = lines_of(command)
    if bodies or not lines or len(command) > SCAN_CHARS:
        return False
    for line, (touches, _) in zip(lines, line_gates(command), strict=True):
        steps = steps_of(line)
        if touches and any(_step_touches(tokens) for tokens in steps):
            return False
        if not all(map(_reads_only, steps)):
            return False
    return True


# Steps that keep the books rather than do the work (SPEC §6 v3 "work items"): tracker
# look-ups and status updates, mode and directory changes. A tracker step that changes
# the state of the work (close, create, merge, a status of closed/done) is work.
_TRACKERS = frozenset({"bd", "beads", "gh", "glab", "jira", "linear", "tea", "acli"})
_TRACKER_BOOKS = frozenset({
    "show", "view", "list", "ready", "update", "sync", "status", "stats", "search", "info",
    "prime", "comment", "label", "assign", "blocked", "dep", "onboard",
})  # fmt: skip
_STATE_WORDS = frozenset({"close", "closed", "done", "resolved", "merge", "create", "reopen"})
_HOUSEKEEPING = frozenset({"chmod", "chown", "mkdir", "sleep"})


@functools.lru_cache(maxsize=4_096)
def is_bookkeeping(command: str) -> bool:
    """Whether a command only keeps the books: every step a tracker look-up or update
    (``bd show``, ``bd update X --status in_progress``, ``gh issue view``), a ``chmod``
    or ``mkdir``, or a reading step. Not a Done item: it shows no work done.
    Remembered, as :func:`is_read_only`."""
    lines, bodies = lines_of(command)
    if bodies or not lines or len(command) > SCAN_CHARS:
        return False
    books = False
    for line in lines:
        for tokens in steps_of(line):
            kind = _book_step(tokens)
            if kind is None:
                return False
            books = books or kind
    return books


@functools.lru_cache(maxsize=_STEPS_KEPT)
def _book_step(tokens: tuple[str, ...]) -> bool | None:
    """``True`` for a bookkeeping step, ``False`` for a reading one, ``None`` for work."""
    _, _, words, head = _step_program(tokens)
    if head in _HOUSEKEEPING:
        return True
    if head in _TRACKERS:
        verbs = [w for w in words[1:] if not w.startswith("-")][:2]
        state = any(part in _STATE_WORDS for w in words[1:] for part in w.split("="))
        return True if any(v in _TRACKER_BOOKS for v in verbs) and not state else None
    return False if _reads_only(tokens) else None


_REDIRECT = re.compile(r"^\d*(?:>>?|<)&?\S*$")


def _unredirected(words: Sequence[str]) -> list[str]:
    """``words`` without redirects (a redirect holds ``>`` or ``<``: most words skip the
    pattern)."""
    return [t for t in words if not (("<" in t or ">" in t) and _REDIRECT.match(t))]


@functools.lru_cache(maxsize=_STEPS_KEPT)
def _reads_only(tokens: tuple[str, ...]) -> bool:
    _, _, words, head = _step_program(tokens)
    if not words:
        return True
    if head in {"cd", "export", "set", "source", "."}:
        return True
    if head == "git":
        verbs = [w for w in words[1:] if not w.startswith("-")]
        return bool(verbs) and verbs[0] in _GIT_READ_ONLY
    if head in {"sed", "perl"}:
        return not any(in_place(t, head) for t in words[1:])
    return head in _READ_ONLY


def short_command(command: str, limit: int = 160) -> str:
    """A command line on one line: heredoc bodies left out (``<<EOF…``), whitespace
    collapsed, cut to ``limit`` characters."""
    lines, bodies = lines_of(command)
    text = " ; ".join(" ".join(line.split()) for line in lines) if bodies else command
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def program_of(command: str) -> str:
    """The program a command line runs (past ``cd ... &&``, assignments and runners such
    as ``sudo`` or ``timeout 60``)."""
    for line in lines_of(command)[0]:
        for tokens in steps_of(line):
            words = _step_program(tokens)[0]
            if words and words[0] not in {"cd", "export", "set"} and not _is_assignment(words[0]):
                return words[0].rsplit("/", 1)[-1]
    return ""
