"""Shell command lines as words: lines with their heredoc bodies, steps split at the
operators, quotes removed, and the working directory a ``cd`` leaves (the readers of
:mod:`.commands` and :mod:`.patches` start here).

Everything is bounded: only the first :data:`SCAN_CHARS` characters of a command are
read; the tokenizer is a regular expression close to ``shlex`` for what is recognized
(and much faster), and its results are remembered in the command's record
(:mod:`.readings`), since agents re-run the same commands.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence

from .readings import UNREAD, reading

SCAN_CHARS = 20_000

Lines = tuple[str, ...]
Steps = tuple[tuple[str, ...], ...]

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")


def lines_of(command: str) -> tuple[Lines, Lines]:
    """(command lines, heredoc bodies) of a command line, heredoc bodies set aside.

    Remembered in the command's record: every reader of a command (files touched and
    read, read-only, steps, program) starts here, and agents re-run the same commands.
    """
    record = reading(command)
    lines = record.lines
    if lines is UNREAD:
        lines, record.bodies = split_lines(command)
        record.lines = lines
    return lines, record.bodies


def split_lines(command: str) -> tuple[Lines, Lines]:
    """:func:`lines_of`, not remembered."""
    text = command[:SCAN_CHARS]
    if "<<" not in text:
        return tuple(line for line in text.split("\n") if line.strip()), ()
    rows = list(heredoc_rows(text))
    return tuple(line for line, _ in rows), tuple(body for _, bodies in rows for body in bodies)


def heredoc_rows(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each non-blank line of ``text`` with the bodies of the heredocs it opens (a body
    runs to the first line that is its end word, spaces around it ignored, or to the end).

    A body's end is found with ``list.index``, not a row at a time in Python: bodies
    (files written with ``cat <<EOF``) are most of such texts. An end word on a row of its
    own is found among the rows as they are; only when a row before it holds the word
    (which may be the end with spaces around it) are the rows stripped, once a text."""
    rows = text.split("\n")
    stripped: list[str] | None = None
    index = 0
    while index < len(rows):
        line = rows[index]
        index += 1
        bodies: list[str] = []
        for match in _HEREDOC.finditer(line) if "<<" in line else ():
            word = match.group(2)
            stop = _index(rows, word, index)
            body = "\n".join(rows[index:stop])
            if word in body:  # a row before ``stop`` may strip to the word
                if stripped is None:
                    stripped = [row.strip() for row in rows]
                stop = _index(stripped, word, index)
                body = "\n".join(rows[index:stop])
            bodies.append(body)
            index = stop + 1
        if line.strip():
            yield line, bodies


def _index(rows: list[str], word: str, start: int) -> int:
    """Where ``word`` is first among ``rows`` from ``start`` (their end if nowhere)."""
    try:
        return rows.index(word, start)
    except ValueError:
        return len(rows)


# A shell word (quoted parts, escapes and plain characters glued together) or an operator,
# each after the whitespace in front of it. ``sre`` costs per character of the line
# (~600 instructions a character before these forms were chosen), so:
# - a run of plain characters other than ``>`` is taken at once (the first piece): one at
#   a time, the engine tried every other alternative before each character; ``>`` is
#   left to the others, so ``>&`` is still read as one piece;
# - the whitespace is consumed in front of the match (``\s*+``): without it every blank
#   was a failed attempt at every alternative. A character that starts neither (an
#   unbalanced quote, ``;&``) is consumed alone as an empty pair the reader skips (the
#   old search skipped it the same way); the line's trailing blanks are cut first, or
#   the run would be retried from each of its blanks (the square of its length);
# - a word is tried before an operator: no operator starts where a word does (``&>``,
#   ``|&`` are words, ``&&``, ``||``, ``;``, ``|``, ``&`` are not), and words are most;
# - the quantifiers are possessive and a double-quoted string is unrolled: nothing
#   follows a word inside the pattern, so the engine never comes back into one and
#   saves no state to do so.
_WORD = re.compile(
    r"""\s*+(?:((?:[^\s'"\\;|&>]++|'[^']*+'|"[^"\\]*+(?:\\.[^"\\]*+)*+"|\\.|>&|&>|\|&|>)++)"""
    r"""|(&&|\|\||[;|](?!&)|&(?!>))|\S)"""
)
_SPECIAL = re.compile(r"""['"\\;|&]""")
"""A line holding none of these is its whitespace-separated words, one step."""
_QUOTED = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""", re.DOTALL)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def _unquoted(word: str) -> str:
    """``word`` (as ``_WORD`` reads it) without its quotes and escapes.

    With no backslash and one kind of quote, every quote in the word is a delimiter (the
    other kind, which may hold it, is absent), so dropping them all is the same text as
    the pieces' substitution, which calls back into Python for each piece."""
    single = "'" in word
    double = '"' in word
    if "\\" not in word:
        if not double:
            return word.replace("'", "") if single else word
        if not single:
            return word.replace('"', "")
    return _QUOTED.sub(_plain, word)


def _plain(match: re.Match[str]) -> str:
    """One quoted piece or escape of a word, as its text."""
    if match.group(1) is not None:
        return match.group(1)
    inner = match.group(2)
    if inner is not None:  # a template substitution costs microseconds: only escapes
        return _ESCAPE.sub(r"\1", inner) if "\\" in inner else inner
    return match.group(3)


def steps_of(line: str) -> Steps:
    """The steps of one command line, each as its words (quotes removed); remembered in
    the line's record (:func:`tokenized` reads them)."""
    record = reading(line)
    found = record.steps
    if found is UNREAD:
        found = record.steps = tokenized(line)
    return found


def tokenized(line: str) -> Steps:
    """The steps of one command line, each as its words (quotes removed).

    A regular-expression tokenizer, close to ``shlex`` for what is recognized here (and
    much faster): operators split steps even without spaces, ``#`` starts a comment.
    """
    if _SPECIAL.search(line) is None:
        return _plain_step(line.split())
    text = line.rstrip()  # trailing blanks make no token (see ``_WORD``) ...
    if text[-1:] == "\\":  # ... but the first one after a backslash may be escaped
        text = line[: len(text) + 1]
    step: list[str] = []
    steps = [step]
    for word, operator in _WORD.findall(text):
        if word:
            if word[0] == "#":
                break
            step.append(_unquoted(word))
        elif operator:
            step = []
            steps.append(step)
    return tuple(tuple(step) for step in steps if step)


def _plain_step(words: list[str]) -> Steps:
    """The steps of a line with no quote, escape or operator: its words up to the first
    that starts a comment (``_WORD`` reads such a line as its maximal runs of
    non-whitespace, and ``\\s`` and ``str.split`` agree on whitespace)."""
    for index, word in enumerate(words):
        if word[0] == "#":
            del words[index:]
            break
    return (tuple(words),) if words else ()


# --- steps as strings (the failure tracker's and the checks' reading) ------------------

_ENV_PREFIX = re.compile(r"^(?:[A-Za-z_]\w*=\S*\s+)+(?=\S)")


def segment_texts(command: str) -> tuple[str, ...]:
    """:func:`segments` as a tuple, remembered in the command's record."""
    record = reading(command)
    found = record.segments
    if found is UNREAD:
        found = record.segments = split_segments(command)
    return found


def split_segments(command: str) -> tuple[str, ...]:
    """:func:`segments`, not remembered."""
    lines = lines_of(command)[0] if "<<" in command else [command]
    # a part is blank exactly when its collapsed words are empty
    collapsed = [" ".join(p.split()) for line in lines for p in _separated(line)]
    steps = [step for step in collapsed if step]
    # an assignment holds "=": most steps have none and skip the pattern, which can only
    # match at the start (``sub`` would try it at every position of the step)
    return tuple([_unprefixed(s) if "=" in s else s for s in steps])


def _separated(line: str) -> list[str]:
    """``line`` split at ``&&``, ``||``, ``;`` and line breaks (the regex split
    ``&&|\\|\\||;|\\n``, which the tests keep): each separator made a line break by str's
    own scans, about twice as fast. What must hold: ``&&`` and ``||`` are replaced left to
    right without overlaps as the engine finds them, and no replacement makes another."""
    return line.replace("&&", "\n").replace("||", "\n").replace(";", "\n").split("\n")


def _unprefixed(step: str) -> str:
    """``step`` without the environment assignments in front of it."""
    found = _ENV_PREFIX.match(step)
    return step[found.end() :] if found else step


def segments(command: str) -> list[str]:
    """The steps of a shell command line (``&&``, ``;``, ``||`` and line breaks; heredoc
    bodies are not steps), each normalized: words collapsed, leading environment
    assignments dropped (``PYTHONPATH=. python t.py`` runs ``python t.py``); remembered
    in the command's record."""
    return list(segment_texts(command))


def command_cwd(command: str, cwd: str | None) -> str | None:
    """The working directory after ``command`` ran from ``cwd`` (its ``cd`` steps followed)."""
    return final_cwd(lines_of(command)[0], cwd)


def final_cwd(lines: Sequence[str], cwd: str | None) -> str | None:
    """The working directory after ``lines`` (their ``cd`` steps followed)."""
    here = cwd
    for line in lines:
        if "cd " in line:
            for tokens in steps_of(line):
                here = step_cwd(tokens, here)
    return here


def step_cwd(tokens: Sequence[str], cwd: str | None) -> str | None:
    """The working directory after one step (``cd DIR``)."""
    if len(tokens) == 2 and tokens[0] == "cd":
        return joined(tokens[1], cwd)
    return cwd


def joined(path: str, cwd: str | None) -> str:
    """``path`` joined to ``cwd`` when it is relative and ``cwd`` is known."""
    if not cwd or path.startswith(("/", "~")) or not path:
        return path
    return posixpath.normpath(posixpath.join(cwd, path))
