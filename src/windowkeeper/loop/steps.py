"""The values exchanged with the turn machine of :class:`~windowkeeper.loop.manager.ContextManager`.

The machine is a generator: it yields the messages to send, and receives ``Answered`` or
``Failed``; ``wire`` and ``answer`` are the two operations every driver (sync or async)
shares, and :func:`drive` and :func:`adrive` are the two drivers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..core.messages import Message, strip_private_keys

R = TypeVar("R")


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


Turn = Generator[list[Message], Answered | Failed, list[Message]]


def wire(messages: list[Message]) -> list[Message]:
    """What goes to the provider: ``_`` metadata keys stripped (design §1), copies only
    where a message has them."""
    if not any(key.startswith("_") for m in messages for key in m):
        return messages
    return [strip_private_keys(m) if any(k.startswith("_") for k in m) else m for m in messages]


def answer(steps: Turn, response: object) -> list[Message]:
    """Feed a response to the machine and take the working list it ends the turn with."""
    try:
        steps.send(Answered(response))
    except StopIteration as stop:
        final: list[Message] = stop.value
        return final
    raise RuntimeError("the turn machine asked for another call after an answer")


def drive(steps: Turn, call: Callable[[list[Message]], R]) -> TurnResult[R]:
    """Perform each call the machine asks for with ``call``, until it ends the turn."""
    request = next(steps)
    while True:
        try:
            response = call(request)
        # The call is the user's client: every error goes to the machine's ``recover``,
        # which re-raises anything that is not an overflow unchanged.
        except Exception as exc:
            failure = Failed(exc)
        else:
            return TurnResult(response, answer(steps, response))
        request = steps.send(failure)


async def adrive(steps: Turn, acall: Callable[[list[Message]], Awaitable[R]]) -> TurnResult[R]:
    """The async twin of :func:`drive`: the same machine, an awaited call."""
    request = next(steps)
    while True:
        try:
            response = await acall(request)
        # As in ``drive``: classified by ``recover``, re-raised unchanged otherwise.
        except Exception as exc:
            failure = Failed(exc)
        else:
            return TurnResult(response, answer(steps, response))
        request = steps.send(failure)
