"""The gateway's pure parts: digests, substitution, session keys, SSE usage, settings, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from factories import assistant, system, user
from windowkeeper.cli.serve import serve_command
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.errors import ConfigError
from windowkeeper.core.settings import Settings
from windowkeeper.gateway.sessions import Prefix, prefix_digests, session_key, substitute
from windowkeeper.gateway.settings import GatewaySettings, gateway_settings, parse_model_context
from windowkeeper.gateway.streaming import UsageTap
from windowkeeper.gateway.upstream import forward_request_headers, forward_response_headers


def test_digests_ignore_key_order_and_respect_boundaries() -> None:
    a = [{"role": "user", "content": "ab"}, {"role": "user", "content": "c"}]
    b = [{"content": "ab", "role": "user"}, {"content": "c", "role": "user"}]
    c = [{"role": "user", "content": "a"}, {"role": "user", "content": "bc"}]
    assert prefix_digests(a, [2]) == prefix_digests(b, [2])
    assert prefix_digests(a, [2]) != prefix_digests(c, [2])
    both = prefix_digests(a, [1, 2, 5])
    assert set(both) == {1, 2} and both[1] == prefix_digests(a[:1], [1])[1]


def test_substitute_all_or_nothing() -> None:
    client = [system(), user("one"), assistant("two"), user("three")]
    digest = prefix_digests(client, [3])[3]
    prefix = Prefix(3, digest, ({"role": "user", "content": "[summary]"},))
    assert substitute(Prefix(), client, None) is client
    assert substitute(prefix, client, digest) == [*prefix.messages, client[3]]
    assert substitute(prefix, client, "other") is None
    assert substitute(prefix, client[:2], digest) is None


def test_session_key_header_or_fingerprint() -> None:
    opening = [system("S"), user("first")]
    assert session_key(opening, " agent-1 ") == "agent-1"
    longer = [*opening, assistant("x"), user("y")]
    assert session_key(opening, None) == session_key(longer, None)
    assert session_key([system("S"), user("other")], None) != session_key(opening, None)


def _event(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


def test_usage_tap_splits_events_and_drops_the_usage_only_chunk() -> None:
    content = _event({"choices": [{"delta": {"content": "hi"}}]})
    usage = _event({"choices": [], "usage": {"prompt_tokens": 77}})
    stream = content + usage + b"data: [DONE]\r\n\r\n"
    tap = UsageTap(forward_usage_chunks=False)
    out = b"".join(tap.feed(stream[i : i + 7]) for i in range(0, len(stream), 7)) + tap.flush()
    assert out == content + b"data: [DONE]\r\n\r\n"
    assert tap.usage == {"prompt_tokens": 77}
    keep = UsageTap(forward_usage_chunks=True)
    assert keep.feed(stream) == stream


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


def test_gateway_settings_from_the_config_file_values() -> None:
    file_settings = Settings.model_validate(
        {"model": {"name": "m", "context_length": 32_000},
         "compression": {"hygiene_threshold": 0.7, "hygiene_hard_message_limit": 300}}
    )  # fmt: skip
    built = gateway_settings(
        "http://x/v1", file_settings, context_length=16_000, model_context_lengths={"n": 9}
    )
    assert dict(built.context_lengths) == {"m": 32_000, "*": 16_000, "n": 9}
    assert built.hygiene_threshold == 0.7 and built.hard_message_limit == 300
    assert isinstance(built.compression, CompressionConfig)
    assert parse_model_context(["a=1", "org/b=20"]) == {"a": 1, "org/b": 20}
    with pytest.raises(ConfigError):
        parse_model_context(["nope"])


def test_header_filters() -> None:
    headers = {"Authorization": "Bearer c", "Host": "gw", "Connection": "close, X-Hop",
               "X-Hop": "1", "X-Windowkeeper-Session": "s", "Accept": "*/*"}  # fmt: skip
    assert forward_request_headers(headers, None) == {"Authorization": "Bearer c", "Accept": "*/*"}
    assert forward_request_headers(headers, "k")["Authorization"] == "Bearer k"
    upstream = {"Content-Type": "application/json", "Transfer-Encoding": "chunked",
                "Content-Encoding": "gzip", "X-Request-Id": "r1"}  # fmt: skip
    assert forward_response_headers(upstream) == {
        "Content-Type": "application/json", "X-Request-Id": "r1",
    }  # fmt: skip


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


def test_serve_takes_the_upstream_from_the_config(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(_serve_app(), ["serve"])
    assert missing.exit_code == 2 and "gateway.upstream" in missing.output
    config = tmp_path / "wk.yaml"
    config.write_text("gateway:\n  upstream: ftp://nope\n")
    bad = runner.invoke(_serve_app(), ["serve", "--config", str(config)])
    assert bad.exit_code == 2 and "http://" in bad.output  # the file's value was used
