"""The one per-process cache of command readings: a record per distinct shell text.

Every reader of a shell command (:mod:`.shellwords`, :mod:`.steps`, :mod:`.commands`,
:mod:`.checks`) asks the record of its text here, and fills in the field it reads the
first time it is asked: the record is built lazily, field by field, and each field is
computed by the one module that owns that reading. Agents re-run the same commands, and
the same lines and steps recur across commands, so a long-lived process (the gateway)
reads each distinct text once while it stays in the cache.

Four kinds of text share the cache, each a key of its own:

- a command (:class:`CommandReading`): its lines and heredoc bodies, its line gates, the
  files it writes and reads, its patches, whether it only reads or keeps the books, its
  check kind, its steps as strings, the program it runs;
- a line of a command, or a step as a string: the same class, keyed by the text (a
  one-line command *is* its line: the record serves both); the fields a line or segment
  uses are its tokenized steps and its check verdict;
- a step as its words (:class:`StepReading`, keyed by the tuple of words, which never
  equals a string key): its program, the files it writes and reads, whether it only
  reads, whether it keeps the books.

What must hold: a field, once set, is a pure function of the key (and of the ``cwd``
stored beside it, for the two readings that depend on one), so a record may be dropped
and rebuilt at any time with the same results; the values are shared and must not be
mutated. The bound: at most :data:`READINGS_KEPT` records; when full, the oldest quarter
(by first use) is dropped at once, so a miss costs amortized O(1) and the cache never
holds more. Lookups are single dictionary reads (atomic under the GIL); insertions and
evictions hold a lock, so concurrent readers never see a half-evicted cache (two threads
computing the same field store equal values).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Sequence
from itertools import islice
from typing import Final, cast

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


class CommandReading:
    """The readings of one command, line or step text (see the module docstring)."""

    __slots__ = (
        "bodies",
        "book_keeping",
        "check_kind",
        "files",
        "files_cwd",
        "gates",
        "lines",
        "patches",
        "patches_cwd",
        "program",
        "read_only",
        "segments",
        "step_check",
        "steps",
    )

    def __init__(self) -> None:
        self.lines: tuple[str, ...] | Unread = UNREAD
        self.bodies: tuple[str, ...] = ()
        # (lines the writers' gate matches, lines the readers' gate matches, lines that
        # say "cd "): indices into ``lines``
        self.gates: tuple[frozenset[int], frozenset[int], frozenset[int]] | Unread = UNREAD
        self.files: Files | Unread = UNREAD
        self.files_cwd: str | None = None
        self.patches: Patches | Unread = UNREAD
        self.patches_cwd: str | None = None
        self.read_only: bool | Unread = UNREAD
        self.book_keeping: bool | Unread = UNREAD
        self.check_kind: str | Unread | None = UNREAD
        self.segments: tuple[str, ...] | Unread = UNREAD
        self.program: str | Unread = UNREAD
        self.steps: tuple[tuple[str, ...], ...] | Unread = UNREAD
        self.step_check: str | Unread | None = UNREAD


class StepReading:
    """The readings of one step, as its words (see the module docstring)."""

    __slots__ = ("book", "program", "reads", "reads_only", "touches")

    def __init__(self) -> None:
        self.program: tuple[Sequence[str], str, list[str], str] | Unread = UNREAD
        self.reads: tuple[str, ...] | Unread = UNREAD
        self.touches: tuple[Touch, ...] | Unread = UNREAD
        self.reads_only: bool | Unread = UNREAD
        self.book: bool | Unread | None = UNREAD


_RECORDS: dict[str | tuple[str, ...], CommandReading | StepReading] = {}
_LOCK = threading.Lock()


def reading(text: str) -> CommandReading:
    """The record of a command, line or segment text (made empty on first use)."""
    found = _RECORDS.get(text)
    if found is None:
        found = _kept(text, CommandReading())
    return cast(CommandReading, found)  # a str key always holds one


def step_reading(words: tuple[str, ...]) -> StepReading:
    """The record of a step's words (made empty on first use)."""
    found = _RECORDS.get(words)
    if found is None:
        found = _kept(words, StepReading())
    return cast(StepReading, found)  # a tuple key always holds one


def _kept(
    key: str | tuple[str, ...], record: CommandReading | StepReading
) -> CommandReading | StepReading:
    with _LOCK:
        present = _RECORDS.get(key)
        if present is not None:  # another thread made it meanwhile
            return present
        if len(_RECORDS) >= READINGS_KEPT:
            for old in list(islice(_RECORDS, READINGS_KEPT // 4)):
                del _RECORDS[old]
        _RECORDS[key] = record
    return record


def kept() -> int:
    """How many records the cache holds now."""
    return len(_RECORDS)


def forget() -> None:
    """Drop every record (tests and benchmarks: the next reading is a cold one)."""
    with _LOCK:
        _RECORDS.clear()
