"""When the built-in compressor compresses, for
:class:`~windowkeeper.engine.compressor.ContextCompressor` (design §2): the trigger derived
from the window, the decision on a prompt's size (below the trigger, or blocked by the
guard's cooldowns and back-offs), the real usage that drives it, and the session's
lifecycle that resets it.

What must hold: only the provider's ``prompt_tokens`` drives decisions (an estimate never
does); a change of model re-derives the trigger from the configured ratio, forgetting
what was calibrated; a new session also forgets the previous handoff.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Mapping
from typing import Any

from ..core.config import tail_budget_tokens
from ..core.report import Reason
from .background import BackgroundCompaction
from .guard import blocked, on_reset, on_usage
from .trigger import Decision, blocked_decision, trigger_tokens

# The compressor's logger, as before this part had a module of its own (users filter by it).
log = logging.getLogger("windowkeeper.engine.compressor")

__all__ = ("Triggering",)


class Triggering(BackgroundCompaction):
    """The trigger part of the compressor; the attributes are the compressor's own."""

    model: str | None
    summary_context_length: int | None
    warnings: tuple[str, ...]
    last_completion_tokens: int

    @property
    @abc.abstractmethod
    def compression_count(self) -> int: ...

    def _derive_threshold(self) -> int:
        trigger = trigger_tokens(
            self.config, self.context_length, self.max_tokens, self.model, self.provider,
            self.summary_context_length,
        )  # fmt: skip
        self.warnings = trigger.warnings
        for warning in trigger.warnings:
            log.warning("%s", warning)
        return trigger.tokens

    @property
    def tail_budget_tokens(self) -> int:
        return tail_budget_tokens(self.threshold_tokens, self.config.target_ratio)

    def decide(self, prompt_tokens: int | None = None) -> Decision:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        tokens = max(0, tokens)
        if not self.config.enabled:
            return Decision(False, tokens, self.threshold_tokens, Reason.DISABLED)
        if tokens < self.threshold_tokens:
            return Decision(False, tokens, self.threshold_tokens, Reason.BELOW_THRESHOLD)
        block, self.guard = blocked(self.guard, self._clock())
        if block is not None:
            return blocked_decision(block, tokens, self.threshold_tokens, self.guard)
        return Decision(True, tokens, self.threshold_tokens)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """True when ``prompt_tokens`` (default: last real reading) reaches the trigger."""
        return self.decide(prompt_tokens).compress

    def update_from_response(self, usage: Mapping[str, Any] | None) -> None:
        """Record real usage; only ``prompt_tokens`` drives decisions."""
        usage = usage or {}
        prompt = usage.get("prompt_tokens", 0)
        completion = usage.get("completion_tokens", 0)
        self.last_prompt_tokens = prompt if isinstance(prompt, int) else 0
        self.last_completion_tokens = completion if isinstance(completion, int) else 0
        self.guard = on_usage(self.guard, self.last_prompt_tokens, self.threshold_tokens)

    def get_status(self) -> dict[str, Any]:
        tokens = max(0, self.last_prompt_tokens)
        decision = self.decide()
        return {
            "last_prompt_tokens": tokens,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": round(100.0 * tokens / self.context_length, 1),
            "compression_count": self.compression_count,
            "blocked_reason": decision.reason.value if decision.reason else None,
            "blocked_detail": decision.detail or None,
            "warnings": list(self.warnings),
        }

    # --- lifecycle --------------------------------------------------------------------

    def update_model(
        self,
        *,
        model: str | None = None,
        context_length: int | None = None,
        max_tokens: object = None,
        provider: str | None = None,
        summary_context_length: int | None = None,
    ) -> None:
        """Re-derive the trigger from the raw configured ratio and reset calibration."""
        self.model = model if model is not None else self.model
        self.provider = provider if provider is not None else self.provider
        self.context_length = context_length or self.context_length
        if max_tokens is not None:
            self.max_tokens = max_tokens
        if summary_context_length is not None:
            self.summary_context_length = summary_context_length
        self.threshold_tokens = self._derive_threshold()
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.guard = on_reset(self.guard, new_session=False)

    def on_session_start(self, session_id: str) -> None:
        self.on_session_reset()

    def on_session_reset(self) -> None:
        self.epoch += 1
        self.guard = on_reset(self.guard, new_session=True)
        self.previous_summary = None
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
