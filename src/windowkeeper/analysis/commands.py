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
read, and the tokenizer runs only on lines a cheap pattern says may write or read. Each
reading is remembered in the command's record (:mod:`.readings`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from ..core.alternation import word_alternation
from ..core.hint_scan import line_scanner
from .patches import diff_targets, patch_program
from .readings import UNREAD, Files, Patches, reading
from .shellwords import (
    SCAN_CHARS,
    final_cwd,
    heredoc_rows,
    joined,
    lines_of,
    step_cwd,
    steps_of,
)
from .steps import (
    MODIFIED,
    READ,
    SCRIPT_FIRST,
    VIEWERS,
    Touch,
    is_assignment,
    path_like,
    step_program,
    step_reads,
    step_touches,
)
from .writers import (
    INTERPRETERS,
    PROGRAMS,
    SCRIPT_GATE,
    in_place,
    script_writes,
)

_OPERATORS = frozenset({"&&", "||", "|", ";", "&"})
# Only a line matching this can write or delete a file the way we recognize (the program
# names nested by prefix, so most positions are rejected after one comparison).
_TOUCHERS = ("tee", "sed", "perl", "git", "rm", "unlink", "cp", "mv", "install", "ln", "touch",
             "patch", "truncate", *PROGRAMS)  # fmt: skip
_ARROW = r">(?<![0-9&>]>)>?(?!&|\s*/dev/null)"
_TOUCHER_WORDS = r"\b" + word_alternation(_TOUCHERS) + r"\b"
# ``_ARROW`` or ``_TOUCHER_WORDS``, searched in " " + line: led by ``\W`` (a ``>``, or
# the non-word character a word's ``\b`` needs before it), so the engine skips ahead to
# the non-word characters (a pattern led by ``\b`` is tried at every position, ~25%
# more instructions on a short command). What must hold: it matches " " + line exactly
# where the two match line (``tests/test_extraction_gates.py``).
_MAY_TOUCH = re.compile(
    r"\W(?:(?<=>)(?<![0-9&>]>)>?(?!&|\s*/dev/null)|" + word_alternation(_TOUCHERS) + r"\b)"
)
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
        targets = {p for tokens in steps for p, how in step_touches(tokens) if how == MODIFIED}
        if len(bodies) == 1 and len(targets) == 1:
            found.append((joined(targets.pop(), here), bodies[0]))
    return tuple(found)


def written_patches(command: str, cwd: str | None) -> Patches:
    """(patch file, the files its diff changes) of each diff a command writes to a file;
    remembered in the command's record for the last ``cwd`` asked."""
    if "+++ " not in command[:SCAN_CHARS]:
        return ()
    record = reading(command)
    found = record.patches
    if found is UNREAD or record.patches_cwd != cwd:
        found = _written_patches(command, cwd)
        record.patches, record.patches_cwd = found, cwd
    return found


def _written_patches(command: str, cwd: str | None) -> Patches:
    """What :func:`written_patches` remembers (it checked the command holds ``+++ ``)."""
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


_READER_WORDS = r"\b" + word_alternation(VIEWERS | SCRIPT_FIRST) + r"\b"
_MAY_READ = re.compile(r"\W" + word_alternation(VIEWERS | SCRIPT_FIRST) + r"\b")
"""``_READER_WORDS``, searched in " " + line (as ``_MAY_TOUCH``)."""
# Both gates over every line of a command in one Hyperscan pass (``>``, the writers'
# words, the readers' words); the regexes above then run only on the lines it names. Most
# lines of an inline script match neither, and each regex tries its alternation at every
# position of a line (~300 instructions a character).
# ``cd `` too: the walk of a command's files follows it, and visits no other line.
_LINE_GATES = line_scanner((">", _TOUCHER_WORDS, _READER_WORDS, "cd "))
_SCANNED_CHARS = 200
"""Commands shorter than this are searched line by line (a scan's own cost is more)."""

Gates = tuple[frozenset[int], frozenset[int], frozenset[int]]
_FIRST, _NONE = frozenset({0}), frozenset[int]()


def line_gates(command: str) -> Gates:
    """The indices of the lines of the command (:func:`lines_of`) that ``_MAY_TOUCH``
    matches, that ``_MAY_READ`` matches, and that hold ``cd ``; remembered in the
    command's record for every reader of it."""
    record = reading(command)
    found = record.gates
    if found is UNREAD:
        found = record.gates = gates_of(command)
    return found


def gates_of(command: str) -> Gates:
    """:func:`line_gates`, not remembered."""
    lines = lines_of(command)[0]
    if _LINE_GATES is None or len(command) < _SCANNED_CHARS or not lines:
        if len(lines) == 1:  # most commands: no generators over one line
            line = " " + lines[0]
            return (
                _FIRST if _MAY_TOUCH.search(line) is not None else _NONE,
                _FIRST if _MAY_READ.search(line) is not None else _NONE,
                _FIRST if "cd " in line else _NONE,
            )
        return (
            frozenset(i for i, x in enumerate(lines) if _MAY_TOUCH.search(" " + x) is not None),
            frozenset(i for i, x in enumerate(lines) if _MAY_READ.search(" " + x) is not None),
            frozenset(i for i, x in enumerate(lines) if "cd " in x),
        )
    arrows, touchers, readers, cds = _LINE_GATES.lines(lines)
    return (
        frozenset(i for i in arrows | touchers if _MAY_TOUCH.search(" " + lines[i]) is not None),
        frozenset(i for i in readers if _MAY_READ.search(" " + lines[i]) is not None),
        frozenset(cds),
    )


def command_files(command: str, cwd: str | None = None) -> Files:
    """(:func:`command_touches`, :func:`command_reads`) of a command, from one walk over
    its lines: a line is tokenized once for both. Remembered in the command's record for
    the last ``cwd`` asked: agents re-run the same commands (from the same directory)."""
    record = reading(command)
    found = record.files
    if found is UNREAD or record.files_cwd != cwd:
        found = _command_files(command, cwd)
        record.files, record.files_cwd = found, cwd
    return found


def _command_files(command: str, cwd: str | None) -> Files:
    """Each reader follows ``cd`` through the lines it looks at (its gate's, and those
    that say ``cd ``), so each keeps its own working directory; no other line is
    visited."""
    lines, bodies = lines_of(command)
    touching, reading_, cds = line_gates(command)
    touched: list[Touch] = []
    read: list[Touch] = []
    at_touch = at_read = cwd
    for index in sorted(touching | reading_ | cds):
        touches = index in touching
        reads = index in reading_
        cd = index in cds
        for tokens in steps_of(lines[index]):
            if touches or cd:
                at_touch = step_cwd(tokens, at_touch)
            if reads or cd:
                at_read = step_cwd(tokens, at_read)
            if touches:
                touched.extend(
                    (joined(p, at_touch), how) for p, how in step_touches(tokens) if path_like(p)
                )
            if reads:
                read.extend((joined(p, at_read), READ) for p in step_reads(tokens))
    touched.extend(_script_touches(command, lines, bodies, cwd))
    return tuple(dict.fromkeys(touched)), tuple(dict.fromkeys(read))


def _script_touches(
    command: str, lines: Sequence[str], bodies: Sequence[str], cwd: str | None
) -> Iterator[Touch]:
    """The files the scripts in a command write (heredoc bodies, inline code) and the
    files of a patch it applies, joined to the working directory its ``cd`` steps leave."""
    scripts = list(bodies)
    text = command[:SCAN_CHARS]
    if any(w in text for w in SCRIPT_GATE) and any(i in text for i in INTERPRETERS):
        scripts.append("\n".join(lines))
    written = [path for body in scripts for path in script_writes(body)]
    if bodies and _applies_patch(lines):  # a patch's files come from the bodies
        written.extend(path for body in bodies for path in diff_targets(body))
    if not written:  # most commands: no walk of the lines for their ``cd`` steps
        return iter(())
    here = final_cwd(lines, cwd)
    return ((joined(path, here), MODIFIED) for path in written if path_like(path))


def _applies_patch(lines: Sequence[str]) -> bool:
    """A step of ``lines`` runs ``patch`` or ``git apply`` (not a check or a dry run)."""
    for line in lines:
        if "patch" not in line and "apply" not in line:
            continue
        for tokens in steps_of(line):
            if patch_program(step_program(tokens)[0]):
                return True
    return False


# --- read-only commands ----------------------------------------------------------------


def is_read_only(command: str) -> bool:
    """Whether a shell command only reads: every step runs a reading program (``cat``,
    ``grep``, ``ls``, ``sed`` without ``-i``, ``git status`` ...) and nothing is
    redirected into a file. Remembered in the command's record."""
    record = reading(command)
    found = record.read_only
    if found is UNREAD:
        found = record.read_only = _is_read_only(command)
    return found


def _is_read_only(command: str) -> bool:
    lines, bodies = lines_of(command)
    if bodies or not lines or len(command) > SCAN_CHARS:
        return False
    touching = line_gates(command)[0]
    for index, line in enumerate(lines):
        steps = steps_of(line)
        if index in touching and any(step_touches(tokens) for tokens in steps):
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


def is_bookkeeping(command: str) -> bool:
    """Whether a command only keeps the books: every step a tracker look-up or update
    (``bd show``, ``bd update X --status in_progress``, ``gh issue view``), a ``chmod``
    or ``mkdir``, or a reading step. Not a Done item: it shows no work done.
    Remembered, as :func:`is_read_only`."""
    record = reading(command)
    found = record.book_keeping
    if found is UNREAD:
        found = record.book_keeping = _is_bookkeeping(command)
    return found


def _is_bookkeeping(command: str) -> bool:
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


def _book_step(tokens: tuple[str, ...]) -> bool | None:
    """``True`` for a bookkeeping step, ``False`` for a reading one, ``None`` for work;
    remembered in the step's record."""
    record = reading(tokens)
    found = record.book
    if found is UNREAD:
        found = record.book = _book_kind(tokens)
    return found


def _book_kind(tokens: tuple[str, ...]) -> bool | None:
    _, _, words, head = step_program(tokens)
    if head in _HOUSEKEEPING:
        return True
    if head in _TRACKERS:
        verbs = [w for w in words[1:] if not w.startswith("-")][:2]
        state = any(part in _STATE_WORDS for w in words[1:] for part in w.split("="))
        return True if any(v in _TRACKER_BOOKS for v in verbs) and not state else None
    return False if _reads_only(tokens) else None


def _reads_only(tokens: tuple[str, ...]) -> bool:
    """Whether a step only reads; remembered in the step's record."""
    record = reading(tokens)
    found = record.reads_only
    if found is UNREAD:
        found = record.reads_only = _step_reads_only(tokens)
    return found


def _step_reads_only(tokens: tuple[str, ...]) -> bool:
    _, _, words, head = step_program(tokens)
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
    as ``sudo`` or ``timeout 60``); remembered in the command's record."""
    record = reading(command)
    found = record.program
    if found is UNREAD:
        found = record.program = _program_of(command)
    return found


def _program_of(command: str) -> str:
    for line in lines_of(command)[0]:
        for tokens in steps_of(line):
            words = step_program(tokens)[0]
            if words and words[0] not in {"cd", "export", "set"} and not is_assignment(words[0]):
                return words[0].rsplit("/", 1)[-1]
    return ""
