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
from .extractive import ExtractiveSummarizer
from .guard import Block, GuardState
from .invariants import violations
from .llm import LLMSummarizer, LLMSummarizerConfig
from .messages import (
    Conversation,
    Message,
    load_conversation,
    parse_conversation,
    validate_messages,
)
from .report import ArchivedItem, CompressionReport, CompressionResult, Outcome, Reason
from .sanitize import sanitize_tool_pairs
from .summarizer import (
    FailureKind,
    Summarizer,
    SummaryFailure,
    SummaryOutcome,
    SummaryRequest,
)
from .tokens import estimate_messages_tokens, estimate_request_tokens, estimate_tokens

__version__ = "0.1.0"

__all__ = [
    "ArchivedItem",
    "Block",
    "CompactionPlan",
    "CompressionConfig",
    "CompressionExhaustedError",
    "CompressionReport",
    "CompressionResult",
    "ConfigError",
    "ContextCompressor",
    "ContextEngine",
    "Conversation",
    "Decision",
    "ExtractiveSummarizer",
    "FailureKind",
    "GuardState",
    "InvalidMessagesError",
    "LLMSummarizer",
    "LLMSummarizerConfig",
    "Message",
    "Outcome",
    "Reason",
    "StoreError",
    "Summarizer",
    "SummaryError",
    "SummaryFailure",
    "SummaryOutcome",
    "SummaryRequest",
    "ToolProvider",
    "UpstreamError",
    "WindowkeeperError",
    "__version__",
    "compute_threshold_tokens",
    "estimate_messages_tokens",
    "estimate_request_tokens",
    "estimate_tokens",
    "load_conversation",
    "parse_conversation",
    "resolve_model_threshold",
    "sanitize_tool_pairs",
    "summary_budget_tokens",
    "validate_messages",
    "violations",
]
