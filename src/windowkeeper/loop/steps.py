"""The values exchanged with the turn machine of :class:`~windowkeeper.loop.manager.ContextManager`.

The machine is a generator: it yields the messages to send, or a :class:`Wait` for a
background compaction it needs; it receives ``Answered`` or ``Failed`` after a call and
``None`` after a wait. :func:`drive` and :func:`adrive` are its two drivers (sync and
async): they differ only in how they call and how they wait, never in what they decide.
:func:`settle` runs a machine that only waits (a trigger called directly).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..core.messages import Message, strip_private_keys

R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class TurnResult(Generic[R]):
    """The model's response and the working list to continue with (possibly compacted)."""

    response: R
    messages: list[Message]


@dataclass(frozen=True)
class Answered:
    """Sent into :meth:`ContextManager.turn`: the call returned ``response``."""

    response: object


@dataclass(frozen=True)
class Failed:
    """Sent into :meth:`ContextManager.turn`: the call raised ``error``."""

    error: Exception


@dataclass(frozen=True)
class Wait:
    """Yielded by the machine: resume (send ``None``) once ``future`` is done. The sync
    driver blocks its thread; the async one awaits, so its event loop keeps running."""

    future: concurrent.futures.Future[Any]


Waits = Generator[Wait, None, T]
"""A step of the machine that may wait for a background job and then returns a value."""
Turn = Generator[list[Message] | Wait, Answered | Failed | None, list[Message]]


@dataclass(frozen=True)
class _Done:
    messages: list[Message]


def wire(messages: list[Message]) -> list[Message]:
    """What goes to the provider: ``_`` metadata keys stripped (design §1), copies only
    where a message has them."""
    # The keys of all messages gathered in C first: a request's few distinct keys are
    # looked at, not every key of every message (each request of a long history).
    if not any(key.startswith("_") for key in set().union(*messages)):
        return messages
    return [strip_private_keys(m) if any(k.startswith("_") for k in m) else m for m in messages]


def settle(steps: Waits[T]) -> T:
    """Run a machine that only waits to its value, blocking on each wait."""
    try:
        step = next(steps)
        while True:
            concurrent.futures.wait([step.future])
            step = steps.send(None)
    except StopIteration as stop:
        value: T = stop.value
        return value


def _advance(steps: Turn, value: Answered | Failed | None) -> list[Message] | Wait | _Done:
    """The machine's next step after ``value``, or its end."""
    try:
        return steps.send(value)
    except StopIteration as stop:
        return _Done(stop.value)


def drive(steps: Turn, call: Callable[[list[Message]], R]) -> TurnResult[R]:
    """Perform each call the machine asks for with ``call`` (and each wait), until it ends
    the turn."""
    step = _advance(steps, None)
    response: Any = None
    while not isinstance(step, _Done):
        if isinstance(step, Wait):
            concurrent.futures.wait([step.future])
            step = _advance(steps, None)
            continue
        try:
            response = call(step)
        # The call is the user's client: every error goes to the machine's ``recover``,
        # which re-raises anything that is not an overflow unchanged.
        except Exception as exc:
            step = _advance(steps, Failed(exc))
        else:
            step = _advance(steps, Answered(response))
    return TurnResult(response, step.messages)


async def adrive(steps: Turn, acall: Callable[[list[Message]], Awaitable[R]]) -> TurnResult[R]:
    """The async twin of :func:`drive`: the same machine, an awaited call and wait."""
    step = _advance(steps, None)
    response: Any = None
    while not isinstance(step, _Done):
        if isinstance(step, Wait):
            await asyncio.wrap_future(step.future)
            step = _advance(steps, None)
            continue
        try:
            response = await acall(step)
        # As in ``drive``: classified by ``recover``, re-raised unchanged otherwise.
        except Exception as exc:
            step = _advance(steps, Failed(exc))
        else:
            step = _advance(steps, Answered(response))
    return TurnResult(response, step.messages)
