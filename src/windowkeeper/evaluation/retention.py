"""Retention bookkeeping: which facts left the verbatim context, and whether each is still
findable in the context the agent sees after every later compaction.

A fact enters when the first original message that carries it leaves the verbatim context
(it is no longer in the working list as the same object, nor as an equal copy). Its age
is the number of compactions since then, the one that removed it included: age 1 is the
context right after that compaction. Checks are incremental: each message's token set and
flattened text are computed once (:class:`~.text.TextIndex`); a check is then a set
lookup per token fact and one substring search per phrase fact.

Archive handles do not count: a fact is findable only when its text is in the context
itself, not when a handle would let the agent fetch it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .facts import Fact, FactKind, Match
from .text import ContextView, has_token


@dataclass
class _Tracked:
    fact: Fact
    left_at: int
    """Ordinal (from 1) of the first compaction after which it was checked."""
    checks: int = 0
    kept_always: bool = True
    kept_last: bool = False


@dataclass(frozen=True)
class KindRetention:
    """Facts of one kind that left the verbatim context, and how many are still findable."""

    kind: FactKind
    facts: int
    kept_at_end: int
    """Findable after the session's last compaction."""
    kept_always: int
    """Findable after every compaction since it left."""


@dataclass(frozen=True)
class AgeRetention:
    """Of the facts that reached ``age`` compactions, how many were findable at that age."""

    age: int
    facts: int
    kept: int


@dataclass(frozen=True)
class LostFact:
    kind: FactKind
    text: str
    age: int
    """Compactions since it left the verbatim context (at the last check)."""


@dataclass
class Retention:
    """The facts of one session and their checks so far."""

    facts: dict[tuple[FactKind, bytes], _Tracked] = field(default_factory=dict)
    _ages: list[list[int]] = field(default_factory=list)

    def add(self, facts: list[Fact], next_compaction: int) -> int:
        """Facts of messages that just left; first checked at ``next_compaction``.
        Returns how many are new (a fact already known keeps its age)."""
        before = len(self.facts)
        for fact in facts:
            key = (fact.kind, fact.needle)
            if key not in self.facts:
                self.facts[key] = _Tracked(fact, next_compaction)
        return len(self.facts) - before

    def check(self, view: ContextView) -> None:
        """One compaction's check of every fact that has left so far."""
        ages = self._ages
        for tracked in self.facts.values():
            kept = findable(tracked.fact, view)
            tracked.checks += 1
            tracked.kept_last = kept
            tracked.kept_always = tracked.kept_always and kept
            if len(ages) < tracked.checks:
                ages.append([0, 0])
            row = ages[tracked.checks - 1]
            row[0] += 1
            row[1] += kept

    def by_kind(self) -> tuple[KindRetention, ...]:
        rows = []
        for kind in FactKind:
            checked = [t for t in self.facts.values() if t.fact.kind is kind and t.checks]
            rows.append(
                KindRetention(
                    kind,
                    len(checked),
                    sum(t.kept_last for t in checked),
                    sum(t.kept_always for t in checked),
                )
            )
        return tuple(rows)

    def by_age(self) -> tuple[AgeRetention, ...]:
        return tuple(AgeRetention(i + 1, n, kept) for i, (n, kept) in enumerate(self._ages))

    def lost(self) -> list[LostFact]:
        return [
            LostFact(t.fact.kind, t.fact.text, t.checks)
            for t in self.facts.values()
            if t.checks and not t.kept_last
        ]


def findable(fact: Fact, view: ContextView) -> bool:
    if fact.match is Match.TOKEN:
        return has_token(view.tokens, fact.needle)
    if fact.match is Match.LOWER_TOKEN:
        return has_token(view.lower_tokens, fact.needle)
    return fact.needle in view.flat
