"""A work item's evidence kept as entries, its file verbs' entries as counts rendered once
(issue 27: the tracker read back and wrote again an item's whole file entry at every
edit, the square of its files): after any sequence of steps, from any previous evidence,
the rendered evidence is the text the entry-by-entry code built, odd file names included
(commas, quotes, backticks, spaces, line breaks, names ending as a count does)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowkeeper.summary.handoff.items import (
    _COUNT,
    _FILE_VERBS,
    MAX_EVIDENCE,
    ItemTracker,
    _file_counts,
    _file_entry,
    evidence_key,
    noted,
    rendered,
)
from windowkeeper.summary.handoff.model import WorkItem


def _old_with_file(entry: str, path: str) -> str:
    verb, counts = _file_counts(entry)
    counts[path] = counts.pop(path, 0) + 1
    return _file_entry(verb, counts)


def _old_with_evidence(evidence: Sequence[str], entry: str) -> tuple[str, ...]:
    """The code this replaced: every entry's text read back at every step."""
    key = evidence_key(entry)
    kept = [e for e in evidence if evidence_key(e) != key]
    old = next((e for e in evidence if evidence_key(e) == key), None)
    if old is not None and entry.startswith(_FILE_VERBS):
        entry = _old_with_file(old, entry.split(" ", 1)[1])
    elif old is not None and entry.startswith("ran "):
        match = _COUNT.search(old)
        entry = f"{key} ×{int(match.group(1)) + 1 if match else 2}"
    return (*kept, entry)[-MAX_EVIDENCE:]


_ODD = st.sampled_from([
    "a.py", "b.py", "src/c d.py", "x,y.py", "p, q.py", '"q".py', "`t`.py", " lead.py",
    "trail.py ", "f ×2", "g ×0", "h ×2 ×3", "", "line\nbreak.py", "end\n", "k ×5\n", "×3",
    "u ×", "v\u2028w", "ü.py", "a ×٣",
])  # fmt: skip
_PATHS = st.one_of(_ODD, st.text(alphabet='ab ×1,"`\n', max_size=8))
_STEPS = st.one_of(
    st.builds(lambda verb, path: f"{verb} {path}", st.sampled_from(["edited", "wrote"]), _PATHS),
    st.sampled_from([
        "ran `make`", "ran `make` ×3", "ran `ls`", "tests passed: `pytest`", "tests failed: 1",
        "lint passed", "claimed", "closed", "committed 1a2b3c4", "pushed",
    ]),
)  # fmt: skip
# What a previous handoff's items may carry (read back from its text): entries written
# as counted, with several files, or with the same key twice.
_PREVIOUS = st.one_of(
    _STEPS,
    st.sampled_from([
        "edited 3 files", "wrote a.py ×2, b.py", "edited a.py, a.py ×2", "edited",
        "edited ×3", 'edited "x, y" ×2, z', "edited a ×0, b ×2 ×3", "ran `make` ×x",
        "edited a.py ×0, b.py", "wrote a.py ×2 ×1", "edited f ×2 ×1, g ×0",
    ]),
)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(_PREVIOUS, max_size=12), st.lists(_STEPS, max_size=40))
# A text whose counts do not read back as they were read: "f ×2" counted once (read back
# as f twice), "a.py ×0" (read back as once).
@example(["edited f ×2 ×1"], ["edited g", "edited h", "edited f"])
@example(["edited a.py ×0, b.py"], ["edited c", "edited a.py"])
def test_entries_render_what_the_text_at_every_step_was(
    previous: list[str], steps: list[str]
) -> None:
    old = tuple(previous)
    entries = [(evidence_key(e), e) for e in previous]
    for step in steps:
        old = _old_with_evidence(old, step)
        entries = noted(entries, step)
        assert rendered(entries) == old


@given(st.lists(st.tuples(st.sampled_from(["x-1", "x-2"]), _STEPS), max_size=30))
def test_the_tracker_gives_the_items_the_text_at_every_step_gave(
    notes: list[tuple[str, str]],
) -> None:
    previous = (WorkItem("x-2", "Two", ("claimed", "edited a.py ×2, b.py")),)
    tracker = ItemTracker([], previous)
    expected = {item.id: item.evidence for item in previous}
    for item, step in notes:
        tracker.note(item, step)
        expected[item] = _old_with_evidence(expected.get(item, ()), step)
        assert {i.id: i.evidence for i in tracker.items()} == expected


def test_a_name_ending_as_a_count_is_read_back_as_the_text_was() -> None:
    # "f ×2" reads back as f changed twice: the next change of f makes it three (and last).
    entries = noted([], "edited f ×2")
    entries = noted(entries, "edited g")
    entries = noted(entries, "edited f")
    assert rendered(entries) == ("edited g, f ×3",)
    assert rendered(noted(noted([], "edited x"), "edited x")) == ("edited x ×2",)
