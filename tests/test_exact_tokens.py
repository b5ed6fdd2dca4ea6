"""Exact local token counts: used when cached, never downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import long_session
from windowkeeper import ContextCompressor, estimate_request_tokens
from windowkeeper.cli import app as cli
from windowkeeper.cli import load as cli_load
from windowkeeper.core.exact_tokens import counter_for, local_counter
from windowkeeper.core.messages import dump_jsonl

tiktoken = pytest.importorskip("tiktoken")


def _byte_encoding() -> object:
    """A tiny byte-level encoding built in memory (one token per UTF-8 byte)."""
    return tiktoken.Encoding(
        name="wk-test-bytes",
        pat_str=r"[\s\S]",
        mergeable_ranks={bytes([b]): b for b in range(256)},
        special_tokens={},
    )


def test_uncached_encoding_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    import tiktoken.load as load

    original = load.read_file
    monkeypatch.setattr(load, "read_file", lambda blob: calls.append(blob) or original(blob))
    assert local_counter(encoding="r50k_base") is None
    assert calls == []  # the guarded fetcher refused before any request was made
    assert load.read_file is not original  # our monkeypatch is back in place, untouched


def test_unknown_models_get_no_exact_counter() -> None:
    assert local_counter(model="claude-3-5-sonnet-20241022") is None


def test_an_exact_counter_drives_the_compressor() -> None:
    count = counter_for(_byte_encoding())
    assert count("héllo") == 6
    messages = long_session(20)
    rough = ContextCompressor(context_length=32_000).compress(messages, force=True)
    exact = ContextCompressor(context_length=32_000, token_counter=count).compress(
        messages, force=True
    )
    assert exact.report.before_tokens == estimate_request_tokens(messages, count=count)
    assert exact.report.before_tokens > 3 * rough.report.before_tokens  # bytes vs chars/4
    assert exact.report.compressed


def test_cli_exact_tokens_without_a_cached_encoding_warns_and_estimates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    path = tmp_path / "s.jsonl"
    path.write_text(dump_jsonl(long_session(20)))
    code = cli.main(["compress", str(path), "--context-length", "32000", "--exact-tokens"])
    err = capsys.readouterr().err
    assert code == 0
    assert "no exact tokenizer available locally" in err and "compressed" in err


def test_cli_inspect_counts_with_the_exact_counter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    count = counter_for(_byte_encoding())
    monkeypatch.setattr(cli_load, "exact_counter", lambda model: count)
    messages = long_session(20)
    path = tmp_path / "s.jsonl"
    path.write_text(dump_jsonl(messages))
    args = ["inspect", str(path), "--context-length", "32000", "--json"]
    assert cli.main(args) == 0
    rough = json.loads(capsys.readouterr().out)
    assert cli.main([*args, "--exact-tokens"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert exact["total_tokens"] == estimate_request_tokens(messages, count=count)
    assert exact["total_tokens"] > 3 * rough["total_tokens"]
    plan = exact["plan"]
    segments = plan["head"]["tokens"] + plan["middle"]["tokens"] + plan["tail"]["tokens"]
    assert segments == exact["total_tokens"]
