"""windowkeeper: keeps long-running tool-using LLM agents inside their context window."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
