"""The one per-process cache of command readings: a record per distinct shell text.

Every reader of a shell command (:mod:`.shellwords`, :mod:`.steps`, :mod:`.commands`,
:mod:`.checks`) asks the record of its text here, and fills in the field it reads the
first time it is asked: the record is built lazily, field by field, and each field is
computed by the one module that owns that reading. Agents re-run the same commands, and
the same lines and steps recur across commands, so a long-lived process (the gateway)
reads each distinct text once while it stays in the cache.

Three kinds of text share the cache, each a key of its own:

- a command: its lines and heredoc bodies, its line gates, the files it writes and reads,
  its patches, whether it only reads or keeps the books, its check kind, its steps as
  strings, the program it runs;
- a line of a command, or a step as a string: the same record, keyed by the text (a
  one-line command *is* its line: one record serves both); the fields a line or segment
  uses are its tokenized steps and its check verdict;
- a step as its words (keyed by the tuple of words, which never equals a string key):
  its program, the files it writes and reads, whether it only reads, whether it keeps
  the books.

What must hold: a field, once set, is a pure function of the key (and of the ``cwd``
stored beside it, for the two readings that depend on one), so a record may be dropped
and rebuilt at any time with the same results; the values are shared and must not be
mutated. The bound: at most :data:`READINGS_KEPT` records, the least recently used
dropped first (``functools.lru_cache`` is the store: a hit costs no Python frame, which
matters at thousands of lookups a compaction, and it is thread-safe; two threads filling
the same field store equal values). A record holds only the fields set on it (unset ones
read the class default, :data:`UNREAD`), so a step's record costs no command fields.
"""

from __future__ import annotations

import enum
import functools
from typing import Final

READINGS_KEPT: Final = 16_384
"""The most records kept (commands, lines, segments and steps together). A long session
has a few hundred distinct commands and a few thousand distinct lines and steps."""


class Unread(enum.Enum):
    """A field not read yet (``None`` and ``False`` are readings)."""

    UNREAD = 0


UNREAD: Final = Unread.UNREAD

Touch = tuple[str, str]
Files = tuple[tuple[Touch, ...], tuple[Touch, ...]]
Patches = tuple[tuple[str, tuple[str, ...]], ...]
StepProgram = tuple[tuple[str, ...], str, tuple[str, ...], str]
"""A step's program words, program name, words without redirects, their program name."""


class Reading:
    """The readings of one command, line, segment or step (see the module docstring);
    each field :data:`UNREAD` until its reader fills it in."""

    # a command's (and a line's, a segment's)
    lines: tuple[str, ...] | Unread = UNREAD
    bodies: tuple[str, ...] = ()
    # (lines the writers' gate matches, lines the readers' gate matches, lines that say
    # "cd "): indices into ``lines``
    gates: tuple[frozenset[int], frozenset[int], frozenset[int]] | Unread = UNREAD
    files: Files | Unread = UNREAD
    files_cwd: str | None = None
    patches: Patches | Unread = UNREAD
    patches_cwd: str | None = None
    read_only: bool | Unread = UNREAD
    book_keeping: bool | Unread = UNREAD
    check_kind: str | Unread | None = UNREAD
    segments: tuple[str, ...] | Unread = UNREAD
    program: str | Unread = UNREAD
    steps: tuple[tuple[str, ...], ...] | Unread = UNREAD
    step_check: str | Unread | None = UNREAD
    # a step's (its words)
    step_program: StepProgram | Unread = UNREAD
    reads: tuple[str, ...] | Unread = UNREAD
    touches: tuple[Touch, ...] | Unread = UNREAD
    reads_only: bool | Unread = UNREAD
    book: bool | Unread | None = UNREAD


@functools.lru_cache(maxsize=READINGS_KEPT)
def reading(key: str | tuple[str, ...]) -> Reading:
    """The record of a command, line or segment text, or of a step's words (made empty
    on first use)."""
    return Reading()


def kept() -> int:
    """How many records the cache holds now."""
    return reading.cache_info().currsize


def forget() -> None:
    """Drop every record (tests and benchmarks: the next reading is a cold one)."""
    reading.cache_clear()
