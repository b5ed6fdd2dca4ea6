"""Frozen records copied and made without the per-call cost of the generic paths.

``evolve``: :func:`dataclasses.replace` for frozen records, without its per-call walk.

``replace`` inspects every field of the class on each call and builds the copy through
the frozen ``__init__`` (one ``object.__setattr__`` per field): 4.6 µs for a
``CompressionReport``, 10.8 µs for a ``CompressionConfig``, and a compaction makes about
eight such copies (the report's stages, the forced plan's tight configs), most of the
fixed cost of a small compaction. ``evolve`` copies the instance's ``__dict__`` and
applies the changes, then runs ``__post_init__`` as ``replace`` would (the config's
checks and normalization), so the result is the one ``replace`` gives.

What must hold for the fast path (else ``replace`` is used): a dataclass without
``__slots__`` whose fields are all ``init`` fields (no ``init=False``; checked once per
class); per call, the instance's ``__dict__`` holds exactly its fields (no ``InitVar``
or ``ClassVar`` pseudo-field, no cached property or other attribute a copy would carry
over) and every change names one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

T = TypeVar("T")

_FIELDS: dict[type, frozenset[str] | None] = {}
_INIT = attrgetter("init")


def _plain_fields(cls: type) -> frozenset[str] | None:
    """The field names of ``cls`` when ``evolve`` may copy it directly, else ``None``."""
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    names: frozenset[str] | None = None
    everything = getattr(cls, "__dataclass_fields__", None)  # a dataclass's, pseudo-fields too
    # Looped in C (no dataclasses.fields(), whose filter is a Python loop over every
    # field): a process's first compaction checks every record class it copies here. An
    # InitVar or ClassVar pseudo-field is named here but never in an instance's
    # ``__dict__``, so evolve's check that the ``__dict__`` holds exactly these names
    # sends such a class to ``replace``.
    if (
        isinstance(everything, dict)
        and "__slots__" not in cls.__dict__
        and all(map(_INIT, everything.values()))
    ):
        names = frozenset(everything)
    _FIELDS[cls] = names
    return names


def evolve(obj: T, /, **changes: Any) -> T:
    """A copy of the dataclass instance ``obj`` with ``changes``, as
    ``dataclasses.replace(obj, **changes)`` makes it (which it falls back to)."""
    cls = type(obj)
    names = _plain_fields(cls)
    state = getattr(obj, "__dict__", None)
    if names is None or state is None or state.keys() != names or not changes.keys() <= names:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    new: T = object.__new__(cls)
    copy = new.__dict__
    copy.update(state)
    copy.update(changes)
    post = getattr(cls, "__post_init__", None)
    if post is not None:
        post(new)
    return new


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of the slots of the frozen slotted dataclass ``cls``, in field order:
    for a hot constructor that fills a new ``object.__new__(cls)`` without the frozen
    ``__init__`` (which sets each field through ``object.__setattr__``).

    What must hold for that to make the instance ``cls(...)`` makes, checked here once so
    each caller's unrolled body can rely on it: the slots are exactly the fields, in
    order, all ``init`` fields, and none is computed (no ``__post_init__``).
    """
    slots = cls.__dict__.get("__slots__")
    if not dataclasses.is_dataclass(cls) or slots is None:
        raise TypeError(f"{cls.__name__} is not a slotted dataclass")
    declared = dataclasses.fields(cls)
    if tuple(slots) != tuple(f.name for f in declared) or not all(map(_INIT, declared)):
        raise TypeError(f"{cls.__name__}'s slots are not its init fields in order")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} computes fields in __post_init__")
    return tuple(cls.__dict__[name].__set__ for name in slots)
