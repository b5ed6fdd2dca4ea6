"""Settings of the LLM summarizer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...core.errors import ConfigError

MIN_INPUT_CHARS = 20_000


@dataclass(frozen=True, kw_only=True)
class LLMSummarizerConfig:
    """Settings of the LLM summarizer (CLI ``--summary-*`` flags map onto these).

    Attributes:
        model: the summary model.
        base_url: OpenAI-compatible base URL (``.../v1``); default ``OPENAI_BASE_URL`` or
            OpenAI's. Ignored by the LiteLLM backend unless set.
        api_key: else ``WINDOWKEEPER_SUMMARY_API_KEY``, else ``OPENAI_API_KEY``; local
            servers (loopback, private network, dot-less host names) need none.
        timeout: seconds for one call; ``total_timeout`` bounds a chunked run
            (default 3 x ``timeout``).
        fallback_model: the main model, tried once when a distinct summary model fails.
        context_length: the summary model's window; the prompt stays under 60% of it.
        max_input_chars: overall cap on one prompt's characters.
        stream: request a streamed answer (deltas are accumulated).
        backend: ``"openai"`` (official SDK) or ``"litellm"`` (the ``litellm`` extra).
        temperature / max_output_tokens: sent only when set.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    total_timeout: float | None = None
    fallback_model: str | None = None
    context_length: int | None = None
    max_input_chars: int = 160_000
    stream: bool = False
    backend: Literal["openai", "litellm"] = "openai"
    temperature: float | None = None
    max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ConfigError("summary model is empty: set --summary-model")
        if self.timeout <= 0 or (self.total_timeout is not None and self.total_timeout <= 0):
            raise ConfigError("--summary-timeout must be a positive number of seconds")
        if self.max_input_chars < MIN_INPUT_CHARS:
            raise ConfigError(f"summary max_input_chars must be >= {MIN_INPUT_CHARS:,}")
        if self.context_length is not None and self.context_length <= 0:
            raise ConfigError("summary context_length must be positive when set")
        if self.backend not in ("openai", "litellm"):
            raise ConfigError(f"unknown summary backend {self.backend!r} (openai or litellm)")

    @property
    def deadline_seconds(self) -> float:
        return self.total_timeout if self.total_timeout is not None else 3 * self.timeout
