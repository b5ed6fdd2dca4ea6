"""Backends of the LLM summarizer: one chat call, whichever SDK and streaming mode.

Both backends return a :class:`Completion`; they raise provider exceptions untouched
(classification happens in :mod:`windowkeeper.summary.failures`). Responses are read by
attribute (duck-typed) because the openai SDK and LiteLLM return look-alike objects.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from ...core.errors import ConfigError

if TYPE_CHECKING:
    import openai

    from .config import LLMSummarizerConfig


class ClientFactory(Protocol):
    def __call__(self, *, base_url: str, api_key: str, timeout: float) -> openai.OpenAI: ...


def default_client_factory(*, base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    import openai  # imported when a client is made: the SDK costs most of a second to import

    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)


@dataclass(frozen=True)
class Completion:
    """What one call answered, whichever backend and streaming mode produced it."""

    text: str = ""
    refusal: str | None = None
    finish_reason: str | None = None
    streamed: bool = False
    non_json: str | None = None
    error: object = None


class Backend(Protocol):
    def complete(self, model: str, prompt: str, timeout: float, deadline: float) -> Completion: ...


def from_response(response: Any) -> Completion:
    if isinstance(response, str | bytes):
        text = response.decode("utf-8", "replace") if isinstance(response, bytes) else response
        return Completion(non_json=text)
    choices = getattr(response, "choices", None)
    if not choices:
        extra = getattr(response, "model_extra", None) or {}
        return Completion(error=getattr(response, "error", None) or extra.get("error") or {})
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    return Completion(
        text=content if isinstance(content, str) else str(content or ""),
        refusal=refusal if isinstance(refusal, str) and refusal.strip() else None,
        finish_reason=getattr(choice, "finish_reason", None),
    )


def from_stream(chunks: Iterable[Any], clock: Callable[[], float], deadline: float) -> Completion:
    """Accumulate deltas; the finish reason is the last one any chunk carried."""
    parts: list[str] = []
    refusals: list[str] = []
    finish: str | None = None
    for chunk in chunks:
        for choice in (getattr(chunk, "choices", None) or [])[:1]:
            delta = getattr(choice, "delta", None)
            content, refusal = getattr(delta, "content", None), getattr(delta, "refusal", None)
            if isinstance(content, str):
                parts.append(content)
            if isinstance(refusal, str):
                refusals.append(refusal)
            finish = getattr(choice, "finish_reason", None) or finish
        if clock() > deadline:  # a trickling stream never trips a per-read timeout
            raise TimeoutError("the streamed summary did not finish before the deadline")
    refusal_text = "".join(refusals).strip()
    return Completion("".join(parts), refusal_text or None, finish, streamed=True)


class OpenAIBackend:
    def __init__(
        self, client: openai.OpenAI, config: LLMSummarizerConfig, clock: Callable[[], float]
    ) -> None:
        self._client = client
        self._config = config
        self._clock = clock

    def complete(self, model: str, prompt: str, timeout: float, deadline: float) -> Completion:
        create: Any = self._client.chat.completions.create
        kwargs = request_options(self._config, model, prompt)
        if not self._config.stream:
            return from_response(create(**kwargs, timeout=timeout))
        stream = create(**kwargs, timeout=timeout, stream=True)
        if isinstance(stream, str | bytes):
            return from_response(stream)
        try:
            # an HTML error page served with 200 would otherwise parse as an empty stream
            response = getattr(stream, "response", None)
            content_type = str(getattr(response, "headers", {}).get("content-type", ""))
            if content_type.startswith("text/html") and response is not None:
                return from_response(response.read().decode("utf-8", "replace"))
            return from_stream(stream, self._clock, deadline)
        finally:
            stream.close()


class LiteLLMBackend:
    def __init__(
        self,
        module: ModuleType,
        config: LLMSummarizerConfig,
        api_key: str | None,
        clock: Callable[[], float],
    ) -> None:
        self._module = module
        self._config = config
        self._api_key = api_key
        self._clock = clock

    def complete(self, model: str, prompt: str, timeout: float, deadline: float) -> Completion:
        kwargs = request_options(self._config, model, prompt)
        if self._config.base_url:
            kwargs["api_base"] = self._config.base_url
        if self._api_key:
            kwargs["api_key"] = self._api_key
        with warnings.catch_warnings():
            # LiteLLM builds pydantic models of its own on first use; pydantic's notes
            # about them are no concern of ours.
            warnings.filterwarnings("ignore", message=r".*ReadOnly", category=UserWarning)
            response = self._module.completion(
                **kwargs, timeout=timeout, stream=self._config.stream, num_retries=0
            )
        if self._config.stream:
            return from_stream(response, self._clock, deadline)
        return from_response(response)


def request_options(config: LLMSummarizerConfig, model: str, prompt: str) -> dict[str, Any]:
    options: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    if config.temperature is not None:
        options["temperature"] = config.temperature
    if config.max_output_tokens is not None:
        options["max_tokens"] = config.max_output_tokens
    return options


def import_litellm() -> ModuleType | None:
    """The ``litellm`` module kept off the network, or ``None`` when it is not installed.

    LiteLLM fetches its model map from the network at import unless told to use the copy
    bundled with the wheel (we never download data at run time), and its import emits
    warnings about its own pydantic models that are no concern of our users.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module("litellm")
        except ImportError:
            return None


def load_litellm() -> ModuleType:
    """The ``litellm`` module, or a ConfigError naming the extra to install."""
    module = import_litellm()
    if module is None:
        raise ConfigError(
            "the litellm summary backend needs the 'litellm' extra: "
            "pip install 'windowkeeper[litellm]' (or use backend='openai')"
        )
    return module
