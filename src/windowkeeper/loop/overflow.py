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
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..compaction.images import shrink_images, strip_images
from ..compaction.prune import PruneSettings, truncate_tool_arguments
from ..core.config import CompressionConfig
from ..core.errors import CompressionExhaustedError
from ..core.messages import Message

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
    """

    kind: OverflowKind
    limit: int | None = None
    available_output: int | None = None
    status: int | None = None

    @property
    def compressible(self) -> bool:
        """Whether shrinking the input can help (an output cap without figures cannot)."""
        if self.kind is not OverflowKind.OUTPUT_CAP:
            return True
        return self.limit is not None or self.available_output is not None


# Wordings that name the context window (OpenAI, Anthropic, vLLM, llama.cpp, Ollama,
# Gemini, Bedrock, Mistral and OpenAI-compatible gateways).
_OVERFLOW_WORDS = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|"
    r"prompt is too long|prompt too long|exceeds? the (?:available )?context size|"
    r"exceed_context_size|maximum model length|max_model_len|max model len|"
    r"input (?:is )?too long|too many (?:input )?tokens|input length exceeds|"
    r"exceeds? (?:the )?(?:maximum|max) (?:context|input|number of tokens)|"
    r"reduce the length of the messages|context length of|token limit|"
    r"longer than the maximum|exceeded max context length|n_ctx",
    re.IGNORECASE,
)
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
        rf"context (?:length|window|size) (?:is |of )?{_NUMBER}",
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
    if status == 413 or _PAYLOAD_WORDS.search(text):
        return Overflow(OverflowKind.PAYLOAD_TOO_LARGE, limit, None, status)
    if status == 429:
        if _LONG_CONTEXT_WORDS.search(text):
            return Overflow(OverflowKind.LONG_CONTEXT_TIER, limit, None, status)
        return None  # an ordinary rate limit: retry later, do not drop history
    available = parse_available_output(text)
    capped = available is not None or (_output_cap_words(text) and not _OVERFLOW_WORDS.search(text))
    if capped and status in (None, 400):
        return Overflow(OverflowKind.OUTPUT_CAP, limit, available, status)
    if _OVERFLOW_WORDS.search(text) and (status is None or 400 <= status < 500):
        return Overflow(OverflowKind.CONTEXT_OVERFLOW, limit, None, status)
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


TRUNCATION_MARKER = (
    "\n[... {cut:,} characters cut here: the request exceeded the context window ...]\n"
)
_MIN_KEEP_CHARS = 400


def truncate_tool_results(messages: list[Message], excess_tokens: int) -> tuple[list[Message], int]:
    """The last rung of the overflow ladder (SPEC §9): shorten the largest tool results.

    Used only when compaction cannot bring a request under the window (typically one huge
    group of fresh tool results). Each result whose text (a string, or the text parts of a
    list) is longer than a common cap keeps its head and tail around a visible marker;
    messages and pairing stay as they are. The cap is found by water-filling so the cut
    totals about ``excess_tokens`` (~4 characters a token). Returns the messages (the input
    list itself when nothing was cut) and how many results were shortened.
    """
    sizes = {
        i: size
        for i, m in enumerate(messages)
        if m.get("role") == "tool" and (size := _text_size(m.get("content")))
    }
    need = excess_tokens * 4
    cap = _water_level(sorted(sizes.values(), reverse=True), need)
    if cap is None:
        return messages, 0
    out = list(messages)
    count = 0
    for index, size in sizes.items():
        if size > cap:
            content = _shorten_content(messages[index]["content"], cap)
            out[index] = {**messages[index], "content": content}
            count += 1
    return (out, count) if count else (messages, 0)


def _text_size(content: object) -> int:
    """Characters of a tool result's text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    return sum(len(p["text"]) for p in content if _is_text_part(p))


def _is_text_part(part: object) -> bool:
    return isinstance(part, Mapping) and isinstance(part.get("text"), str)


def _shorten_content(content: Any, cap: int) -> Any:
    """``content`` with its text cut to about ``cap`` characters. A list's text parts become
    one shortened text part in place of the first (other parts, such as images, stay), so
    many short parts cannot each keep a head and grow by a marker."""
    if isinstance(content, str):
        return _shorten(content, cap)
    text: str | None = "\n".join(p["text"] for p in content if _is_text_part(p))
    shortened: list[Any] = []
    for part in content:
        if not _is_text_part(part):
            shortened.append(part)
        elif text is not None:
            shortened.append({**part, "text": _shorten(text, cap)})
            text = None
    return shortened


def truncate_call_arguments(
    messages: list[Message], config: CompressionConfig
) -> tuple[list[Message], int]:
    """The rung after :func:`truncate_tool_results`: shorten long tool-call arguments
    (file bodies of writes and edits) everywhere, staying valid JSON. Returns the
    messages (the input list itself when nothing was cut) and how many calls changed."""
    settings = PruneSettings(
        0, len(messages), args_over=config.args_truncate_over, args_head=config.args_head_chars
    )
    result = truncate_tool_arguments(messages, settings)
    return result.messages, len(result.archived)


@dataclass(frozen=True)
class Cut:
    """One truncation rung that changed the request: what, how many, tokens before/after."""

    what: str
    count: int
    before: int
    after: int


def last_rungs(
    messages: list[Message],
    tokens: int,
    window: int,
    config: CompressionConfig,
    estimate: Callable[[list[Message]], int],
) -> tuple[list[Message], int, tuple[Cut, ...]]:
    """The end of the overflow ladder, after compaction could not fit ``window``: shorten
    the largest tool results, then long call arguments, each only while still over."""
    cuts: list[Cut] = []
    for what in ("tool result", "tool-call argument"):
        if tokens < window:
            break
        if what == "tool result":
            shorter, count = truncate_tool_results(messages, tokens - int(window * 0.9))
        else:
            shorter, count = truncate_call_arguments(messages, config)
        after = estimate(shorter) if count else tokens
        if after < tokens:  # a rung that does not help is not taken
            cuts.append(Cut(what, count, tokens, after))
            messages, tokens = shorter, after
    return messages, tokens, tuple(cuts)


def exhausted_error(why: str, tokens: int, window: int) -> CompressionExhaustedError:
    return CompressionExhaustedError(
        f"compression exhausted: the request (~{tokens:,} tokens) still does not fit the "
        f"model's window ({window:,} tokens); {why}. Start a new session, raise the "
        "context window (a larger context_length or model), or compress manually with a "
        "focus topic (ContextManager.compress(messages, focus_topic=...))."
    )


def _water_level(sizes: list[int], need: int) -> int | None:
    """The largest cap whose cut (sum of ``size - cap`` over larger sizes) reaches ``need``."""
    if need <= 0 or not sizes:
        return None
    for count in range(1, len(sizes) + 1):
        floor = sizes[count] if count < len(sizes) else 0
        level = (sum(sizes[:count]) - need) // count
        if level >= floor:
            return max(_MIN_KEEP_CHARS, level)
    return _MIN_KEEP_CHARS


def _shorten(text: str, cap: int) -> str:
    head = cap * 2 // 3
    tail = cap - head
    marker = TRUNCATION_MARKER.format(cut=len(text) - cap)
    return f"{text[:head]}{marker}{text[len(text) - tail :]}"
