"""A fake model with a real context limit, for testing overflow recovery without a server.

:class:`LimitedProvider` is a call function for :meth:`ContextManager.run`: it counts each
request with its own "tokenizer" (our estimate times ``mismatch``, like a provider whose
tokenizer disagrees with ours by that much), answers with that count as
``prompt_tokens``, and rejects a request over its limit the way a real server does, in
one of :data:`WORDINGS` (the messages of OpenAI, Anthropic, vLLM, llama.cpp, Ollama,
Gemini, Bedrock, Mistral, a proxy's 413 and a bare 400), raised as an exception that
carries ``status_code``, ``body`` and ``message`` like the SDKs' errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..compaction.plan import HANDOFF_FRAME_TOKENS, MIN_FIT_BUDGET
from ..core.errors import WindowkeeperError
from ..core.invariants import SYSTEM_ROLES
from ..core.messages import Message, ToolSchema
from ..core.tokens import message_tokens, tool_schema_tokens
from ..engine.compressor import ContextCompressor
from ..loop.manager import ContextManager

__all__ = (
    "WORDINGS",
    "LimitedProvider",
    "LimitedReplay",
    "ProviderRejection",
    "Wording",
    "replay_limited",
    "request_floors",
)


@dataclass(frozen=True)
class Wording:
    """How one server says "too large": status, whether it states the limit, the message
    (``{limit}``: its window, ``{count}``: its count of the request's input)."""

    name: str
    status: int
    message: str
    states_limit: bool
    extra: Mapping[str, str] = field(default_factory=dict)
    """Sibling fields of the error object (``{limit}``/``{count}`` filled in as numbers)."""


WORDINGS: tuple[Wording, ...] = (
    Wording("openai", 400, "This model's maximum context length is {limit} tokens. However, "
            "your messages resulted in {count} tokens. Please reduce the length of the "
            "messages.", True),
    Wording("openai-responses", 400, "Your input exceeds the context window of this model. "
            "Please adjust your input and try again.", False),
    Wording("anthropic", 400, "prompt is too long: {count} tokens > {limit} maximum", True),
    Wording("vllm", 400, "This model's maximum context length is {limit} tokens. However, "
            "you requested {count} tokens ({count} in the messages, 0 in the completion). "
            "Please reduce the length of the messages or completion.", True),
    Wording("llama.cpp", 400, "the request exceeds the available context size, try "
            "increasing it", False),
    Wording("llama.cpp-n_ctx", 400, "the request exceeds the available context size, try "
            "increasing it", True, {"n_prompt_tokens": "{count}", "n_ctx": "{limit}"}),
    Wording("ollama", 400, "input length exceeds the context length", False),
    Wording("ollama-runner", 500, "llama runner process has terminated: context window "
            "exceeded", False),
    Wording("lm-studio", 400, "Trying to keep the first {count} tokens when context the "
            "overflows. However, the model is loaded with context length of only {limit} "
            "tokens, which is not enough.", True),
    Wording("gemini", 400, "The input token count ({count}) exceeds the maximum number of "
            "tokens allowed ({limit}).", True),
    Wording("bedrock", 400, "The model returned the following errors: Input is too long for "
            "requested model.", False),
    Wording("bedrock-stated", 400, "Too many input tokens. Max input tokens: {limit}, request "
            "input token count: {count}", True),
    Wording("mistral", 400, "Prompt contains {count} tokens and 0 draft tokens, too large "
            "for model with {limit} maximum context length", True),
    Wording("proxy-413", 413, "Request Entity Too Large", False),
    Wording("bare-400", 400, "Bad Request", False),
)  # fmt: skip


class ProviderRejection(Exception):
    """A rejected request as an OpenAI-compatible SDK raises it."""

    def __init__(self, status: int, message: str, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.body = body


@dataclass
class LimitedProvider:
    """Answers requests whose input fits ``limit`` (its own count), rejects the others.

    Args:
        limit: the real window, in the provider's tokens.
        wording: how it says a request is too large.
        mismatch: its tokens per token of our estimate (1.15: it counts 15% more).
        tools: the tool schemas sent with every request (counted too).
        spurious_every: every n-th request (0: none) is refused once as too large
            whatever its size, as a server in trouble does; its retry is answered.
    """

    limit: int
    wording: Wording
    mismatch: float = 1.0
    tools: Sequence[ToolSchema] | None = None
    spurious_every: int = 0
    calls: int = 0
    rejections: int = 0
    _sizes: dict[int, tuple[Message, int]] = field(default_factory=dict, repr=False)

    def count(self, messages: Sequence[Message]) -> int:
        """The provider's count of a request's input (per-message counts are cached)."""
        total = tool_schema_tokens(self.tools)
        for message in messages:
            cached = self._sizes.get(id(message))
            if cached is None or cached[0] is not message:
                cached = (message, message_tokens(message))
                self._sizes[id(message)] = cached
            total += cached[1]
        return math.ceil(total * self.mismatch)

    def __call__(self, messages: list[Message]) -> dict[str, Any]:
        self.calls += 1
        count = self.count(messages)
        spurious = self.spurious_every and self.calls % (self.spurious_every + 1) == 0
        if count > self.limit or spurious:
            self.rejections += 1
            raise self.rejection(count)
        usage = {"prompt_tokens": count, "completion_tokens": 1}
        return {"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": usage}

    def rejection(self, count: int) -> ProviderRejection:
        figures = {"limit": self.limit, "count": count}
        message = self.wording.message.format(**figures)
        error: dict[str, Any] = {"message": message, "type": "invalid_request_error"}
        error |= {k: int(v.format(**figures)) for k, v in self.wording.extra.items()}
        return ProviderRejection(self.wording.status, message, {"error": error})


@dataclass(frozen=True)
class LimitedReplay:
    """How a replay against a :class:`LimitedProvider` went. ``recoverable``: the floor
    of every request (:func:`request_floors`) fits the provider's limit, so a recovery
    that reaches the floor gets every request through."""

    answered: int
    requests: int
    rejections: int
    failure: str = ""
    recoverable: bool = True

    @property
    def completed(self) -> bool:
        return self.answered == self.requests


def request_floors(messages: Sequence[Message], provider: LimitedProvider) -> list[int]:
    """What no compaction removes from each request of a replay, in the provider's own
    tokens: the leading system messages, the tool schemas, the newest user message and the
    smallest handoff a compaction writes (its budget's floor and its framing), as in the
    compressor's over-window warning."""
    lead = []
    for message in messages:
        if message.get("role") not in SYSTEM_ROLES:
            break
        lead.append(message)
    handoff = math.ceil((MIN_FIT_BUDGET + HANDOFF_FRAME_TOKENS) * provider.mismatch)
    floors: list[int] = []
    newest: list[Message] = []
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and index:
            floors.append(provider.count([*lead, *newest]) + handoff)
        if message.get("role") == "user":
            newest = [message]
    return floors


def replay_limited(
    messages: Sequence[Message],
    tools: Sequence[ToolSchema] | None,
    window: int,
    provider: LimitedProvider,
) -> LimitedReplay:
    """Replay ``messages`` as the agent sent them (each assistant message is one request
    carrying everything before it) through a manager configured for ``window``; stops
    at the first request that fails (its error in ``failure``)."""
    schemas = list(tools) if tools else None
    manager = ContextManager(ContextCompressor(context_length=window, tools=schemas), tools=schemas)
    recoverable = max(request_floors(messages, provider), default=0) <= provider.limit
    working: list[Message] = []
    answered = requests = 0
    for message in messages:
        if message.get("role") == "assistant" and working:
            requests += 1
            try:
                working = manager.run(provider, working).messages
            except (WindowkeeperError, ProviderRejection) as exc:
                failure = f"{type(exc).__name__}: {exc}"
                rejected = provider.rejections
                return LimitedReplay(answered, requests, rejected, failure, recoverable)
            answered += 1
        working.append(message)
    return LimitedReplay(answered, requests, provider.rejections, recoverable=recoverable)
