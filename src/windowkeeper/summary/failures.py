"""Classify summary-call failures into :class:`FailureKind` + a one-line detail (design §6).

This is the only place where openai/httpx exceptions are interpreted. Each detail says
what went wrong and what to do, in one line, without echoing response bodies at length
(they may be whole HTML pages).

The openai SDK wraps transport errors (``APIConnectionError``/``APITimeoutError``), but a
stream that breaks mid-way can surface the raw transport exception of whichever httpx
flavour the SDK uses (``httpx`` or ``httpx2``), so those are recognised by class name
along their MRO rather than by importing every flavour.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Mapping

from ..core.report import FailureKind
from .protocol import SummaryFailure

KEY_HINT = "set WINDOWKEEPER_SUMMARY_API_KEY or --summary-api-key"
DETAIL_LIMIT = 300

_QUOTA_WORDS = (
    "insufficient_quota",
    "exceeded your current quota",
    "quota exceeded",
    "quota_exceeded",
    "billing",
    "out of credits",
    "out of funds",
    "payment required",
    "credit balance",
)
_OVERLOAD_WORDS = ("overloaded", "at capacity", "over capacity")
_MODEL_WORDS = ("model_not_found", "does not exist", "unknown model", "no such model")
_TIMEOUT_CLASSES = frozenset({"TimeoutException", "TimeoutError", "ReadTimeout"})
_NETWORK_CLASSES = frozenset(
    {"ConnectError", "NetworkError", "RemoteProtocolError", "ProtocolError", "ReadError",
     "WriteError", "TransportError", "ProxyError", "ConnectionError"}
)  # fmt: skip


def _optional_http_errors() -> tuple[type[BaseException], ...]:
    """``httpx2.HTTPError`` when the installed openai SDK is built on httpx2."""
    try:
        module = importlib.import_module("httpx2")
    except ImportError:
        return ()
    error = getattr(module, "HTTPError", None)
    return (error,) if isinstance(error, type) and issubclass(error, BaseException) else ()


@functools.cache
def provider_errors() -> tuple[type[BaseException], ...]:
    """Everything a summary call may raise that is the provider's fault, not ours.

    The openai SDK (and httpx) is imported on first use: importing it costs most of a
    second, and only an LLM summarizer that actually failed needs its exception classes.
    """
    import httpx
    import openai

    return (
        openai.OpenAIError,
        httpx.HTTPError,
        OSError,
        json.JSONDecodeError,
        *_optional_http_errors(),
    )


def _one_line(text: object, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def looks_like_html(body: object) -> bool:
    """True for an HTML page (a proxy or load balancer answering instead of the API)."""
    if not isinstance(body, str):
        return False
    head = body.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head


def _error_object(body: object) -> object:
    """The error object of a body: the SDK passes either ``{"error": {...}}`` or its inside."""
    if isinstance(body, Mapping) and "error" in body:
        return body["error"]
    return body


def _body_text(body: object, message: str) -> str:
    error = _error_object(body)
    if isinstance(error, Mapping):
        parts = [str(error.get(k) or "") for k in ("message", "code", "type")]
        return " ".join([*parts, message]).lower()
    return f"{error if isinstance(error, str) else ''} {message}".lower()


def _message(body: object, message: str) -> str:
    error = _error_object(body)
    if isinstance(error, Mapping) and error.get("message"):
        return _one_line(error["message"])
    if looks_like_html(error):
        return "an HTML page instead of JSON"
    if isinstance(error, str) and error.strip():
        return _one_line(error)
    return _one_line(message) if message else "no details"


def classify_status(
    status: int, body: object, message: str = "", *, endpoint: str = "the summary endpoint"
) -> SummaryFailure:
    """Classify an HTTP error response (``status`` 0: an error event inside a stream)."""
    text = _body_text(body, message)
    said = f"{status}: {_message(body, message)}" if status else _message(body, message)
    if status in (401, 403) and not any(w in text for w in _QUOTA_WORDS):
        return SummaryFailure(
            FailureKind.AUTH,
            f"{endpoint} rejected the API key ({said}): {KEY_HINT}",
        )
    if status == 402 or any(w in text for w in _QUOTA_WORDS):
        return SummaryFailure(
            FailureKind.AUTH,
            f"{endpoint} reports no quota or billing problem ({said}): "
            "top up the account or use another key/provider",
        )
    if status == 404 or any(w in text for w in _MODEL_WORDS):
        return SummaryFailure(
            FailureKind.MODEL_NOT_FOUND,
            f"{endpoint} does not know the model ({said}): check --summary-model "
            "and --summary-base-url (it usually ends in /v1)",
        )
    if status == 429:
        return SummaryFailure(
            FailureKind.RATE_LIMIT,
            f"{endpoint} is rate limiting ({said}): wait and retry, or lower the request rate",
        )
    if status in (503, 529) or any(w in text for w in _OVERLOAD_WORDS):
        return SummaryFailure(
            FailureKind.OVERLOADED,
            f"{endpoint} is overloaded ({said}): retry later or use another model",
        )
    if status >= 500 or looks_like_html(body):
        return SummaryFailure(
            FailureKind.SERVER_ERROR,
            f"{endpoint} failed with a server error ({said}): retry later; check "
            "the provider's status",
        )
    return SummaryFailure(FailureKind.OTHER, f"{endpoint} refused the summary request ({said})")


def classify_non_json(text: str, *, endpoint: str = "the summary endpoint") -> SummaryFailure:
    """A 2xx response whose body is not a chat completion (often an HTML error page)."""
    if looks_like_html(text):
        return SummaryFailure(
            FailureKind.SERVER_ERROR,
            f"{endpoint} answered with an HTML page instead of JSON: check --summary-base-url "
            "(a proxy or login page may be in the way)",
        )
    return SummaryFailure(
        FailureKind.OTHER,
        f"{endpoint} answered with something that is not a chat completion "
        f"({_one_line(text, 80)!r}): check --summary-base-url",
    )


def _mro_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _transport_failure(exc: BaseException, endpoint: str) -> SummaryFailure | None:
    """Timeouts and connection failures, from the SDK wrapper or the raw transport error."""
    import openai

    cause = exc.__cause__ or exc.__context__
    chain = [exc, *([cause] if cause is not None else [])]
    names = set().union(*(_mro_names(e) for e in chain))
    if isinstance(exc, openai.APITimeoutError) or names & _TIMEOUT_CLASSES:
        return SummaryFailure(
            FailureKind.TIMEOUT,
            f"{endpoint} did not answer in time: raise --summary-timeout or use a faster model",
        )
    if isinstance(exc, openai.APIConnectionError | OSError) or names & _NETWORK_CLASSES:
        reason = _one_line(cause if cause is not None else exc, 120) or type(exc).__name__
        return SummaryFailure(
            FailureKind.NETWORK,
            f"could not reach {endpoint} ({reason}): check --summary-base-url and that the "
            "server is running",
        )
    return None


def classify_exception(
    exc: BaseException, *, endpoint: str = "the summary endpoint"
) -> SummaryFailure:
    """Classify an exception raised by a summary call (one of :func:`provider_errors`)."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return classify_status(exc.status_code, exc.body, exc.message, endpoint=endpoint)
    transport = _transport_failure(exc, endpoint)
    if transport is not None:
        return transport
    if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError):
        return SummaryFailure(
            FailureKind.SERVER_ERROR,
            f"{endpoint} sent a malformed response ({_one_line(exc, 80)}): retry later",
        )
    if isinstance(exc, openai.APIError):
        body = exc.body
        text = _body_text(body, exc.message)
        if looks_like_html(body) or any(w in text for w in _OVERLOAD_WORDS + _QUOTA_WORDS):
            return classify_status(0, body, exc.message, endpoint=endpoint)
    return SummaryFailure(
        FailureKind.OTHER, f"summary call failed: {type(exc).__name__}: {_one_line(exc)}"
    )
