"""The values exchanged with the turn machine of :class:`~windowkeeper.loop.manager.ContextManager`.

The machine is a generator: it yields the messages to send, and receives ``Answered`` or
``Failed``; ``wire`` and ``answer`` are the two operations every driver (sync or async)
shares.
"""

from __future__ import annotations

from collections.abc import Generator
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
