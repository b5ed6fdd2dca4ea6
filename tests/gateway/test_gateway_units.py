"""The gateway's pure parts: digests, substitution, session keys, SSE usage, settings, CLI."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from factories import assistant, system, user
from windowkeeper.cli.serve import serve_command
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import ConfigError, InvalidMessagesError
from windowkeeper.core.settings import Settings
from windowkeeper.gateway.auth import authenticate
from windowkeeper.gateway.history import Seen, common_prefix, convert, digest_of
from windowkeeper.gateway.protocols import CHAT, MESSAGES, RESPONSES, Parsed
from windowkeeper.gateway.protocols.sse import EventSplitter
from windowkeeper.gateway.selection import INLINE_UNITS, selects_off_loop
from windowkeeper.gateway.sessions import Branch, GatewaySession, public_id, session_key
from windowkeeper.gateway.settings import GatewaySettings, gateway_settings, parse_model_context
from windowkeeper.gateway.upstream import forward_request_headers, forward_response_headers


def test_digests_ignore_key_order() -> None:
    a = [{"role": "user", "content": "ab"}, {"role": "user", "content": "c"}]
    b = [{"content": "ab", "role": "user"}, {"content": "c", "role": "user"}]
    c = [{"role": "user", "content": "a"}, {"role": "user", "content": "bc"}]
    assert digest_of(a) == digest_of(b) != digest_of(c)
    assert common_prefix(a, b) == 2 and common_prefix(a, c) == 0 and common_prefix(a, a[:1]) == 1


def _parsed(protocol: object, body: dict[str, object]) -> object:
    raw = json.dumps(body).encode()
    return protocol.parse(raw, json.loads(raw))  # type: ignore[attr-defined]


def test_conversion_reuses_the_agreeing_messages_as_the_same_objects() -> None:
    history = [system(), user("one"), assistant("two"), user("three")]
    first = _parsed(CHAT, {"model": "m", "messages": history})
    _, seen = convert(CHAT, first, None)  # type: ignore[arg-type]
    longer = _parsed(CHAT, {"model": "m", "messages": [*history, assistant("four"), user("5")]})
    reused, again = convert(CHAT, longer, seen)  # type: ignore[arg-type]
    assert reused == 4 and all(a is b for a, b in zip(again.messages, seen.messages, strict=False))
    items = {"model": "m", "instructions": "sys", "input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
    ]}  # fmt: skip
    _, responses = convert(RESPONSES, _parsed(RESPONSES, items), None)  # type: ignore[arg-type]
    more = {
        **items,
        "input": [
            *items["input"],
            {
                "type": "function_call",
                "call_id": "d",  # type: ignore[list-item]
                "name": "f",
                "arguments": "{}",
            },
        ],
    }
    reused, merged = convert(RESPONSES, _parsed(RESPONSES, more), responses)  # type: ignore[arg-type]
    # The model turn at the end may take the new call: it is converted again, not reused.
    assert reused == 2 and len(merged.messages) == 3
    assert [c["id"] for c in merged.messages[-1]["tool_calls"]] == ["c", "d"]


def test_only_a_history_the_conversion_made_is_offered_to_the_wire_as_made() -> None:
    """A history converted here may have its originals sent without converting them
    again; one restored from the store (``made=False``) may not, and a conversion that
    reuses its messages stays so, until a whole new conversion (another system)."""
    turns = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    body = {"model": "m", "max_tokens": 9, "system": "s", "messages": turns}
    _, fresh = convert(MESSAGES, _parsed(MESSAGES, body), None)  # type: ignore[arg-type]
    assert fresh.made and fresh.made_messages is fresh.messages
    restored = Seen(fresh.system, fresh.units, fresh.messages, fresh.ends, made=False)
    assert restored.made_messages == []
    longer = _parsed(MESSAGES, {**body, "messages": [*turns, {"role": "user", "content": "3"}]})
    reused, grown = convert(MESSAGES, longer, restored)  # type: ignore[arg-type]
    assert reused and not grown.made and grown.made_messages == []
    reused, grown = convert(MESSAGES, longer, fresh)  # type: ignore[arg-type]
    assert reused and grown.made and grown.made_messages is grown.messages
    other = _parsed(MESSAGES, {**body, "system": "t"})
    assert convert(MESSAGES, other, restored)[1].made  # type: ignore[arg-type]


def test_session_key_header_or_fingerprint_and_scope() -> None:
    texts = ("S", "first")
    assert public_id(session_key("k1", "chat", texts, " agent-1 ")) == "agent-1"
    assert session_key("k1", "chat", texts, None) == session_key("k1", "chat", texts, None)
    assert session_key("k1", "chat", texts, None) != session_key("k2", "chat", texts, None)
    assert session_key("k1", "chat", texts, None) != session_key("k1", "responses", texts, None)
    assert session_key("k1", "chat", ("S", "other"), None) != session_key("k1", "chat", texts, None)


def test_gateway_keys_and_scopes() -> None:
    keys = frozenset({"gw-key-1", "gw-key-2"})
    assert authenticate({}, keys) is None
    assert authenticate({"authorization": "Bearer wrong"}, keys) is None
    bearer = authenticate({"authorization": "Bearer gw-key-1"}, keys)
    header = authenticate({"x-api-key": "gw-key-1"}, keys)
    own = authenticate({"x-windowkeeper-key": "gw-key-2", "authorization": "Bearer sk-up"}, keys)
    assert bearer and header and own
    assert bearer.scope == header.scope != own.scope and "gw-key" not in bearer.scope
    assert bearer.drop == {"authorization"} and own.drop == {"x-windowkeeper-key"}
    open_a = authenticate({"authorization": "Bearer a"}, frozenset())
    open_b = authenticate({"authorization": "Bearer b"}, frozenset())
    assert open_a and open_b and open_a.scope != open_b.scope


def _event(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def test_usage_tap_splits_events_and_drops_the_usage_only_chunk() -> None:
    content = _event({"choices": [{"delta": {"content": "hi"}}]})
    usage = _event({"choices": [], "usage": {"prompt_tokens": 77}})
    stream = content + usage + b"data: [DONE]\r\n\r\n"
    parsed = _parsed(CHAT, {"model": "m", "messages": [], "stream": True})
    tap = CHAT.tap(parsed)  # type: ignore[arg-type]
    splitter = EventSplitter()
    events = [e for i in range(0, len(stream), 7) for e in splitter.feed(stream[i : i + 7])]
    assert b"".join(e for e in events if tap.keep(e)) == content + b"data: [DONE]\r\n\r\n"
    assert tap.usage == {"prompt_tokens": 77}


def test_settings_validate_and_match_models() -> None:
    with pytest.raises(ConfigError, match="hygiene"):
        GatewaySettings(upstream_base_url="http://x/v1", hygiene_threshold=0.05)
    with pytest.raises(ConfigError, match="http"):
        GatewaySettings(upstream_base_url="ftp://x")
    settings = GatewaySettings(
        upstream_base_url="http://x/v1/",
        context_lengths={"*": 8_000, "gpt-4o": 128_000, "gpt-4o-mini": 64_000},
    )
    assert settings.upstream_base_url == "http://x/v1"
    assert settings.configured_context_length("gpt-4o-mini-2024") == 64_000
    assert settings.configured_context_length("gpt-4o") == 128_000
    assert settings.configured_context_length("llama") == 8_000
    assert settings.compressor_config().threshold == 0.85
    with pytest.raises(ConfigError, match="no upstream"):
        GatewaySettings()
    anthropic_only = GatewaySettings(anthropic_base_url="https://api.anthropic.com/")
    assert anthropic_only.anthropic_base_url == "https://api.anthropic.com"


def test_gateway_settings_from_the_config_file_values() -> None:
    file_settings = Settings.model_validate(
        {"model": {"name": "m", "context_length": 32_000},
         "compression": {"hygiene_threshold": 0.7, "hygiene_hard_message_limit": 300}}
    )  # fmt: skip
    built = gateway_settings(
        "http://x/v1", file_settings, context_length=16_000, model_context_lengths={"n": 9},
        env={"WINDOWKEEPER_GATEWAY_KEYS": " k1 , k2,"},
    )  # fmt: skip
    assert built.api_keys == {"k1", "k2"} and built.max_body_bytes == 32 * 1024 * 1024
    with_keys = Settings.model_validate(
        {
            "gateway": {
                "api_keys": ["from-file"],
                "max_body_mib": 1,
                "max_session_mib": 64,
                "body_timeout_seconds": 2.5,
            }
        }
    )
    from_file = gateway_settings("http://x/v1", with_keys, env={})
    assert from_file.api_keys == {"from-file"} and from_file.max_body_bytes == 1024 * 1024
    assert from_file.max_session_bytes == 64 * 1024 * 1024
    assert built.max_session_bytes == 1024 * 1024 * 1024
    assert from_file.body_timeout == 2.5 and built.body_timeout == 5  # the keep-alive timeout
    shown = {e.key: e.value for e in with_keys.entries()}
    assert shown["gateway.api_keys"] == ["***"]  # `windowkeeper config` never prints a key
    assert dict(built.context_lengths) == {"m": 32_000, "*": 16_000, "n": 9}
    assert built.hygiene_threshold == 0.7 and built.hard_message_limit == 300
    assert isinstance(built.compression, CompressionConfig)
    assert parse_model_context(["a=1", "org/b=20"]) == {"a": 1, "org/b": 20}
    with pytest.raises(ConfigError):
        parse_model_context(["nope"])


def test_header_filters() -> None:
    headers = {"authorization": "Bearer c", "host": "gw", "connection": "close, x-hop",
               "x-hop": "1", "x-windowkeeper-session": "s", "accept": "*/*"}  # fmt: skip
    json_type = ("content-type", "application/json")
    assert forward_request_headers(headers, "openai", None, frozenset()) == [
        ("authorization", "Bearer c"), ("accept", "*/*"), json_type,
    ]  # fmt: skip
    replaced = forward_request_headers(headers, "openai", "k", frozenset())
    assert ("authorization", "Bearer k") in replaced and (
        "authorization",
        "Bearer c",
    ) not in replaced
    anthropic = forward_request_headers({"x-api-key": "client"}, "anthropic", "srv", frozenset())
    assert anthropic == [("x-api-key", "srv"), json_type]
    dropped = forward_request_headers(headers, "openai", None, frozenset({"authorization"}))
    assert all(k != "authorization" for k, _ in dropped)
    upstream = [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked"),
                ("Content-Encoding", "gzip"), ("X-Request-Id", "r1")]  # fmt: skip
    assert forward_response_headers(upstream) == [
        ("Content-Type", "application/json"), ("X-Request-Id", "r1"),
    ]  # fmt: skip


def _serve_app() -> typer.Typer:
    app = typer.Typer()
    app.command("serve")(serve_command)
    app.command("noop")(lambda: None)  # two commands: "serve" stays a subcommand
    return app


def test_serve_rejects_bad_options_before_starting() -> None:
    runner = CliRunner()
    bad = runner.invoke(_serve_app(), ["serve", "--upstream", "http://x/v1",
                                       "--model-context", "nope"])  # fmt: skip
    assert bad.exit_code == 2 and "MODEL=TOKENS" in bad.output
    scheme = runner.invoke(_serve_app(), ["serve", "--upstream", "ftp://x"])
    assert scheme.exit_code == 2 and "http://" in scheme.output
    key = runner.invoke(
        _serve_app(),
        ["serve", "--upstream", "http://x/v1", "--upstream-api-key-env", "WK_TEST_UNSET_KEY"],
        env={"WK_TEST_UNSET_KEY": ""},
    )
    assert key.exit_code == 2 and "WK_TEST_UNSET_KEY" in key.output
    port = runner.invoke(_serve_app(), ["serve", "--upstream", "http://x/v1", "--port", "70000"])
    assert port.exit_code == 2 and "between 1 and 65535" in port.output
    level = runner.invoke(
        _serve_app(), ["serve", "--upstream", "http://x/v1", "--log-level", "loud"]
    )
    assert level.exit_code == 2 and "--log-level must be one of" in level.output
    http = runner.invoke(_serve_app(), ["serve", "--upstream", "http://x/v1", "--http", "spdy"])
    assert http.exit_code == 2 and "--http must be one of httptools, h11" in http.output
    if importlib.util.find_spec("httptools") is None:  # the extra missing: say how to get it
        tools = runner.invoke(
            _serve_app(), ["serve", "--upstream", "http://x/v1", "--http", "httptools"]
        )
        assert tools.exit_code == 2 and "windowkeeper[gateway]" in tools.output


def test_serve_takes_the_upstream_from_the_config(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(_serve_app(), ["serve"])
    assert missing.exit_code == 2 and "--anthropic-upstream" in missing.output
    config = tmp_path / "wk.yaml"
    config.write_text("gateway:\n  upstream: ftp://nope\n")
    bad = runner.invoke(_serve_app(), ["serve", "--config", str(config)])
    assert bad.exit_code == 2 and "http://" in bad.output  # the file's value was used


def test_serve_takes_the_http_implementation_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "wk.yaml"
    config.write_text("gateway:\n  upstream: http://x/v1\n  http: spdy\n")
    bad = CliRunner().invoke(_serve_app(), ["serve", "--config", str(config)])
    assert bad.exit_code == 2 and "http" in bad.output and "httptools" in bad.output


def test_conversion_names_a_bad_message_of_a_grown_history_by_its_index() -> None:
    history = [system(), user("one"), assistant("two"), user("three")]
    _, seen = convert(CHAT, _parsed(CHAT, {"model": "m", "messages": history}), None)  # type: ignore[arg-type]
    deep: object = "x"
    for _ in range(120):
        deep = [deep]
    for bad, defect in (
        ({"role": "robot", "content": "x"}, "unknown role"),
        ({"role": "user", "content": [{"type": "text", "text": "x", "deep": deep}]}, "nest"),
    ):
        body = {"model": "m", "messages": [*history, assistant("four"), bad]}
        with pytest.raises(InvalidMessagesError) as raised:
            convert(CHAT, _parsed(CHAT, body), seen)  # type: ignore[arg-type]
        assert "message 5" in str(raised.value) and defect in str(raised.value)


def test_private_keys_are_found_whatever_else_a_message_carries() -> None:
    plain = [system(), user("one"), {**assistant("two"), "refusal": None}]
    assert not CHAT.has_private(plain)
    assert CHAT.has_private([*plain, {**user("x"), "_note": 1}])
    assert CHAT.has_private([{**user("x"), "extra": 1, "_note": 1}])
    assert not CHAT.has_private([{**user("x"), "extra": 1}])


def test_a_long_history_no_branch_saw_is_converted_off_the_event_loop() -> None:
    settings = gateway_settings("http://127.0.0.1:9/v1", Settings(), context_length=100_000)
    session = GatewaySession("k", CHAT, settings, lambda: 0.0, lambda *_: None)

    def parsed(count: int) -> Parsed:
        units = [user(f"m{n}") if n % 2 == 0 else assistant(f"a{n}") for n in range(count)]
        return _parsed(CHAT, {"model": "m", "messages": units})  # type: ignore[return-value]

    assert not selects_off_loop(session, parsed(INLINE_UNITS))  # converted on the loop
    assert selects_off_loop(session, parsed(INLINE_UNITS + 1))
    branch = session.add(Branch(session.root_key(), session, 100_000, "m"))
    branch.seen = convert(CHAT, parsed(300), None)[1]
    assert not selects_off_loop(session, parsed(300 + INLINE_UNITS))  # only the new units count
    assert selects_off_loop(session, parsed(301 + INLINE_UNITS))
