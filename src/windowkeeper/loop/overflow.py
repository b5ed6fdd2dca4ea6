"""Classifying provider errors: context overflow, payload too large, long-context 429, output cap.

Third-party errors (``openai.APIStatusError``, ``httpx.HTTPStatusError``, our own
``UpstreamError`` carrying a ``status_code``) are read at this edge by duck typing: the
status code and the provider's message text. Nothing here imports a provider SDK.

What must hold: an error is classified as an overflow only on evidence (a status that
means "too large", or wording that names the context window); a bare 400 counts only for a
large session and a short, unexplained message, so a real client error (bad model name,
bad schema) is never "fixed" by throwing history away.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ..compaction.images import shrink_images, strip_images
from ..core.messages import Message

__all__ = (
    "LONG_CONTEXT_TIER_TOKENS",
    "OVERFLOW_WORDINGS",
    "Overflow",
    "OverflowKind",
    "OverflowWording",
    "classify",
    "error_text",
    "lighter_images",
    "overflow_wording",
    "parse_available_output",
    "parse_limit",
    "parse_request_tokens",
    "status_of",
)

LONG_CONTEXT_TIER_TOKENS = 200_000
"""The window a long-context 429 (Anthropic's extra-usage tier) falls back to."""

GENERIC_400_MAX_CHARS = 30
LARGE_SESSION_WINDOW_SHARE = 0.40
LARGE_SESSION_MESSAGES = 80


class OverflowKind(enum.StrEnum):
    CONTEXT_OVERFLOW = "context_overflow"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    LONG_CONTEXT_TIER = "long_context_tier"
    OUTPUT_CAP = "output_cap"
    """Input + ``max_tokens`` exceed the window (or ``max_tokens`` alone is too large)."""


@dataclass(frozen=True)
class Overflow:
    """A classified provider error.

    Attributes:
        limit: the real context window when the error states it.
        available_output: output tokens still available, when an output-cap error says so.
        status: the HTTP status, when known.
        request_tokens: the provider's own count of the rejected request's input, when the
            error states it (calibrates our estimate against the provider's tokenizer).
    """

    kind: OverflowKind
    limit: int | None = None
    available_output: int | None = None
    status: int | None = None
    request_tokens: int | None = None

    @property
    def compressible(self) -> bool:
        """Whether shrinking the input can help (an output cap without figures cannot)."""
        if self.kind is not OverflowKind.OUTPUT_CAP:
            return True
        return self.limit is not None or self.available_output is not None


@dataclass(frozen=True)
class OverflowWording:
    """One way a server says "the request exceeds the context window".

    ``statuses`` are the HTTP statuses it comes with (``None`` in it: no status known);
    every 4xx unless a row says otherwise. Ollama's runner reports an overflow as a 500,
    which for any other wording is a server fault to re-raise, not an overflow.
    """

    provider: str
    pattern: re.Pattern[str]
    statuses: frozenset[int | None] = frozenset({None, *range(400, 500)})


def _row(provider: str, pattern: str, statuses: Collection[int | None] = ()) -> OverflowWording:
    compiled = re.compile(pattern, re.IGNORECASE)
    if statuses:
        return OverflowWording(provider, compiled, frozenset(statuses))
    return OverflowWording(provider, compiled)


OVERFLOW_WORDINGS: tuple[OverflowWording, ...] = (
    _row("openai", r"context[_ ]length[_ ]exceeded|maximum context length|"
         r"reduce the length of the messages|exceeds the context window"),
    _row("anthropic", r"prompt is too long|prompt too long"),
    _row("lm-studio", r"is loaded with (?:a )?context length|when context (?:the )?overflows|"
         r"tokens to keep from the initial prompt is greater than the context length"),
    _row("llama.cpp", r"exceeds? the (?:available )?context size|exceed_context_size|n_ctx"),
    _row("vllm", r"maximum model length|max_model_len|max model len|exceeds limit of|"
         r"longer than the maximum model length"),
    _row("ollama", r"input length exceeds the context length|exceeds? the context length"),
    _row("ollama-runner", r"context (?:window|length|size) exceeded|"
         r"context (?:window|length) (?:is )?(?:full|exceeded)", {None, 400, 413, 500}),
    _row("gemini", r"exceeds? (?:the )?(?:maximum|max) (?:context|input|number of tokens)"),
    _row("bedrock", r"input (?:is )?too long|too many (?:input )?tokens"),
    _row("mistral", r"too large for model with \d[\d,_]* maximum context length"),
    _row("xai", r"maximum prompt length"),
    _row("tgi", r"inputs`? tokens \+ `?max_new_tokens|input length exceeds"),
    _row("cohere", r"prompt cannot exceed|too long to fit into the model"),
    _row("generic", r"context window|token limit|longer than the maximum|context length of|"
         r"exceeded max context length"),
)  # fmt: skip
"""Wordings that name the context window, as data: one row per server family (OpenAI,
Anthropic, llama.cpp, vLLM, Ollama's API and its runner, LM Studio, Gemini, Bedrock,
Mistral, xAI, TGI, Cohere, and the phrases OpenAI-compatible gateways pass on)."""


def overflow_wording(text: str, status: int | None) -> OverflowWording | None:
    """The first row of :data:`OVERFLOW_WORDINGS` that ``text`` matches with ``status``
    (LM Studio's row comes before llama.cpp's, whose ``n_ctx`` its messages quote)."""
    for row in OVERFLOW_WORDINGS:
        if status in row.statuses and row.pattern.search(text):
            return row
    return None


def _names_the_window(text: str) -> bool:
    """Whether any row's wording is in ``text``, whatever the status."""
    return any(row.pattern.search(text) for row in OVERFLOW_WORDINGS)


_PAYLOAD_WORDS = re.compile(r"payload too large|request entity too large|body too large", re.I)
_LONG_CONTEXT_WORDS = re.compile(r"long[- ]context", re.IGNORECASE)
_OUTPUT_CAP_WORDS = re.compile(
    r"max_tokens|max_completion_tokens|completion tokens|output tokens", re.IGNORECASE
)

_NUMBER = r"(\d[\d,_]*)"
# Patterns that state the window; the first group is the limit.
_TOO_MANY_WORDS = re.compile(r"too large|exceed|at most|greater than|larger than", re.I)
_LIMIT_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"maximum context length (?:is|of) {_NUMBER}",
        rf"{_NUMBER} tokens? > {_NUMBER} maximum",  # Anthropic: "210000 tokens > 200000 maximum"
        rf"\d \+ \d[\d,_]* > {_NUMBER}",  # Anthropic output cap: "input + max_tokens > limit"
        rf"available context size \({_NUMBER} tokens?\)",  # llama.cpp
        rf"n_ctx\W{{0,3}}{_NUMBER}",
        rf"maximum model length (?:is |of )?{_NUMBER}",  # vLLM
        rf"max_model_len\W{{0,3}}{_NUMBER}",
        rf"maximum number of tokens allowed \({_NUMBER}\)",  # Gemini
        rf"with {_NUMBER} maximum context length",  # Mistral
        rf"{_NUMBER} (?:tokens? )?maximum context length",
        rf"maximum prompt length is {_NUMBER}",  # xAI
        rf"max(?:imum)? input tokens:? {_NUMBER}",  # Bedrock
        rf"max_new_tokens`? must be <= {_NUMBER}",  # TGI (input + output)
        rf"prompt cannot exceed {_NUMBER}",  # Cohere
        rf"exceeds limit of {_NUMBER}",  # vLLM
        rf"longer than the maximum model length of {_NUMBER}",  # vLLM
        rf"context (?:length|window|size) (?:is |of )?(?:only )?{_NUMBER}",
    )
]
# The provider's count of the rejected input (first group), where an error states it.
_REQUEST_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"(?:messages|input|prompt) resulted in {_NUMBER} tokens",  # OpenAI
        rf"{_NUMBER} tokens? > \d[\d,_]* maximum",  # Anthropic
        rf"{_NUMBER} in the messages",  # vLLM
        rf"request has {_NUMBER} input tokens",  # vLLM
        rf"input token count (?:is )?\(?{_NUMBER}\)?",  # Gemini
        rf"prompt contains {_NUMBER} tokens",  # Mistral
        rf"prompt \(total length {_NUMBER}\)",  # vLLM
        rf"input prompt \({_NUMBER} tokens\)",  # vLLM
        rf"request contains {_NUMBER} tokens",  # xAI
        rf"request input token count:? {_NUMBER}",  # Bedrock
        rf"given: {_NUMBER} `?inputs`? tokens",  # TGI
        rf"n_prompt_tokens\W{{0,3}}{_NUMBER}",  # llama.cpp
        rf"received {_NUMBER}",  # Cohere
        rf"keep the first {_NUMBER} tokens",  # LM Studio
        rf"n_keep\W{{0,3}}{_NUMBER}",  # LM Studio
        rf"request \({_NUMBER} tokens\) exceeds",  # llama.cpp
        rf"prompt \(length {_NUMBER}\) is longer",  # vLLM
    )
]
_INPUT_PLUS_OUTPUT = re.compile(rf"{_NUMBER} \+ {_NUMBER} > {_NUMBER}")
_MIN_LIMIT, _MAX_LIMIT = 256, 100_000_000


def status_of(error: BaseException) -> int | None:
    """The HTTP status of an error: ``status_code``/``status`` or ``response.status_code``."""
    for holder in (error, getattr(error, "response", None)):
        for name in ("status_code", "status"):
            value = getattr(holder, name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def error_text(error: BaseException) -> str:
    """The provider's message: the exception text plus a JSON body's message/code/type."""
    parts = [str(error)]
    body = getattr(error, "body", None)
    if body is None:
        body = _response_text(getattr(error, "response", None))
    if isinstance(body, str):
        parts.append(body)
    elif isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            parts.extend(str(inner.get(k)) for k in ("message", "code", "type") if inner.get(k))
        # llama.cpp puts the window in sibling fields (``n_ctx``)
        parts.append(json.dumps(body, default=str))
    return "\n".join(parts)


def _response_text(response: object) -> str | None:
    if response is None:
        return None
    import httpx  # here: only an error being read needs it, and it is slow to import

    try:
        text = getattr(response, "text", None)
    except httpx.ResponseNotRead:  # a streamed error response whose body was never read
        return None
    return text if isinstance(text, str) else None


def _provider_message(error: BaseException) -> str:
    """The bare message a provider sent (for the generic-400 rule), else the text."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    message = getattr(error, "message", None)
    return message if isinstance(message, str) else str(error)


def _number(text: str) -> int:
    return int(text.replace(",", "").replace("_", ""))


def parse_limit(text: str) -> int | None:
    """The context window an error message states, if any (plausible values only)."""
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match:
            value = _number(match.groups()[-1])
            if _MIN_LIMIT <= value <= _MAX_LIMIT:
                return value
    return None


def parse_request_tokens(text: str) -> int | None:
    """The provider's count of the rejected request's input tokens, if the error says."""
    for pattern in _REQUEST_PATTERNS:
        match = pattern.search(text)
        if match:
            value = _number(match.group(1))
            if 0 < value <= _MAX_LIMIT:
                return value
    return None


def parse_available_output(text: str) -> int | None:
    """Output tokens left when an error says ``input + max_tokens > limit``."""
    match = _INPUT_PLUS_OUTPUT.search(text)
    if not match:
        return None
    used, _, limit = (_number(g) for g in match.groups())
    return max(0, limit - used)


def classify(
    error: BaseException,
    *,
    session_tokens: int = 0,
    context_length: int | None = None,
    message_count: int = 0,
) -> Overflow | None:
    """Classify ``error``; ``None`` when it is not about the request being too large.

    ``session_tokens``, ``context_length`` and ``message_count`` describe the session and
    only matter for a bare 400: it counts as an overflow when its message is short and the
    session is large (over 40% of the window or over 80 messages).
    """
    status = status_of(error)
    text = error_text(error)
    limit = parse_limit(text)
    counted = parse_request_tokens(text)
    if status == 413 or _PAYLOAD_WORDS.search(text):
        return Overflow(OverflowKind.PAYLOAD_TOO_LARGE, limit, None, status, counted)
    if status == 429:
        if _LONG_CONTEXT_WORDS.search(text):
            return Overflow(OverflowKind.LONG_CONTEXT_TIER, limit, None, status, counted)
        return None  # an ordinary rate limit: retry later, do not drop history
    available = parse_available_output(text)
    capped = available is not None or (_output_cap_words(text) and not _names_the_window(text))
    if capped and status in (None, 400):
        return Overflow(OverflowKind.OUTPUT_CAP, limit, available, status, counted)
    if overflow_wording(text, status) is not None:
        return Overflow(OverflowKind.CONTEXT_OVERFLOW, limit, None, status, counted)
    short = len(_provider_message(error).strip()) < GENERIC_400_MAX_CHARS
    if status == 400 and short and _large_session(session_tokens, context_length, message_count):
        return Overflow(OverflowKind.CONTEXT_OVERFLOW, None, None, status)
    return None


def _output_cap_words(text: str) -> bool:
    return bool(_OUTPUT_CAP_WORDS.search(text) and _TOO_MANY_WORDS.search(text))


def _large_session(tokens: int, context_length: int | None, count: int) -> bool:
    if count > LARGE_SESSION_MESSAGES:
        return True
    return bool(context_length) and tokens > LARGE_SESSION_WINDOW_SHARE * (context_length or 0)


def lighter_images(
    messages: list[Message], roles: Collection[str] | None
) -> tuple[list[Message], int, str]:
    """After a 413: re-encode oversized images, else strip those of ``roles`` (None: all).

    Text compaction cannot make image bytes smaller, so this comes first. Returns the
    messages (the input list itself when nothing changed), how many parts changed, and
    ``"shrunk"`` or ``"stripped"``.
    """
    shrunk = shrink_images(messages)
    if shrunk.worth_retrying:
        return shrunk.messages, shrunk.shrunk, "shrunk"
    stripped, count = strip_images(messages, roles=roles)
    return stripped, count, "stripped"
