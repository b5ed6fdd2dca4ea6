"""The summary tier's shortcuts over a long history (issue 27 point 3): each gives what the
code it replaced gave, compared on generated input."""

from __future__ import annotations

import bisect
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis import instructions
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.resolution import OpenFailures
from windowkeeper.analysis.specs import named_documents
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.summary.handoff import users
from windowkeeper.summary.handoff.fixes import FixLog

# ASCII and not: letters of other scripts, digits that are not decimal ("²", "½": a
# letter class of the regex module would count them), marks, spaces of other kinds.
_LINE_CHARS = st.sampled_from(list("aZ q.,-_:/0 9\t\"'(") + list("éßЖ中²½\u0301\u00a0İ"))


def _letters_one_by_one(text: str) -> int:
    """The count as ``is_own_line`` made it before (a character at a time)."""
    return sum(1 for c in text if c.isalpha() or c == " ")


@settings(max_examples=2_000, deadline=None)
@given(st.text(_LINE_CHARS, max_size=60) | st.text(max_size=60))
def test_prose_letters_count_as_one_character_at_a_time(text: str) -> None:
    assert instructions._prose_letters(text) == _letters_one_by_one(text)


_NAMED = re.compile(r"(?<![\w./~-])[\w./~-]*[\w-]\.(?:md|markdown|txt|rst|adoc|mdx)\b")
_PATH_PIECES = st.sampled_from([
    "see ", "docs/", "README", ".md", ".MD", ".mdx", ".markdown", ".txt", ".rst", ".adoc",
    ".", "a", "-", "~/", " ", "\n", "notes", "x.mdz", "é", "_", ".md.", "`",
])  # fmt: skip


def _named_ungated(texts: list[str]) -> frozenset[str]:
    """The document names as found before the substring gate (every text with a dot)."""
    found = set()
    for text in texts:
        for match in _NAMED.finditer(text):
            found.add(match.group(0).rsplit("/", 1)[-1].lower())
    return frozenset(found)


@settings(max_examples=1_000, deadline=None)
@given(st.lists(st.lists(_PATH_PIECES, max_size=12).map("".join), max_size=4))
def test_named_documents_gate_leaves_out_only_texts_without_a_name(texts: list[str]) -> None:
    assert named_documents(texts) == _named_ungated(texts)


def _event(position: int, change: str | None) -> ToolEvent:
    action = ToolAction("bash", ToolKind.SHELL, "make", command="make")
    event = ToolEvent(position, action, {}, "ok", 0, False)
    event.memo["change"] = change  # what change_of returns for it (computed once, kept)
    return event


def _between_tuples(changes: list[tuple[int, str]], start: int, end: int) -> str:
    """``FixLog._between`` as it was: one list of (position, change) tuples, bisected by
    tuple and read back through a generator."""
    if start < 0 or end <= start:
        return ""
    low = bisect.bisect_right(changes, (start, "\uffff"))
    high = bisect.bisect_left(changes, (end, ""))
    found = list(dict.fromkeys(c for _, c in changes[low:high]))
    if not found:
        return ""
    more = len(found) - 3
    return ", ".join(found[-3:]) + (f" (+{more} earlier)" if more > 0 else "")


_CHANGES = st.sampled_from([None, None, "edited a.py", "edited b.py", "ran `make`", "wrote c"])


@settings(max_examples=1_000, deadline=None)
@given(
    st.lists(_CHANGES, min_size=1, max_size=30),
    st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=10),
)
def test_changes_between_a_failure_and_its_fix_as_before(
    changes: list[str | None], pairs: list[tuple[int, int]]
) -> None:
    events = [_event(i, change) for i, change in enumerate(changes)]
    log = FixLog(OpenFailures())
    for index, event in enumerate(events):
        log.seen(index, event)
    seen = [(i, c) for i, c in enumerate(changes) if c is not None]
    for older, newer in pairs:
        if older < len(events) and newer < len(events):
            expected = _between_tuples(seen, older, newer)
            assert log._between(events[older], events[newer]) == expected


_WORDS = st.sampled_from([
    "Please", "PLS", "can", "You", "I'd", "id", "like", "dON'T", "dont", "never", "Only",
    "onlyx", "xmust", "?", " ?", "? ", "?\n", "\t", " ", ",", "-", "1.", "Fix", "the", "a",
    "é", "ſ", "İ", "K", "ı", "_", "2", "²", "\u0301", "make sure", "We", "SHOULD",
])  # fmt: skip


@settings(max_examples=2_000, deadline=None)
@given(st.lists(_WORDS, max_size=10).map("".join) | st.lists(_WORDS, max_size=10).map(" ".join))
def test_asks_as_the_case_insensitive_pattern_over_the_line(line: str) -> None:
    first = instructions._BULLET.sub("", line.strip(), count=1).split(" ", 1)[0]
    imperative = first.strip(",:;.!").lower() in instructions._IMPERATIVES
    expected = bool(instructions._ASKS.search(line)) or imperative
    assert instructions.asks(line) == expected


@settings(max_examples=2_000, deadline=None)
@given(
    st.text(_LINE_CHARS, max_size=60)
    | st.lists(_WORDS, max_size=10).map(" ".join)
    | st.text(max_size=40)
)
def test_word_count_is_the_runs_the_letter_class_finds(text: str) -> None:
    assert instructions._word_count(text) == len(instructions._WORD.findall(text))


# _VALUE as one alternation, as it was before its shapes were searched one by one.
_VALUE = re.compile(
    r"\d{2,}|\d+\.\d+|`[^`\n]{1,80}`|\"[^\"\n]{2,80}\"|'[^'\n]{2,80}'|https?://"
    r"|(?:^|\s)[~./][\w./-]+|\b[a-z]+_[a-z0-9_]+\b|\b[A-Z][A-Z0-9]+_[A-Z0-9_]+\b"
)
_SENTENCE_PIECES = st.sampled_from([
    "port", " is ", "IS", "=", ":", "use", "Using", "the", "a", "7", "42", "1.2", "١٢", "`x`",
    "`", '"ab"', '"', "'ab'", "'", "https://", "http://", "http:/", "/tmp", " ./a", "~", ".", "-",
    "foo_bar", "FOO_BAR", "Foo_bar", "_", "\n", "\t", " ", "é", "İs", "ſet", "K", "at",
])  # fmt: skip


@settings(max_examples=3_000, deadline=None)
@given(st.lists(_SENTENCE_PIECES, max_size=10).map("".join) | st.text(max_size=40))
def test_value_shapes_and_relation_as_the_single_patterns(sentence: str) -> None:
    assert users._has_value(sentence) == (_VALUE.search(sentence) is not None)
    assert users._relates(sentence) == (users._VALUE_RELATION.search(sentence) is not None)
