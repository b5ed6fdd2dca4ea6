"""The one per-process cache of command readings: a record per distinct shell text.

Every reader of a shell command (:mod:`.shellwords`, :mod:`.steps`, :mod:`.commands`,
:mod:`.checks`) asks the record of its text here for the field it reads: the record is
built lazily, field by field (:class:`Field`), and each field is computed by the one
function its owner module bound to it at import (``@Reading.program.reader``). Agents
re-run the same commands, and the same lines and steps recur across commands, so a
long-lived process (the gateway) reads each distinct text once while it stays in the
cache.

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
the same field store equal values). A record holds its key and only the fields read on
it, so a step's record costs no command fields.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, Generic, TypeVar, overload

READINGS_KEPT: Final = 16_384
"""The most records kept (commands, lines, segments and steps together). A long session
has a few hundred distinct commands and a few thousand distinct lines and steps."""


K = TypeVar("K", str, tuple[str, ...])
T = TypeVar("T")
R = TypeVar("R", bound=Callable[..., object])

Touch = tuple[str, str]
Files = tuple[tuple[Touch, ...], tuple[Touch, ...]]
Patches = tuple[tuple[str, tuple[str, ...]], ...]
StepProgram = tuple[tuple[str, ...], str, tuple[str, ...], str]
"""A step's program words, program name, words without redirects, their program name."""


class _Read(Generic[R]):
    """What :class:`Field` and :class:`AtCwd` share: a name on :class:`Reading` and the
    one function, bound by its owner module at import, that makes the reading."""

    __slots__ = ("name", "read")

    def __init__(self) -> None:
        self.name = ""
        self.read: R | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def reader(self, read: R) -> R:
        """Make ``read`` the one function that fills this reading (a decorator)."""
        if self.read is not None:
            raise TypeError(f"the reading {self.name!r} has a reader already")
        self.read = read
        return read

    def reader_of(self) -> R:
        """The bound function (a reading asked before its owner is imported raises)."""
        if self.read is None:
            raise TypeError(f"the reading {self.name!r} has no reader")
        return self.read


class Field(_Read[Callable[[K], T]]):
    """One field of :class:`Reading`: read by its owner's function of the record's key
    the first time it is asked, then held on the record.

    What makes a hit cheap: this is a non-data descriptor (no ``__set__``), so the value
    stored on the record shadows it and a later read is the interpreter's own attribute
    look-up, with no Python frame and no "not read yet" test; only the first read of a
    field reaches :meth:`__get__`. The owner binds the function once, at import
    (:meth:`reader`); a field read before its owner is imported raises."""

    __slots__ = ()

    @overload
    def __get__(self, record: None, owner: type) -> Field[K, T]: ...
    @overload
    def __get__(self, record: Reading, owner: type) -> T: ...
    def __get__(self, record: Reading | None, owner: type) -> Field[K, T] | T:
        # A miss costs this one frame beyond the reader (no helper, no ``cast`` call):
        # a compaction's first readings are all misses.
        if record is None:
            return self
        read = self.read
        if read is None:
            raise TypeError(f"the reading {self.name!r} has no reader")
        value = read(record.key)  # type: ignore[arg-type]  # K: the record's key type
        setattr(record, self.name, value)  # shadows the descriptor from now on
        return value


class AtCwd(_Read[Callable[[str, str | None], T]]):
    """A reading of a command that depends on a working directory too: the record holds
    (the last directory asked, the reading there), as agents re-run a command from the
    same directory. Asked through :meth:`ask`, not as an attribute."""

    __slots__ = ()

    def ask(self, command: str, cwd: str | None) -> T:
        """The reading of ``command`` in ``cwd``, made when the record holds none for it."""
        record = reading(command)
        held: tuple[str | None, T] | None = record.__dict__.get(self.name)
        if held is None or held[0] != cwd:
            held = (cwd, self.reader_of()(command, cwd))
            setattr(record, self.name, held)
        return held[1]


class Reading:
    """The readings of one command, line, segment or step (see the module docstring);
    each field read when first asked (:class:`Field`)."""

    # a command's (and a line's, a segment's)
    split: Field[str, tuple[tuple[str, ...], tuple[str, ...]]] = Field()
    """(command lines, heredoc bodies)."""
    # (lines the writers' gate matches, lines the readers' gate matches, lines that say
    # "cd "): indices into the lines
    gates: Field[str, tuple[frozenset[int], frozenset[int], frozenset[int]]] = Field()
    read_only: Field[str, bool] = Field()
    book_keeping: Field[str, bool] = Field()
    check_kind: Field[str, str | None] = Field()
    segments: Field[str, tuple[str, ...]] = Field()
    program: Field[str, str] = Field()
    steps: Field[str, tuple[tuple[str, ...], ...]] = Field()
    step_check: Field[str, str | None] = Field()
    # a step's (its words)
    step_program: Field[tuple[str, ...], StepProgram] = Field()
    reads: Field[tuple[str, ...], tuple[str, ...]] = Field()
    touches: Field[tuple[str, ...], tuple[Touch, ...]] = Field()
    reads_only: Field[tuple[str, ...], bool] = Field()
    book: Field[tuple[str, ...], bool | None] = Field()
    # a command's readings that depend on a working directory too
    files: AtCwd[Files] = AtCwd()
    patches: AtCwd[Patches] = AtCwd()

    def __init__(self, key: str | tuple[str, ...]) -> None:
        self.key = key


@functools.lru_cache(maxsize=READINGS_KEPT)
def reading(key: str | tuple[str, ...]) -> Reading:
    """The record of a command, line or segment text, or of a step's words (made empty
    on first use)."""
    return Reading(key)


def kept() -> int:
    """How many records the cache holds now."""
    return reading.cache_info().currsize


def forget() -> None:
    """Drop every record (tests and benchmarks: the next reading is a cold one)."""
    reading.cache_clear()
