"""Evaluation: replay a transcript and measure what compaction kept and what it cost."""

from .cache import CacheBreak, CachePrices
from .facts import FactKind
from .report import EvalReport, EvalTotals
from .run import evaluate

__all__ = ["CacheBreak", "CachePrices", "EvalReport", "EvalTotals", "FactKind", "evaluate"]
