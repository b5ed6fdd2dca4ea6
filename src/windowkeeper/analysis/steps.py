"""One reading of each shell step (its words, as :func:`.shellwords.steps_of` makes them),
shared by every reader of a command in :mod:`.commands`: the program it runs, the files
it writes and reads, whether it only reads, whether it keeps the books.

Each fact is made once per distinct step and remembered in the step's record
(:mod:`.readings`): agents run the same steps in many commands, and before, each reader
of a command found a step's program again (past ``sudo``, ``timeout 60``, assignments …)
and judged it on its own. The remembered values are shared: they must not be mutated.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from .readings import UNREAD, StepProgram, reading
from .writers import copied, in_place, in_place_files, program_writes, until_redirect, unwrapped

READ, MODIFIED, DELETED = "read", "modified", "deleted"

Touch = tuple[str, str]

VIEWERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "wc"})
SCRIPT_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "sed", "awk"})
"""Programs whose first operand is a pattern or script, unless ``-e`` / ``-f`` gives it."""
_PATHY = re.compile(r"(?! )[\w.~+@()\[\],% -]*[./][\w./~+@()\[\],% -]*(?<! )")


def step_program(tokens: tuple[str, ...]) -> StepProgram:
    """(program words, program name, program words without redirects, their program name)
    of a step; tuples, as every value the shared record holds is immutable."""
    record = reading(tokens)
    found = record.step_program
    if found is UNREAD:
        found = record.step_program = _program(tokens)
    return found


def _program(tokens: tuple[str, ...]) -> StepProgram:
    words = tuple(program_words(tokens))  # the same tuple: the tokens are one
    plain = tuple(unredirected(words))
    return (
        words,
        words[0].rsplit("/", 1)[-1] if words else "",
        plain,
        plain[0].rsplit("/", 1)[-1] if plain else "",
    )


def step_reads(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The files a viewing or searching step reads."""
    record = reading(tokens)
    found = record.reads
    if found is UNREAD:
        found = record.reads = _reads_of(tokens)
    return found


def _reads_of(tokens: tuple[str, ...]) -> tuple[str, ...]:
    words, head, _, _ = step_program(tokens)
    if head not in VIEWERS and head not in SCRIPT_FIRST:
        return ()
    if head in ("sed", "perl") and any(in_place(t, head) for t in words[1:]):
        return ()  # an in-place edit: a write
    operands = _operands(until_redirect(words[1:]))
    if head in SCRIPT_FIRST and not any(t in ("-e", "-f") for t in words[1:]):
        operands = operands[1:]
    return tuple(p for p in operands if path_like(p) and looks_like_file(p))


def step_touches(tokens: tuple[str, ...]) -> tuple[Touch, ...]:
    """(path, MODIFIED or DELETED) of each file a step writes or removes, in order."""
    record = reading(tokens)
    found = record.touches
    if found is UNREAD:
        found = record.touches = tuple(_touches_of(tokens))
    return found


def _touches_of(tokens: tuple[str, ...]) -> Iterator[Touch]:
    for index, token in enumerate(tokens):
        if token in {">", ">>"} and index + 1 < len(tokens):
            yield tokens[index + 1], MODIFIED
        elif token.startswith(">") and len(token) > 1 and token.lstrip(">")[:1] != "&":
            yield token.lstrip(">"), MODIFIED
    words, head, _, _ = step_program(tokens)
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
        yield from ((path, MODIFIED) for path in operands if looks_like_file(path))


def program_words(tokens: Sequence[str]) -> Sequence[str]:
    """The step's words from the program it runs on: the assignments before it (``X=1
    cmd``) and runners in front of it (``sudo``, ``timeout 60`` …) left out; later
    ``name=value`` words are arguments (``dd of=out.img``, ``make CC=gcc``)."""
    index = 0
    if tokens and "=" in tokens[0]:
        while index < len(tokens) and is_assignment(tokens[index]):
            index += 1
    return unwrapped(tokens[index:] if index else tokens)


def is_assignment(token: str) -> bool:
    name, sep, _ = token.partition("=")
    return bool(sep) and name.isidentifier()


def _operands(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if not t.startswith("-") and t not in {"<", ">", ">>", "2>&1"}]


def looks_like_file(path: str) -> bool:
    return "." in path.rsplit("/", 1)[-1] and not path.startswith("-")


def path_like(token: str) -> bool:
    return bool(_PATHY.fullmatch(token)) and not token.startswith("-") and token != "/dev/null"


_REDIRECT = re.compile(r"^\d*(?:>>?|<)&?\S*$")


def unredirected(words: Sequence[str]) -> list[str]:
    """``words`` without redirects (a redirect holds ``>`` or ``<``: most words skip the
    pattern)."""
    return [t for t in words if not (("<" in t or ">" in t) and _REDIRECT.match(t))]
