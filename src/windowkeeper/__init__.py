"""windowkeeper: keeps long-running tool-using LLM agents inside their context window.

The public API is what ``__all__`` lists; everything else is internal. Backends and the
gateway live in their own namespaces.
"""

from __future__ import annotations

from .adapters.formats import load_conversation, parse_conversation
from .compaction.plan import CompactionPlan
from .compaction.sanitize import sanitize_tool_pairs
from .core.config import (
    CompressionConfig,
    compute_threshold_tokens,
    resolve_model_threshold,
    summary_budget_tokens,
)
from .core.errors import (
    CompressionExhaustedError,
    ConfigError,
    InvalidMessagesError,
    StoreError,
    SummaryError,
    UpstreamError,
    WindowkeeperError,
)
from .core.invariants import violations
from .core.messages import Conversation, Message, validate_messages
from .core.report import (
    ArchivedItem,
    CompressionReport,
    CompressionResult,
    DiscardReason,
    FailureKind,
    Outcome,
    Reason,
    Receipt,
    Tier,
)
from .core.settings import Settings, load_settings
from .core.tokens import (
    TextCounter,
    estimate_messages_tokens,
    estimate_request_tokens,
    estimate_tokens,
)
from .core.version import __version__
from .engine.base import ContextEngine, ToolProvider
from .engine.compressor import ContextCompressor
from .engine.guard import Block, GuardState
from .engine.plugins import available_engines, load_engine
from .engine.trigger import Decision
from .evaluation import CachePrices, EvalReport, EvalTotals, FactKind, evaluate
from .loop.background import SessionBackground
from .loop.events import Event, EventCallback, EventKind, Trigger, WarningCode
from .loop.hooks import CompressionHook, LiveStateHook
from .loop.manager import ContextManager
from .loop.overflow import Overflow, OverflowKind
from .loop.overflow import classify as classify_overflow
from .loop.replay import ReplayReport, replay
from .loop.steps import TurnResult
from .summary.extractive.summarizer import ExtractiveSummarizer
from .summary.llm.config import LLMSummarizerConfig
from .summary.llm.summarizer import LLMSummarizer
from .summary.protocol import Summarizer, SummaryFailure, SummaryOutcome, SummaryRequest

__all__ = [
    "ArchivedItem",
    "Block",
    "CachePrices",
    "CompactionPlan",
    "CompressionConfig",
    "CompressionExhaustedError",
    "CompressionHook",
    "CompressionReport",
    "CompressionResult",
    "ConfigError",
    "ContextCompressor",
    "ContextEngine",
    "ContextManager",
    "Conversation",
    "Decision",
    "DiscardReason",
    "EvalReport",
    "EvalTotals",
    "Event",
    "EventCallback",
    "EventKind",
    "ExtractiveSummarizer",
    "FactKind",
    "FailureKind",
    "GuardState",
    "InvalidMessagesError",
    "LLMSummarizer",
    "LLMSummarizerConfig",
    "LiveStateHook",
    "Message",
    "Outcome",
    "Overflow",
    "OverflowKind",
    "Reason",
    "Receipt",
    "ReplayReport",
    "SessionBackground",
    "Settings",
    "StoreError",
    "Summarizer",
    "SummaryError",
    "SummaryFailure",
    "SummaryOutcome",
    "SummaryRequest",
    "TextCounter",
    "Tier",
    "ToolProvider",
    "Trigger",
    "TurnResult",
    "UpstreamError",
    "WarningCode",
    "WindowkeeperError",
    "__version__",
    "available_engines",
    "classify_overflow",
    "compute_threshold_tokens",
    "estimate_messages_tokens",
    "estimate_request_tokens",
    "estimate_tokens",
    "evaluate",
    "load_conversation",
    "load_engine",
    "load_settings",
    "parse_conversation",
    "replay",
    "resolve_model_threshold",
    "sanitize_tool_pairs",
    "summary_budget_tokens",
    "validate_messages",
    "violations",
]
