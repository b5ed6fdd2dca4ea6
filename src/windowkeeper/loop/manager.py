"""ContextManager: the three compaction triggers around an agent loop (design §2).

1. ``preflight(messages)`` before each request: a cheap gate, then the full estimate
   (cached per message, so the check grows with new messages, not with the history).
2. ``after_response(usage, messages)`` with the provider's real ``prompt_tokens``.
3. ``recover(error, messages, attempt)`` when the provider rejects a request as too large.

``run(call, messages)`` / ``arun(acall, messages)`` put all three around one request.
The logic exists once, as the generator :meth:`ContextManager.turn`: it yields "call the
model with these messages" (or "wait for this background job") and receives the response
or the exception; ``run`` and ``arun`` are thin loops that only perform the call and the
wait. Past a soft mark below the trigger a compaction is prepared in the background and
applied at the first request past the trigger that finds it ready; until then requests
under the hard mark go out unchanged (:mod:`.compacting`, :mod:`.background`).

What must hold: right after a compaction the rough estimate defers exactly one request
(real usage is authoritative), except when the estimate already exceeds the window
itself; blocked automation is surfaced as one deduplicated warning, never as a loop;
recovery spends at most ``max_attempts`` per turn, then fails with advice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from ..core.config import coerce_positive_int, usable_window
from ..core.messages import Message, ToolSchema, check_input
from ..core.report import Receipt
from ..core.tokens import IMAGE_TOKENS, TextCounter
from ..engine.base import ContextEngine
from ..engine.compressor import ContextCompressor
from .background import SessionBackground
from .compacting import Deferrals
from .estimates import EstimateCache, Lookup, prompt_tokens_of, rough_chars, usage_of
from .events import EventCallback, Reporter, Trigger, kept_parts
from .hooks import DEFAULT_LIVE_STATE_BUDGET, CompressionHook, HookRunner
from .recovering import Recovering
from .recovery import (
    Attempt,
    Evidence,
)
from .steps import Answered, Failed, Turn, TurnResult, Waits, adrive, drive, settle, wire

R = TypeVar("R")
_QUIET_REASONS = frozenset({"below_threshold", "disabled", "undone"})  # undone: the user's wish


class ContextManager(Recovering):
    """Runs the compaction triggers of one session around an agent loop.

    Args:
        engine: the context engine (built-in compressor or a plugin).
        tools: tool schemas sent with each request (counted in estimates); defaults to
            the compressor's own ``tools``.
        hooks: compaction hooks (memory flush before, live state after).
        on_event: receives :class:`~windowkeeper.loop.events.Event` values.
        clock: seconds, for event durations.
        max_attempts: error-recovery attempts per turn.
        live_state_budget: token budget of the text re-injected by ``post_compress`` hooks.
        background: the session's background compaction (its worker pool, what it shares
            with other processes); a new one on the process's shared pool by default.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        tools: Sequence[ToolSchema] | None = None,
        hooks: Sequence[CompressionHook] | None = None,
        on_event: EventCallback | None = None,
        clock: Callable[[], float] = time.time,
        max_attempts: int = 3,
        live_state_budget: int = DEFAULT_LIVE_STATE_BUDGET,
        background: SessionBackground | None = None,
    ) -> None:
        self.engine = engine
        default_tools: list[ToolSchema] | None = getattr(engine, "tools", None)
        self.tools = list(tools) if tools is not None else default_tools
        self.hooks = HookRunner(list(hooks or ()), live_state_budget)
        self.events = Reporter(on_event)
        self.clock = clock
        self.max_attempts = max(1, max_attempts)
        self.last_prompt_tokens = 0
        self.awaiting_real_usage = False
        self._attempt: Attempt | None = None  # the turn's last recovery attempt
        self._evidence = Evidence()  # what answers and refusals showed of the window
        self.last_receipt: Receipt | None = None
        """The receipt of the newest completed compaction (a new object for each)."""
        self.background = background or SessionBackground()
        self.compactions = 0
        self.deferrals = Deferrals()
        """Requests sent past the trigger while the compaction was prepared."""
        self.estimate_margin = 1.0
        """Real prompt tokens per estimated token of the last answered request, at least 1:
        what the estimate of a request deferred past the trigger is scaled by."""
        compressor = self._compressor
        image_tokens = compressor.config.image_tokens if compressor else IMAGE_TOKENS
        self._cache = EstimateCache(image_tokens, compressor.token_counter if compressor else None)
        self._cache.known = self._counted

    # --- figures ---------------------------------------------------------------------

    @property
    def engine(self) -> ContextEngine:
        return self._engine

    @engine.setter
    def engine(self, engine: ContextEngine) -> None:
        self._engine = engine
        # Read on every trigger (a dozen times a request): decided once per engine.
        self._compressor = engine if isinstance(engine, ContextCompressor) else None

    @property
    def threshold(self) -> int:
        if self._compressor:
            return self._compressor.threshold_tokens
        return coerce_positive_int(self.engine.get_status().get("threshold_tokens")) or 0

    @property
    def context_length(self) -> int:
        if self._compressor:
            return self._compressor.context_length
        return coerce_positive_int(self.engine.get_status().get("context_length")) or 0

    @property
    def window(self) -> int:
        """Prompt tokens a request may carry: the window less the output reservation."""
        return usable_window(self.context_length, getattr(self.engine, "max_tokens", None))

    def schema_tokens(self) -> int:
        return self._cache.schemas(self.tools)

    def estimate(self, messages: Sequence[Message], checked: Sequence[Message] = ()) -> int:
        """Estimated prompt tokens: messages (cached, ``checked`` as ``total`` says) + tools."""
        return self._cache.total(messages, checked) + self.schema_tokens()

    def _counted(self, image: int, count: TextCounter | None) -> Lookup | None:
        """What the compaction's analysis counted (and checked) for a message, or ``None``
        when it holds no record (no compaction yet: nothing to ask message by message)."""
        compressor = self._compressor
        if compressor is None or not compressor.analyzer.holds_records():
            return None
        return partial(compressor.analyzer.counted, image_tokens=image, count=count)

    def _share_estimates(self) -> None:
        """The messages the preflight estimated need no second count (nor check) in the
        compaction's analysis: its records are made with these estimates."""
        if self._compressor:
            cache = self._cache
            self._compressor.analyzer.seed(cache.counted(), cache.image_tokens, cache.count)

    def _cheap_gate(self, messages: Sequence[Message]) -> bool:
        """True when the full estimate is worth running (design §2: count, then characters)."""
        config = self._compressor.config if self._compressor else None
        protected = (config.protect_first_n + config.protect_last_n) if config else 23
        if isinstance(messages, list) and len(messages) > protected + 1:
            return True  # the estimate checks each message it has not seen
        check_input(messages)
        chars = sum(rough_chars(m, self._cache.image_tokens) for m in messages)
        mark = self.threshold
        if self._compressor and self._compressor.background_enabled():
            mark = min(mark, self._compressor.soft_mark)
        return chars // 4 + self.schema_tokens() >= mark

    # --- the three triggers ----------------------------------------------------------

    def preflight(self, messages: list[Message]) -> list[Message]:
        """Before a request: compact when the estimate reaches the threshold."""
        return settle(self._preflight(messages))

    def _preflight(self, messages: list[Message]) -> Waits[list[Message]]:
        if not self._cheap_gate(messages):
            return messages
        tokens = self.estimate(messages)
        if self.window and tokens >= self.window:
            return (yield from self._fit_window(messages, tokens))
        if tokens < self.threshold:
            self._soft_mark(messages, tokens)
            self.events.reset()
            return messages
        if self.awaiting_real_usage:
            # Right after a compaction the rough estimate may still read high; the next
            # real usage decides. Exactly one request is deferred.
            self.awaiting_real_usage = False
            self.events.deferred(tokens)
            return messages
        return (yield from self._automatic(messages, tokens, Trigger.PREFLIGHT))

    def after_response(
        self, usage: Mapping[str, Any] | None, messages: list[Message]
    ) -> list[Message]:
        """After a response: record usage; compact when real ``prompt_tokens`` reach the
        threshold. Completion and reasoning tokens never count."""
        return settle(self._after_response(usage, messages))

    def _after_response(
        self, usage: Mapping[str, Any] | None, messages: list[Message]
    ) -> Waits[list[Message]]:
        usage = dict(usage or {})
        prompt = prompt_tokens_of(usage)
        self.engine.update_from_response(usage)
        self.awaiting_real_usage = False
        if prompt <= 0:
            return messages  # no real figure: the next preflight estimates instead
        self.last_prompt_tokens = prompt
        estimate = self.estimate(messages)
        self._evidence.answered_with(estimate)
        self.estimate_margin = max(1.0, prompt / estimate) if estimate > 0 else 1.0
        if prompt < self.threshold:
            self._soft_mark(messages, prompt)
            self.events.reset()
            return messages
        return (yield from self._automatic(messages, prompt, Trigger.POST_RESPONSE))

    def compress(self, messages: list[Message], *, focus_topic: str | None = None) -> list[Message]:
        """A manual compaction (``/compress [focus]``): forced past every guard."""
        tokens = self.estimate(messages)
        return settle(
            self._compaction(messages, Trigger.MANUAL, tokens, force=True, focus=focus_topic)
        )

    # --- the step machine and its drivers ----------------------------------------------

    def turn(self, messages: list[Message]) -> Turn:
        """One request as a state machine: yields the messages to send (``_`` metadata
        keys stripped) or a :class:`~windowkeeper.loop.steps.Wait`, receives
        :class:`Answered` or :class:`Failed` (``None`` after a wait), and returns the
        working list to continue with."""
        request = yield from self._preflight(messages)
        attempt = 0
        while True:
            outcome = yield wire(request)
            if isinstance(outcome, Answered):
                return (yield from self._after_response(usage_of(outcome.response), request))
            assert isinstance(outcome, Failed)
            attempt += 1
            request = self.recover(outcome.error, request, attempt)

    def run(self, call: Callable[[list[Message]], R], messages: list[Message]) -> TurnResult[R]:
        """Run one request through ``call`` with all three triggers around it."""
        return drive(self.turn(messages), call)

    async def arun(
        self, acall: Callable[[list[Message]], Awaitable[R]], messages: list[Message]
    ) -> TurnResult[R]:
        """The async twin of :meth:`run`: the same state machine, an awaited call."""
        return await adrive(self.turn(messages), acall)

    # --- compaction ------------------------------------------------------------------

    def _automatic(
        self, messages: list[Message], tokens: int, trigger: Trigger
    ) -> Waits[list[Message]]:
        cause = ""
        if self._compressor:
            decision = self._compressor.decide(tokens)
            allowed = decision.compress
            reason = decision.reason.value if decision.reason else None
            cause = decision.detail if decision.cause else ""
        else:
            allowed = self.engine.should_compress(tokens)
            reason = None if allowed else str(self.engine.get_status().get("blocked_reason"))
        if allowed:
            return (yield from self._compaction(messages, trigger, tokens, background=True))
        if reason is not None and str(reason) not in _QUIET_REASONS:
            self._warn_blocked(str(reason), tokens, messages, cause)
        return messages

    def _fit_window(self, messages: list[Message], tokens: int) -> Waits[list[Message]]:
        """The estimate exceeds the window itself: the request would certainly fail, so
        compact even when deferred or blocked (bounded passes, stop without progress).
        The first pass applies the session's background compaction when it can."""
        current = messages
        for attempt in range(1, self.max_attempts + 1):
            compacted = yield from self._compaction(
                current, Trigger.PREFLIGHT, tokens, force=True, attempt=attempt,
                background=attempt == 1,
            )  # fmt: skip
            if compacted is current:
                break
            current, tokens = compacted, self.estimate(compacted)
            if tokens < self.window:
                return current
        current, tokens = self._cut_to_window(current, tokens)
        if tokens >= self.window:
            self.events.over_window(tokens, self.window)
        return current

    # --- events ----------------------------------------------------------------------

    def _warn_blocked(
        self, reason: str, tokens: int, messages: Sequence[Message], cause: str = ""
    ) -> None:
        kept = None
        if reason in ("ineffective", "low_savings", "structural_backoff") and not cause:
            kept = kept_parts(messages, self.schema_tokens())
        self.events.blocked(reason, tokens, self.threshold, kept, cause)
