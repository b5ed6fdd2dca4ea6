"""Gateway settings: where the upstreams are, how big each model's window is, when to
compact, who may call it.

A model's context window is never guessed (design §2): it comes from ``context_lengths``
(exact model name, else the longest key contained in the name, else the ``"*"`` default),
else from the upstream's ``/models`` listing, else from installed model metadata; when no
source states it, the request fails with a 400 that says how to configure it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..core.config import CompressionConfig
from ..core.errors import ConfigError
from ..core.settings import Settings
from ..summary.llm.config import LLMSummarizerConfig

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 32 * 1024 * 1024
DEFAULT_MAX_SESSION_BYTES = 1024 * 1024 * 1024
KEEP_ALIVE_SECONDS = 5
"""uvicorn's idle keep-alive timeout (its default, passed explicitly by ``serve``), also
the default of the stalled-body timeout: a client silent this long is gone either way."""
KEYS_ENV = "WINDOWKEEPER_GATEWAY_KEYS"
"""Comma-separated gateway keys (added to ``gateway.api_keys`` of the config)."""
DEFAULT_KEY = "*"
"""The ``context_lengths`` key that applies to every model without a more specific entry."""


@dataclass(frozen=True, kw_only=True)
class GatewaySettings:
    """Everything the gateway needs; immutable, validated on construction.

    Attributes:
        upstream_base_url: the OpenAI-compatible API, e.g. ``https://api.openai.com/v1``
            (``/chat/completions``, ``/responses`` and ``/models`` are appended); ``None``
            when only Anthropic is served.
        upstream_api_key: sent as ``Authorization: Bearer …`` upstream; when ``None`` the
            client's own ``Authorization`` header is passed through.
        anthropic_base_url: the Anthropic API without ``/v1`` (as the Anthropic SDK takes
            it), e.g. ``https://api.anthropic.com``; ``None`` when not served.
        anthropic_api_key: sent as ``x-api-key`` to Anthropic; ``None`` passes the client's.
        api_keys: keys a client must present (``Authorization: Bearer``, ``x-api-key`` or
            ``X-Windowkeeper-Key``); empty: no gateway authentication.
        max_body_bytes: larger request bodies are refused with 413.
        body_timeout: seconds a request body may stop arriving while the gateway waits
            for it before the request is answered 408 and the connection closed.
        recall_rounds: ``recall`` calls the gateway answers itself per request (0: the
            tool is never offered).
        context_lengths: model name (or substring, or ``"*"``) → window in tokens.
        hygiene_threshold: compact when a request reaches this share of the window.
        hard_message_limit: compact when the history has at least this many messages.
        compression: the compressor's tunables (its ``threshold`` is replaced by
            ``hygiene_threshold``: the gateway is the safety net, design §2).
        max_sessions: sessions kept in memory (least recently used evicted first).
        max_session_bytes: the sessions kept in memory hold at most about this much: the
            sum of the newest request body of each of their branches (least recently used
            evicted first; a store rebuilds an evicted session on its next request).
        timeout: seconds to wait for the upstream (connect and each read).
        models_lookup: ask the upstream's ``/models`` for unknown windows.
        summary: the LLM summarizer's settings (``auxiliary.compression`` of the config);
            ``None`` for the offline extractive handoff. Each session's own model is its
            fallback when a distinct summary model fails.
    """

    upstream_base_url: str | None = None
    upstream_api_key: str | None = None
    anthropic_base_url: str | None = None
    anthropic_api_key: str | None = None
    api_keys: frozenset[str] = frozenset()
    max_body_bytes: int = DEFAULT_MAX_BODY
    body_timeout: float = KEEP_ALIVE_SECONDS
    recall_rounds: int = 2
    context_lengths: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    hygiene_threshold: float = 0.85
    hard_message_limit: int = 5_000
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    max_sessions: int = 1_000
    max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES
    timeout: float = 600.0
    models_lookup: bool = True
    summary: LLMSummarizerConfig | None = None

    def __post_init__(self) -> None:
        for name in ("upstream_base_url", "anthropic_base_url"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _checked_url(value))
        if self.upstream_base_url is None and self.anthropic_base_url is None:
            raise ConfigError("no upstream: set the OpenAI-style or the Anthropic upstream URL")
        if not 0.10 <= self.hygiene_threshold <= 0.99:
            raise ConfigError(
                f"the hygiene threshold must be in [0.10, 0.99], got {self.hygiene_threshold}"
            )
        if self.hard_message_limit < 4:
            raise ConfigError("the hard message limit must be at least 4 messages")
        if self.max_sessions < 1 or self.timeout <= 0 or self.body_timeout <= 0:
            raise ConfigError("max_sessions must be >= 1, timeout and body_timeout > 0")
        if self.max_session_bytes < self.max_body_bytes:
            raise ConfigError(
                "the sessions' memory bound must be at least one request body "
                "(gateway.max_session_mib >= gateway.max_body_mib)"
            )
        if self.max_body_bytes < 1024 or not 0 <= self.recall_rounds <= 8:
            raise ConfigError("max_body_bytes must be >= 1 KiB and recall_rounds in 0..8")
        keys = frozenset(k.strip() for k in self.api_keys if k.strip())
        object.__setattr__(self, "api_keys", keys)
        for name, value in self.context_lengths.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"context length of {name!r} must be a positive integer")
        object.__setattr__(self, "context_lengths", MappingProxyType(dict(self.context_lengths)))

    def compressor_config(self) -> CompressionConfig:
        """The compressor config of every gateway session: it triggers at the hygiene
        threshold and spends at most ``compression.max_attempts`` recoveries per request.
        Made once (both are frozen; a new session's branch asks for it)."""
        made = self.__dict__.get("_compressor_config")
        if made is None:
            made = replace(
                self.compression,
                threshold=self.hygiene_threshold,
                hygiene_threshold=self.hygiene_threshold,
                hygiene_hard_message_limit=self.hard_message_limit,
            )
            object.__setattr__(self, "_compressor_config", made)
        return made

    def configured_context_length(self, model: str) -> int | None:
        """The configured window of ``model``: exact name, longest contained key, ``"*"``."""
        lengths = self.context_lengths
        if model in lengths:
            return lengths[model]
        contained = [key for key in lengths if key != DEFAULT_KEY and key and key in model]
        if contained:
            return lengths[max(contained, key=len)]
        return lengths.get(DEFAULT_KEY)


def gateway_settings(
    upstream: str | None,
    settings: Settings | None = None,
    *,
    context_length: int | None = None,
    model_context_lengths: Mapping[str, int] | None = None,
    api_key: str | None = None,
    anthropic_upstream: str | None = None,
    anthropic_api_key: str | None = None,
    api_keys: frozenset[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> GatewaySettings:
    """:class:`GatewaySettings` from the YAML settings (design §10) plus command-line values.

    ``model.context_length`` of the file applies to ``model.name`` when that is set, else
    to every model; ``context_length`` (``--context-length``) is the default for every
    model and wins over the file's default; ``model_context_lengths`` adds per-model keys.
    Gateway keys are the union of ``api_keys``, the file's ``gateway.api_keys`` and
    ``$WINDOWKEEPER_GATEWAY_KEYS``.
    """
    lengths: dict[str, int] = {}
    hygiene, limit, compression = 0.85, 5_000, CompressionConfig()
    keys, body, rounds = set(api_keys or ()), DEFAULT_MAX_BODY, 2
    memory, stall = DEFAULT_MAX_SESSION_BYTES, float(KEEP_ALIVE_SECONDS)
    if settings is not None:
        compression = settings.compression_config()
        hygiene = settings.compression.hygiene_threshold
        limit = settings.compression.hygiene_hard_message_limit
        window = settings.model.context_length
        if window is not None:
            lengths[settings.model.name or DEFAULT_KEY] = window
        section = settings.gateway
        keys.update(section.api_keys)
        body, rounds = int(section.max_body_mib * 1024 * 1024), section.recall_rounds
        memory = int(section.max_session_mib * 1024 * 1024)
        stall = section.body_timeout_seconds
        anthropic_upstream = anthropic_upstream or section.anthropic_upstream
    keys.update((env if env is not None else os.environ).get(KEYS_ENV, "").split(","))
    if context_length is not None:
        lengths[DEFAULT_KEY] = context_length
    lengths.update(model_context_lengths or {})
    return GatewaySettings(
        upstream_base_url=upstream, upstream_api_key=api_key,
        anthropic_base_url=anthropic_upstream, anthropic_api_key=anthropic_api_key,
        api_keys=frozenset(keys), max_body_bytes=body, recall_rounds=rounds,
        max_session_bytes=memory, body_timeout=stall,
        context_lengths=lengths, hygiene_threshold=hygiene, hard_message_limit=limit,
        compression=compression, summary=_summary_config(settings),
    )  # fmt: skip


def _checked_url(value: str) -> str:
    base = value.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigError(f"the upstream URL must start with http:// or https://, got {base!r}")
    return base


def _summary_config(settings: Settings | None) -> LLMSummarizerConfig | None:
    """The LLM summarizer configured under ``auxiliary.compression``, if any."""
    aux = settings.auxiliary.compression if settings is not None else None
    if aux is None or not aux.model:
        return None
    key = os.environ.get(aux.api_key_env) if aux.api_key_env else None
    return LLMSummarizerConfig(
        model=aux.model, base_url=aux.base_url, api_key=key, timeout=aux.timeout
    )


def parse_model_context(values: list[str]) -> dict[str, int]:
    """``MODEL=TOKENS`` pairs (``--model-context``) as a map; ConfigError on bad input."""
    out: dict[str, int] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        if not sep or not name or not number.strip().isdigit() or int(number) <= 0:
            raise ConfigError(f"--model-context expects MODEL=TOKENS, got {value!r}")
        out[name] = int(number)
    return out
