"""windowkeeper: keeps long-running tool-using LLM agents inside their context window.

The public API is what ``__all__`` lists; everything else is internal. Backends and the
gateway live in their own namespaces.
"""

from __future__ import annotations

from .compaction import CompactionPlan
from .compressor import ContextCompressor, Decision
from .config import (
    CompressionConfig,
    compute_threshold_tokens,
    resolve_model_threshold,
    summary_budget_tokens,
)
from .engine import ContextEngine, ToolProvider
from .errors import (
    CompressionExhaustedError,
    ConfigError,
    InvalidMessagesError,
    StoreError,
    SummaryError,
    UpstreamError,
    WindowkeeperError,
)
from .events import Event, EventCallback, EventKind, Trigger, WarningCode
from .extractive import ExtractiveSummarizer
from .guard import Block, GuardState
from .hooks import CompressionHook, LiveStateHook
from .invariants import violations
from .llm import LLMSummarizer, LLMSummarizerConfig
from .manager import ContextManager
from .messages import (
    Conversation,
    Message,
    load_conversation,
    parse_conversation,
    validate_messages,
)
from .overflow import Overflow, OverflowKind
from .overflow import classify as classify_overflow
from .plugins import available_engines, load_engine
from .replay import ReplayReport, replay
from .report import ArchivedItem, CompressionReport, CompressionResult, Outcome, Reason
from .sanitize import sanitize_tool_pairs
from .settings import Settings, load_settings
from .steps import TurnResult
from .summarizer import (
    FailureKind,
    Summarizer,
    SummaryFailure,
    SummaryOutcome,
    SummaryRequest,
)
from .tokens import (
    TextCounter,
    estimate_messages_tokens,
    estimate_request_tokens,
    estimate_tokens,
)

__version__ = "0.1.0"

__all__ = [
    "ArchivedItem",
    "Block",
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
    "Event",
    "EventCallback",
    "EventKind",
    "ExtractiveSummarizer",
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
    "ReplayReport",
    "Settings",
    "StoreError",
    "Summarizer",
    "SummaryError",
    "SummaryFailure",
    "SummaryOutcome",
    "SummaryRequest",
    "TextCounter",
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
