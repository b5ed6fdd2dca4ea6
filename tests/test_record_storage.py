"""How the analysis records store what they hold: the same answers, less kept.

Tool-call arguments are not kept parsed (a :class:`LazyArguments` parses them on use),
and archive handles hash their parts without joining or encoding a whole message: both
must answer exactly what the eager forms did. A record's memo has string keys only (the
compact dict layout) and never holds its own record (no reference cycle).
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factories import assistant, call, long_session, tool
from windowkeeper.analysis.record import (
    Analyzer,
    LazyArguments,
    MessageFacts,
    memo_key,
    parse_call,
)
from windowkeeper.compaction.prune import make_handle
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.jsonsafe import MAX_JSON_DEPTH
from windowkeeper.core.report import Tier
from windowkeeper.engine.compressor import ContextCompressor

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def _call(arguments: str, name: str = "tool") -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}


@given(st.dictionaries(st.text(), _JSON, max_size=5), st.text())
def test_lazy_arguments_answer_as_the_parsed_object(value: dict[str, Any], key: str) -> None:
    raw = json.dumps(value)
    lazy = LazyArguments(raw)
    assert dict(lazy) == value
    assert len(lazy) == len(value)
    assert list(lazy) == list(value)
    assert list(lazy.keys()) == list(value.keys())
    assert list(lazy.values()) == list(value.values())
    assert list(lazy.items()) == list(value.items())
    assert (key in lazy) is (key in value)
    assert lazy.get(key, "absent") == value.get(key, "absent")
    assert lazy == value


def test_a_call_keeps_its_raw_arguments_not_their_parse() -> None:
    raw = json.dumps({"file_path": "/src/app.py", "content": "x = 1\n" * 2_000})
    call = parse_call(_call(raw, "Write"))
    assert isinstance(call.args, LazyArguments)
    assert call.args.raw is raw  # the message's own string, no copy
    assert call.json_object
    assert call.args["file_path"] == "/src/app.py"
    assert call.action.path == "/src/app.py"


def test_non_object_arguments_stay_a_plain_mapping() -> None:
    shell = parse_call(_call("ls -la /tmp ", "bash"))
    assert shell.args == {"command": "ls -la /tmp"}
    assert type(shell.args) is dict and not shell.json_object
    listed = parse_call(_call("[1, 2]"))
    assert listed.args == {} and not listed.json_object


def _joined_handle(*parts: str) -> str:
    """The handle as it was computed before: the parts joined, then encoded whole."""
    text = "\x1f".join(parts).encode("utf-8", "replace")
    return "wk" + hashlib.blake2b(text, digest_size=5).hexdigest()


@given(st.lists(st.text(st.characters(), max_size=40), min_size=1, max_size=4))
def test_handle_of_parts_is_the_handle_of_their_join(parts: list[str]) -> None:
    assert make_handle(*parts) == _joined_handle(*parts)


def test_handle_of_long_text_with_surrogates_across_chunks() -> None:
    # Lone surrogates (allowed in a str, replaced when encoded) on both sides of the
    # 8 192-character slices the hash encodes, and text longer than several slices.
    text = ("é\ud800" * 4_095) + "\udfff" + ("ab\ud83d" * 9_000)
    assert make_handle(text) == _joined_handle(text)
    assert make_handle("assistant", text, '{"a": 1}') == _joined_handle(
        "assistant", text, '{"a": 1}'
    )


def test_arguments_too_deep_are_never_parsed_lazily() -> None:
    # LazyArguments parses without the depth check: parse_call must have done it.
    deep = '{"a": ' + "[" * (MAX_JSON_DEPTH + 5) + "]" * (MAX_JSON_DEPTH + 5) + "}"
    call = parse_call(_call(deep))
    assert not call.json_object
    assert call.args == {} and not isinstance(call.args, LazyArguments)


@given(
    st.dictionaries(st.text(), _JSON, max_size=4),
    st.sampled_from(["todos", "cwd", "run_in_background", "a_1", "é", "a/b", 'q"'])
    | st.text(max_size=6),
    st.booleans(),
)
def test_absent_keys_are_answered_as_the_parse_would(
    value: dict[str, Any], key: str, ascii_only: bool
) -> None:
    # With and without the key, written plainly or with ``\u`` escapes (ensure_ascii).
    for present in (value, {**value, key: 1}):
        lazy = LazyArguments(json.dumps(present, ensure_ascii=ascii_only))
        assert (key in lazy) is (key in present)
        assert lazy.get(key, "absent") == present.get(key, "absent")


def test_a_key_spelled_with_escapes_is_found() -> None:
    lazy = LazyArguments('{"\\u0074odos": [1], "cw\\u0064": "/tmp"}')
    assert lazy.get("todos") == [1]
    assert "cwd" in lazy and lazy.get("cwd") == "/tmp"
    assert lazy.get("workdir") is None and "workdir" not in lazy


class _Key(str):
    """A str subclass: answered by the parsed object itself, never by the keys."""


@given(
    st.lists(st.tuples(st.sampled_from(["todos", "cwd", "a", "é", 'q"', ""]) | st.text(max_size=4),
                       _JSON), max_size=5),
    st.lists(st.sampled_from(["todos", "cwd", "a", "é", 'q"', "", "command"])
             | st.text(max_size=4), max_size=4),
    st.booleans(),
)  # fmt: skip
def test_the_keys_a_call_keeps_answer_as_its_parse(
    pairs: list[tuple[str, Any]], probes: list[str], ascii_only: bool
) -> None:
    # Written pair by pair: a key may come twice (the parse keeps the last value).
    body = ", ".join(
        f"{json.dumps(k, ensure_ascii=ascii_only)}: {json.dumps(v, ensure_ascii=ascii_only)}"
        for k, v in pairs
    )
    raw = "{" + body + "}"
    parsed = json.loads(raw)
    lazy = parse_call(_call(raw)).args
    assert isinstance(lazy, LazyArguments)
    assert len(lazy) == len(parsed) and list(lazy) == list(parsed)
    for key in [*probes, *(k for k, _ in pairs)]:
        assert (key in lazy) is (key in parsed)
        assert lazy.get(key, "absent") == parsed.get(key, "absent")
        assert (_Key(key) in lazy) is (key in parsed)
        assert lazy.get(_Key(key), "absent") == parsed.get(key, "absent")
    assert 1 not in lazy and lazy.get(None, "absent") == "absent"


def test_calls_with_the_same_keys_share_one_tuple() -> None:
    first = parse_call(_call('{"command": "ls", "timeout": 5}')).args
    second = parse_call(_call('{"command": "pwd", "timeout": 9}')).args
    assert isinstance(first, LazyArguments) and isinstance(second, LazyArguments)
    assert first._keys is second._keys
    empty = parse_call(_call("{}", "bash"))  # an empty object: no keys, no command
    assert isinstance(empty.args, LazyArguments) and len(empty.args) == 0
    assert "command" not in empty.args


_PARAMETER = st.none() | st.integers() | st.text(max_size=8)


@given(st.lists(_PARAMETER, max_size=3), st.lists(_PARAMETER, max_size=3))
def test_memo_keys_are_one_shared_string_per_distinct_parameters(
    first: list[object], second: list[object]
) -> None:
    key = memo_key("files", *first)
    assert type(key) is str
    assert memo_key("files", *list(first)) is key  # interned: one object per key
    # Distinct parameters never share a key: None is not "None", 1 is not "1", and a
    # parameter holding the separator is not two parameters.
    same = [(type(v), v) for v in first] == [(type(v), v) for v in second]
    assert (memo_key("files", *second) == key) is same


_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123"


def _session_with_secrets() -> list[dict[str, Any]]:
    """A long session whose early turns hold a secret in prose, in a file written with
    it (a call extraction keeps as sent) and in a tool output, and a todo list."""
    messages = long_session(16)
    written = {"path": "app/settings.py", "content": f"TOKEN = '{_TOKEN}'\n"}
    todos = [{"content": "rotate the token", "status": "in_progress"}]
    messages[6:6] = [
        assistant(f"I will use the token {_TOKEN} for now.", call("w1", "write_file", **written)),
        tool("w1", "Wrote app/settings.py"),
        assistant(None, call("t1", "TodoWrite", todos=todos)),
        tool("t1", "Todos updated"),
        assistant(None, call("c1", "bash", command="cat .env")),
        tool("c1", f"GITHUB_TOKEN={_TOKEN}\n[exit code 0]"),
    ]
    return messages


def _records_after_a_compaction() -> tuple[list[MessageFacts], Any]:
    messages = _session_with_secrets()
    compressor = ContextCompressor(CompressionConfig(prune_only_ratio=0.01), context_length=8_000)
    records = compressor.analyzer.analyze(messages)  # the records the compaction reuses
    result = compressor.compress(messages, force=True)
    return records, result


def test_a_compaction_leaves_memos_with_string_keys_and_without_their_record() -> None:
    records, result = _records_after_a_compaction()
    assert result.report.tier is Tier.SUMMARY
    keys = {key for record in records for key in record.memo}
    assert all(type(key) is str for key in keys)
    # The session took each path of the masked copies: unchanged, masked, a call kept.
    masked = [record.memo[k] for record in records for k in record.memo if k.startswith("mask")]
    assert None in masked and any(isinstance(m, MessageFacts) for m in masked)
    assert memo_key("masked", 0) in keys
    for record in records:
        assert not any(value is record for value in record.memo.values())


@pytest.fixture
def collector_held_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("collector_held_off")
def test_records_are_freed_without_the_cyclic_collector() -> None:
    records, result = _records_after_a_compaction()
    assert result.report.tier is Tier.SUMMARY
    # The messages of this test's records and masked copies (holding them keeps no record
    # alive), so that cyclic garbage left by another test is not counted.
    copies = [m for r in records for m in r.memo.values() if isinstance(m, MessageFacts)]
    messages = [record.message for record in [*records, *copies]]
    assert copies and len(messages) > len(copies)
    mine = {id(message) for message in messages}
    del records, result, copies
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        cyclic = [o for o in gc.garbage if isinstance(o, MessageFacts) and id(o.message) in mine]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert cyclic == []


def test_a_cached_record_is_reused_only_while_its_message_is_unchanged() -> None:
    # The record keeps the content and calls it was made from (the cache keeps no tuple
    # of its own): reassigning either makes the message's record anew.
    analyzer = Analyzer()
    message = assistant("first", call("c1", "bash", command="ls"))
    record = analyzer.facts(message)
    assert analyzer.facts(message) is record
    assert record.content is message["content"] and record.tool_calls is message["tool_calls"]
    message["content"] = "second"
    again = analyzer.facts(message)
    assert again is not record and again.text == "second"
    message["tool_calls"] = [call("c2", "bash", command="pwd")]
    third = analyzer.facts(message)
    assert third is not again and [c.id for c in third.calls] == ["c2"]
    assert analyzer.facts(message) is third
