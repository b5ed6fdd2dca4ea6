"""Keeping the plot across repeated compactions (issue 9 acceptance).

- Facts the user states in prose (a preference, an exact value, a ban, a decision with its
  reason), planted early, mid and late, survive verbatim to the end and through at least
  ten compactions after they left the verbatim context.
- The first 80 characters of the original task are in the context after every compaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from factories import long_session
from plot import KINDS, first_task, plant, planted_fact, replay_watching
from realdata import real_session_paths
from windowkeeper import load_conversation

WINDOW = 4_000


@dataclass
class FactWatch:
    """Per planted fact: the compaction it left the verbatim context at, and whether it
    was findable after each compaction since."""

    planted: list[dict[str, object]]
    entered: set[int] = field(default_factory=set)
    left_at: dict[str, int] = field(default_factory=dict)
    seen: dict[str, list[bool]] = field(default_factory=dict)
    final: str = ""

    def sentences(self) -> dict[str, int]:
        """Each planted sentence and the index of the message that carried it."""
        found = {}
        for index, message in enumerate(self.planted):
            for kind in KINDS:
                text = str(message["content"])
                for sentence in _split(text):
                    if kind in _kind_of(sentence):
                        found[sentence] = index
        return found

    def appended(self, message: dict[str, object]) -> None:
        self.entered |= {i for i, m in enumerate(self.planted) if m is message}

    def check(self, ordinal: int, context: list[dict[str, object]], text: str) -> None:
        present = {id(m) for m in context}
        for sentence, index in self.sentences().items():
            if index in self.entered and id(self.planted[index]) not in present:
                self.left_at.setdefault(sentence, ordinal)
                self.seen.setdefault(sentence, []).append(sentence in text)


def _split(text: str) -> list[str]:
    parts = [p.strip() for p in text.replace(". ", ".\n").splitlines()]
    return [p for p in parts if p]


def _kind_of(sentence: str) -> str:
    if "prefer" in sentence:
        return "preference"
    if "port" in sentence:
        return "value"
    if "Never" in sentence:
        return "ban"
    return "decision"


def _watch(messages: list[dict[str, object]], tag: str, window: int) -> tuple[FactWatch, int]:
    planted_messages, planted = plant(messages, tag)
    watch = FactWatch(planted)
    replayed = replay_watching(planted_messages, window, check=watch.check, appended=watch.appended)
    watch.final = replayed.final
    return watch, replayed.compactions


def test_planted_facts_in_a_synthetic_session() -> None:
    watch, compactions = _watch(long_session(rounds=120, output_chars=1_500), "synthetic", WINDOW)
    assert compactions >= 10
    sentences = watch.sentences()
    assert len(sentences) == 4 * 3 and all(len(planted_fact(k, "x")) for k in KINDS)
    assert all(s in watch.final for s in sentences), "every planted fact is there at the end"
    old = [s for s in sentences if len(watch.seen.get(s, [])) >= 10]
    assert old and all(all(watch.seen[s]) for s in old)


def _sessions(window: int, wanted: int) -> list[tuple[str, list[dict[str, object]]]]:
    chosen = []
    for path in real_session_paths():
        messages = load_conversation(path).messages
        if replay_watching(messages, window).compactions >= 10:
            chosen.append((path.stem, messages))
        if len(chosen) == wanted:
            break
    return chosen


@pytest.mark.real_sessions
def test_planted_facts_survive_ten_compactions_in_real_sessions() -> None:
    sessions = _sessions(WINDOW, 6)
    if not sessions:
        pytest.skip("the real sessions are not here")
    total = kept = aged = aged_kept = 0
    for name, messages in sessions:
        watch, compactions = _watch(messages, name[:16], WINDOW)
        assert compactions >= 10, name
        for sentence in watch.sentences():
            total += 1
            kept += sentence in watch.final
            history = watch.seen.get(sentence, [])
            if len(history) >= 10:
                aged += 1
                aged_kept += all(history[:10])
    assert total == 12 * len(sessions)
    assert kept / total >= 0.95, f"{kept}/{total} planted facts at the end"
    assert aged and aged_kept / aged >= 0.95, f"{aged_kept}/{aged} through 10 compactions"


@pytest.mark.real_sessions
@pytest.mark.parametrize("window", [16_000, 8_000, 4_000])
def test_the_original_task_survives_every_compaction(window: int) -> None:
    paths = real_session_paths()
    if not paths:
        pytest.skip("the real sessions are not here")
    missing: list[str] = []
    for path in paths:
        messages = load_conversation(path).messages
        task = first_task(messages)
        if task is None:
            continue
        head = task[:80]

        def check(
            ordinal: int, context: object, text: str, head: str = head, name: str = path.stem
        ) -> None:
            if head not in text:
                missing.append(f"{name}: compaction {ordinal}")

        replay_watching(messages, window, check=check)
    assert not missing, missing[:10]
