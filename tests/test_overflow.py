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
    overflow_wording,
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


# Real wordings of the local servers (issue 25 point 7), as their issue trackers quote them.
@pytest.mark.parametrize(
    ("status", "message", "provider", "limit", "counted"),
    [
        (500, "llama runner process has terminated: context window exceeded",
         "ollama-runner", None, None),
        (400, "input length exceeds the context length", "ollama", None, None),
        (400, "request (32768 tokens) exceeds the available context size (32768 tokens), try "
              "increasing it", "llama.cpp", 32_768, 32_768),
        (400, "The decoder prompt (length 9000) is longer than the maximum model length of "
              "8192. Make sure that `max_model_len` is no smaller than the number of text "
              "tokens.", "vllm", 8192, 9000),
        (400, "Trying to keep the first 10136 tokens when context the overflows. However, the "
              "model is loaded with context length of only 7866 tokens, which is not enough.",
         "lm-studio", 7866, 10_136),
        (400, "The number of tokens to keep from the initial prompt is greater than the "
              "context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a "
              "larger context length, or provide a shorter input.", "lm-studio", 4096, 13_055),
    ],
)  # fmt: skip
def test_local_servers_overflow_wordings_are_in_the_table(
    status: int, message: str, provider: str, limit: int | None, counted: int | None
) -> None:
    found = classify(_status_error(status, _err(message)))
    assert found is not None and found.kind is OverflowKind.CONTEXT_OVERFLOW
    assert (found.limit, found.request_tokens, found.status) == (limit, counted, status)
    row = overflow_wording(message, status)
    assert row is not None and row.provider == provider


def test_a_runner_crash_that_is_not_an_overflow_is_re_raised() -> None:
    crash = "llama runner process has terminated: error:failed to allocate buffer"
    assert classify(_status_error(500, _err(crash))) is None
    assert overflow_wording("context window exceeded", 502) is None
