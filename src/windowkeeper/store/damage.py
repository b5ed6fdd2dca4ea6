"""Store damage: decoding what a store holds, and the check behind ``sessions check``.

Damage is reported, never propagated: a row that does not decode is a
:class:`~windowkeeper.store.base.StoreDamageError` naming the session and the row; a
guard state that does not decode is replaced by a fresh one with a warning (only
cooldowns and counters are lost). :func:`check_values` decodes everything a store holds
and reports the first defect in one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from ..core.report import FailureKind
from ..engine.guard import GuardState, on_undo
from .base import StoreCheck, StoreDamageError, load_message

__all__ = ("check_values", "decode_guard", "guard_problem", "held_after_undo")

_GUARD_TYPES: dict[str, tuple[type, ...]] = {
    "float": (int, float), "int": (int,), "bool": (bool,), "None": (type(None),), "str": (str,),
    "FailureKind": (FailureKind,),
}  # fmt: skip


def decode_guard(text: str) -> tuple[GuardState, str | None]:
    """The guard state stored as ``text`` and ``None``, or a fresh state and what is wrong."""
    try:
        state = GuardState.from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        return GuardState(), " ".join(str(exc).split())[:80] or type(exc).__name__
    problem = _field_problem(state)
    return (state, None) if problem is None else (GuardState(), problem)


def held_after_undo(text: str | None) -> str:
    """The guard state ``text`` an undo restores (fresh when absent or damaged), holding
    automatic compaction until the history no longer fits (``GuardState.undone``)."""
    return on_undo(decode_guard(text)[0] if text else GuardState()).to_json()


def guard_problem(text: str) -> str | None:
    return decode_guard(text)[1]


def _field_problem(state: GuardState) -> str | None:
    """The first field whose value does not have its declared type, if any."""
    for spec in fields(state):
        value = getattr(state, spec.name)
        allowed = [t for name in str(spec.type).split(" | ") for t in _GUARD_TYPES.get(name, ())]
        wrong_bool = isinstance(value, bool) and bool not in allowed
        if not allowed or wrong_bool or not isinstance(value, tuple(allowed)):
            return f"{spec.name} is {value!r}"
    return None


def check_values(
    guards: Iterable[tuple[str, str | None]],
    messages: Iterable[tuple[str, object, str]],
    archive: Iterable[tuple[str, object, str]],
) -> StoreCheck:
    """Decode every guard state ``(session, text)``, message ``(session, seq, body)`` and
    archive entry ``(session, handle, body)``; the first defect, or the counts."""
    sessions = rows = entries = 0
    for session_id, text in guards:
        sessions += 1
        problem = guard_problem(text) if text else None
        if problem is not None:
            return StoreCheck(False, f"session {session_id!r}: guard state damaged ({problem})")
    try:
        for session_id, seq, body in messages:
            rows += 1
            load_message(body, f"session {session_id!r}, row {seq}")
        for session_id, handle, body in archive:
            entries += 1
            load_message(body, f"session {session_id!r}, archive entry {handle}")
    except StoreDamageError as exc:
        return StoreCheck(False, exc.reason, sessions, rows)
    return StoreCheck(
        True,
        f"{sessions:,} sessions, {rows:,} rows and {entries:,} archive entries decoded",
        sessions, rows, entries,
    )  # fmt: skip
