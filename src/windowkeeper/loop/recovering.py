"""Recovering from a request the provider rejected as too large, for
:class:`~windowkeeper.loop.manager.ContextManager` (design §2, the third trigger).

Each attempt of a turn aims lower than the rejected request: a window the provider stated
is adopted, the engine's window lowered to the attempt's target
(:mod:`~windowkeeper.loop.recovery` decides it from what answers and refusals showed),
then a forced compaction, lighter images for a payload too large, and the ladder's last
rungs toward the window. What must hold: at most ``max_attempts`` per turn, then
:class:`~windowkeeper.core.errors.CompressionExhaustedError` with advice; a non-overflow
error is re-raised unchanged; a request the evidence says fits is retried as it was.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from ..compaction.truncate import last_rungs
from ..core.config import CompressionConfig
from ..core.errors import UpstreamError
from ..core.messages import Message
from .compacting import Compacting
from .estimates import EstimateCache
from .events import Trigger
from .overflow import Overflow, OverflowKind, classify, lighter_images
from .recovery import (
    Attempt,
    Evidence,
    exhausted_error,
    floor_tokens,
    target_tokens,
    with_tier_limit,
)
from .steps import settle

__all__ = ("Recovering",)


class Recovering(Compacting):
    """The recovery part of the manager; the attributes are the manager's own."""

    max_attempts: int
    _attempt: Attempt | None
    _evidence: Evidence
    _cache: EstimateCache

    @property
    @abc.abstractmethod
    def context_length(self) -> int: ...

    @abc.abstractmethod
    def estimate(self, messages: Sequence[Message], checked: Sequence[Message] = ()) -> int: ...

    @abc.abstractmethod
    def schema_tokens(self) -> int: ...

    def recover(self, error: Exception, messages: list[Message], attempt: int) -> list[Message]:
        """After a failed request: the messages to retry with, or an exception.

        ``attempt`` counts recoveries in this turn from 1. A non-overflow error is re-raised
        unchanged; past ``max_attempts`` :class:`CompressionExhaustedError` is raised. Each
        attempt aims lower than the rejected request (see :mod:`~windowkeeper.loop.recovery`).
        """
        tokens = self.estimate(messages)
        overflow = classify(error, session_tokens=tokens, context_length=self.context_length,
                            message_count=len(messages))  # fmt: skip
        if overflow is None:
            raise error
        self.events.overflow(overflow.kind.value, overflow.status, tokens, attempt)
        if attempt <= 1:
            self._attempt = None
        reserve = self.context_length - self.window
        if self._evidence.retry(overflow, tokens, reserve=reserve, attempt=attempt):
            return messages  # the evidence says it fits: a transient fault
        if attempt > self.max_attempts:
            why = f"after {self.max_attempts} attempts"
            raise exhausted_error(why, self._attempt, tokens) from error
        if not overflow.compressible:
            raise UpstreamError(
                "the request's max_tokens is more than the model can produce; lower "
                "max_tokens (compressing the conversation cannot help)"
            ) from error
        overflow = self._aim(overflow, messages, tokens, attempt)
        return self._recovered(error, overflow, messages, tokens, attempt)

    def _aim(
        self, overflow: Overflow, messages: list[Message], tokens: int, attempt: int
    ) -> Overflow:
        """Adopt a window the provider stated, then lower the engine's window to this
        attempt's target (:func:`~windowkeeper.loop.recovery.target_tokens`)."""
        overflow = with_tier_limit(overflow, self.context_length)
        if overflow.limit and overflow.limit != self.context_length:
            self._set_context_length(overflow.limit)
        reserve = self.context_length - self.window
        floor = floor_tokens(messages, self._cache.total, self.schema_tokens())
        target = target_tokens(
            overflow, tokens, floor, window=self.window, reserve=reserve,
            remaining=self.max_attempts - attempt + 1, previous=self._attempt,
            answered=self._evidence.answered,
        )  # fmt: skip
        self._attempt = Attempt(tokens, target, floor, overflow.limit, self.context_length)
        if target < self.window:
            self._set_context_length(target + reserve)
        return overflow

    def _set_context_length(self, context_length: int) -> None:
        self.engine.update_model(context_length=context_length)
        self.events.limit_learned(context_length, self.threshold)

    def _recovered(
        self,
        error: Exception,
        overflow: Overflow,
        messages: list[Message],
        tokens: int,
        attempt: int,
    ) -> list[Message]:
        payload = overflow.kind is OverflowKind.PAYLOAD_TOO_LARGE
        if payload:
            lighter = self._lighter_images(messages, ("tool",))
            if lighter is not messages:
                return lighter
        out = settle(
            self._compaction(messages, Trigger.RECOVERY, tokens, force=True, attempt=attempt)
        )
        if out is messages and payload:
            out = self._lighter_images(messages, None)
        if out is messages or self.estimate(out) >= self.window:
            out = self._cut_to_window(out, self.estimate(out))[0]
        if out is messages and self._attempt and self._evidence.last_hope(overflow, attempt):
            self.engine.update_model(context_length=self._attempt.context_length)  # unlearned
            return messages
        if out is messages:
            why = "it cannot be compressed further"
            raise exhausted_error(why, self._attempt, tokens) from error
        return out

    def _cut_to_window(self, messages: list[Message], tokens: int) -> tuple[list[Message], int]:
        """The ladder's last rungs (tool results, then call arguments) toward the window."""
        config = self._compressor.config if self._compressor else CompressionConfig()
        out, tokens, cuts = last_rungs(messages, tokens, self.window, config, self.estimate)
        for cut in cuts:
            self.events.truncated(cut.count, cut.before, cut.after, cut.what)
        return out, tokens

    def _lighter_images(self, messages: list[Message], roles: tuple[str] | None) -> list[Message]:
        out, count, how = lighter_images(messages, roles)
        if count:
            self.events.images(count, how)
        return out
