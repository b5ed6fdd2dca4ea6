"""Secret redaction (SPEC §6): the implementation is :mod:`windowkeeper.core.secrets`, in
the core so every layer that writes text (pruned stubs, handoffs, the store's search and
recall) can mask with the same table; this module keeps the summary layer's name for it."""

from __future__ import annotations

from ..core.secrets import REDACTED, redact, redact_messages

__all__ = ("REDACTED", "redact", "redact_messages")
