"""Classifying provider errors: which ones mean "the request is too large", and the limit."""

from __future__ import annotations

import httpx
import openai
import pytest

from windowkeeper.compaction.truncate import truncate_tool_results
from windowkeeper.core.errors import UpstreamError
from windowkeeper.loop.overflow import (
    OverflowKind,
    classify,
    parse_limit,
)


def _status_error(status: int, body: object) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, json=body, request=request)
    message = body["error"]["message"] if isinstance(body, dict) else str(body)
    return openai.APIStatusError(message, response=response, body=body)


def _err(message: str, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


class _Status(UpstreamError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status_code = status


@pytest.mark.parametrize(
    ("status", "message", "kind", "limit"),
    [
        (400, "This model's maximum context length is 8192 tokens. However, your messages "
              "resulted in 9000 tokens. Please reduce the length of the messages.",
         OverflowKind.CONTEXT_OVERFLOW, 8192),
        (400, "prompt is too long: 210000 tokens > 200000 maximum",
         OverflowKind.CONTEXT_OVERFLOW, 200_000),
        (400, "This model's maximum context length is 4096 tokens. However, you requested 5000 "
              "tokens (4000 in the messages, 1000 in the completion).",
         OverflowKind.CONTEXT_OVERFLOW, 4096),
        (400, "the request exceeds the available context size, try increasing it",
         OverflowKind.CONTEXT_OVERFLOW, None),
        (500, "prompt too long; exceeded max context length by 100 tokens", None, None),
        (400, "prompt too long; exceeded max context length by 100 tokens",
         OverflowKind.CONTEXT_OVERFLOW, None),
        (400, "The input token count (1200000) exceeds the maximum number of tokens allowed "
              "(1048576).", OverflowKind.CONTEXT_OVERFLOW, 1_048_576),
        (413, "Request Entity Too Large", OverflowKind.PAYLOAD_TOO_LARGE, None),
        (429, "Extra usage is required for long context requests.",
         OverflowKind.LONG_CONTEXT_TIER, None),
        (429, "Rate limit reached for requests", None, None),
        (400, "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, "
              "decrease input length or `max_tokens` and try again",
         OverflowKind.OUTPUT_CAP, 200_000),
        (400, "max_tokens is too large: 8000. This model supports at most 4096 completion "
              "tokens, whereas you provided 8000.", OverflowKind.OUTPUT_CAP, None),
        (400, "Invalid model name: gpt-9-turbo-preview does not exist", None, None),
        (401, "Incorrect API key provided", None, None),
    ],
)  # fmt: skip
def test_classify_openai_errors(
    status: int, message: str, kind: OverflowKind | None, limit: int | None
) -> None:
    found = classify(_status_error(status, _err(message)))
    if kind is None:
        assert found is None
    else:
        assert found is not None
        assert (found.kind, found.limit, found.status) == (kind, limit, status)


def test_context_length_exceeded_code_alone() -> None:
    found = classify(_status_error(400, _err("Bad request", "context_length_exceeded")))
    assert found is not None and found.kind is OverflowKind.CONTEXT_OVERFLOW


def test_llama_cpp_window_in_sibling_field() -> None:
    body = {"error": {"code": 400, "message": "the request exceeds the available context size",
                      "type": "exceed_context_size_error", "n_prompt_tokens": 5000,
                      "n_ctx": 4096}}  # fmt: skip
    found = classify(_status_error(400, body))
    assert found is not None and found.limit == 4096


def test_output_cap_reports_available_budget() -> None:
    text = "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000"
    found = classify(_Status(text, 400))
    assert found is not None and found.available_output == 10_000 and found.compressible
    capped = classify(_Status("max_tokens is too large: 9000, at most 4096", 400))
    assert capped is not None and not capped.compressible


def test_generic_400_only_on_a_large_session() -> None:
    bare = _status_error(400, _err("Bad Request"))
    assert classify(bare) is None
    assert classify(bare, session_tokens=50_000, context_length=100_000) is not None
    assert classify(bare, message_count=81) is not None
    explained = _status_error(400, _err("Invalid value for 'tools[0].function.name': too long"))
    assert classify(explained, message_count=500) is None


def test_httpx_status_error_and_plain_exceptions() -> None:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    response = httpx.Response(413, text="payload too large", request=request)
    error = httpx.HTTPStatusError("413", request=request, response=response)
    found = classify(error)
    assert found is not None and found.kind is OverflowKind.PAYLOAD_TOO_LARGE
    assert classify(ValueError("boom")) is None
    assert classify(_Status("prompt is too long", 400)) is not None


def test_parse_limit_ignores_implausible_numbers() -> None:
    assert parse_limit("maximum context length is 12 tokens") is None
    assert parse_limit("maximum context length is 131,072 tokens") == 131_072


def test_truncate_tool_results_water_fills_the_largest() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "r", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "r", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x" * 40_000},
        {"role": "tool", "tool_call_id": "b", "content": "y" * 4_000},
    ]  # fmt: skip
    out, count = truncate_tool_results(messages, 5_000)
    assert count == 1 and out is not messages
    assert len(out[2]["content"]) < 40_000 - 19_000 and "characters cut here" in out[2]["content"]
    assert out[3] is messages[3] and messages[2]["content"] == "x" * 40_000
    same, none = truncate_tool_results(messages, 0)
    assert same is messages and none == 0
