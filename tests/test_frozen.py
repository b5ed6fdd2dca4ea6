"""``core.frozen.evolve`` gives what ``dataclasses.replace`` gives, or falls back to it."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import ConfigError
from windowkeeper.core.frozen import _plain_fields, evolve, slot_setters
from windowkeeper.core.report import CompressionReport, Outcome, Reason, Tier
from windowkeeper.engine.guard import GuardState

# Values a field may take in these tests, by the type of its current value.
_VALUES: dict[type, st.SearchStrategy[Any]] = {
    int: st.integers(0, 10_000),
    float: st.floats(0.11, 0.79),
    bool: st.booleans(),
    str: st.text(max_size=8),
    tuple: st.lists(st.text(max_size=4), max_size=3).map(tuple),
}


def _changes(instance: object) -> st.SearchStrategy[dict[str, Any]]:
    """Changes to a subset of ``instance``'s int/float/bool/str/tuple fields."""
    strategies = {
        f.name: _VALUES[type(getattr(instance, f.name))]
        for f in dataclasses.fields(instance)  # type: ignore[arg-type]
        if type(getattr(instance, f.name)) in _VALUES
    }
    return st.fixed_dictionaries({}, optional=strategies)


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    assert a == b
    assert vars(a) == vars(b)


_REPORT = CompressionReport(Outcome.COMPRESSED, Reason.NO_REDUCTION, Tier.PRUNE, before_tokens=9)


@given(st.data())
def test_evolve_matches_replace(data: st.DataObject) -> None:
    for instance in (_REPORT, CompressionConfig(), GuardState(strikes=2)):
        changes = data.draw(_changes(instance))
        before = dict(vars(instance))
        expected = _outcome(dataclasses.replace, instance, changes)
        got = _outcome(evolve, instance, changes)
        if isinstance(expected, ConfigError):  # a value the config's checks refuse
            assert isinstance(got, ConfigError) and str(got) == str(expected)
        else:
            _same(got, expected)
        assert vars(instance) == before  # the original is left alone


def _outcome(copy: Callable[..., object], instance: object, changes: dict[str, Any]) -> object:
    try:
        return copy(instance, **changes)
    except ConfigError as error:
        return error


def test_post_init_runs_as_replace_runs_it() -> None:
    config = CompressionConfig()
    # __post_init__ normalizes (the tail ratio clamped) and checks, as it does for replace.
    assert evolve(config, target_ratio=5.0).target_ratio == 0.80
    with pytest.raises(ConfigError, match="threshold"):
        evolve(config, threshold=2.0)
    with pytest.raises(ConfigError, match="threshold"):
        dataclasses.replace(config, threshold=2.0)


def test_an_unknown_field_is_refused_like_replace() -> None:
    with pytest.raises(TypeError):
        evolve(_REPORT, nonsense=1)


@dataclass(frozen=True)
class _WithInitVar:
    a: int
    scale: InitVar[int] = 1
    b: int = field(init=False, default=0)

    def __post_init__(self, scale: int) -> None:
        object.__setattr__(self, "b", self.a * scale)


@dataclass(frozen=True, slots=True)
class _Slotted:
    a: int
    b: str = ""


@dataclass(frozen=True)
class _Cached:
    a: int

    @functools.cached_property
    def double(self) -> int:
        return self.a * 2


def test_classes_outside_the_fast_path_take_replace() -> None:
    assert _plain_fields(_WithInitVar) is None
    assert evolve(_WithInitVar(2, 3), a=5, scale=4).b == 20  # type: ignore[call-arg]
    assert _plain_fields(_Slotted) is None
    assert evolve(_Slotted(1, "x"), b="y") == _Slotted(1, "y")
    cached = _Cached(3)
    assert cached.double == 6  # now in the instance's __dict__: a copy must not carry it
    changed = evolve(cached, a=5)
    assert changed.double == 10
    assert _plain_fields(CompressionReport) == {f.name for f in dataclasses.fields(_REPORT)}


@given(st.integers(), st.text(max_size=8))
def test_slot_setters_make_what_the_init_makes(a: int, b: str) -> None:
    made: _Slotted = object.__new__(_Slotted)
    set_a, set_b = slot_setters(_Slotted)
    set_a(made, a)
    set_b(made, b)
    assert made == _Slotted(a, b)
    assert (made.a, made.b) == (a, b)


@dataclass(frozen=True, slots=True)
class _SlottedComputed:
    a: int
    b: int = field(init=False, default=0)


@dataclass(frozen=True, slots=True)
class _SlottedPostInit:
    a: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "a", abs(self.a))


@pytest.mark.parametrize("cls", [_Cached, _SlottedComputed, _SlottedPostInit, int])
def test_slot_setters_refuse_a_class_whose_init_does_more(cls: type) -> None:
    """Not slotted, a field the init does not take, a computed field, not a dataclass:
    filling the slots would not make what ``cls(...)`` makes."""
    with pytest.raises(TypeError):
        slot_setters(cls)


@dataclass(frozen=True)
class _InitVarCached:
    a: int
    scale: InitVar[int] = 2

    def __post_init__(self, scale: int) -> None:
        object.__setattr__(self, "a", self.a * scale)

    @functools.cached_property
    def double(self) -> int:
        return self.a * 2


def test_a_pseudo_field_sends_every_copy_to_replace() -> None:
    """An InitVar is named among the class's fields but never held by an instance: even
    with a cached value making the instance's attributes as many, the copy is
    ``replace``'s (its ``__post_init__`` gets the InitVar, the cached value is dropped)."""
    made = _InitVarCached(3)
    assert made.double == 12  # held in the instance's __dict__ beside ``a``
    copy = evolve(made, a=5)
    assert copy == dataclasses.replace(made, a=5) == _InitVarCached(5)
    assert copy.a == 10 and copy.double == 20
