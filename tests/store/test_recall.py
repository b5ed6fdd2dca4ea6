"""recall: every handle a compaction shows resolves to its original; search finds pruned text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _workers import make_compressor, round_messages

from windowkeeper import ContextCompressor
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.core.messages import Message, message_text
from windowkeeper.core.report import CompressionResult
from windowkeeper.store import RecallTool, SessionStore, compact_session

SESSIONS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "sessions"
STUB_REF = re.compile(r"\(ref (wk[0-9a-f]{10})\)")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{7,}")


def _check_round_trip(store: SessionStore, sid: str, result: CompressionResult) -> RecallTool:
    recall = RecallTool(store, sid, max_chars=1_000_000)
    shown = set(STUB_REF.findall(json.dumps(result.messages)))
    archived = {item.handle: item for item in result.archived}
    assert archived and shown <= set(archived), "a stub references an unarchived handle"
    for handle, item in archived.items():
        answer = recall.call("recall", {"handle": handle, "reveal": True})  # the original
        assert answer is not None and not answer.startswith("error"), handle
        original = message_text(item.message)
        assert original.strip() in answer, f"{handle}: original text missing"
        if item.kind == "tool_output":
            assert "tool output of " in answer.splitlines()[1]
    return recall


def _unique_pruned_word(result: CompressionResult) -> tuple[str, str]:
    """A word in one pruned tool output (its summarized copy may hold it too), not in the output."""
    visible = json.dumps(result.messages).lower()
    texts = [(i, message_text(i.message).lower()) for i in result.archived]
    for item, text in texts:
        if item.kind != "tool_output":
            continue
        for word in dict.fromkeys(WORD.findall(text)):
            holders = [other for other, t in texts if re.search(rf"\b{word}\b", t)]
            outputs = [h for h in holders if h.kind == "tool_output"]
            if word not in visible and len(outputs) == 1 and len(holders) <= 3:
                return word, item.handle
    pytest.skip("no word unique to one pruned output")


def _search_finds(recall: RecallTool, word: str, handle: str) -> None:
    answer = recall.call("recall", {"query": word, "limit": 5}) or ""
    assert handle in answer, answer


def test_synthetic_session_round_trip(store: SessionStore) -> None:
    messages = round_messages("a", rounds=4) + round_messages("b", rounds=4)
    messages[5]["content"] += "\nneedleuniqueword only here"  # pruned, then summarized
    sid = store.create_session(messages).id
    result = compact_session(store, sid, make_compressor(), force=True).result
    recall = _check_round_trip(store, sid, result)
    _search_finds(recall, "needleuniqueword", _handle_of(result, messages[5]))


def _handle_of(result: CompressionResult, message: Message) -> str:
    return next(i.handle for i in result.archived if i.message == message)


def test_bounded_answers_and_continuation(store: SessionStore) -> None:
    messages = round_messages("big", rounds=2, output_chars=30_000) + round_messages("c")
    sid = store.create_session(messages).id
    result = compact_session(store, sid, make_compressor(), force=True).result
    handle = max(result.archived, key=lambda i: len(message_text(i.message))).handle
    recall = RecallTool(store, sid)
    first = recall.call("recall", {"handle": handle}) or ""
    assert len(first) <= 8_000 and "[truncated:" in first
    more = json.loads(first.rsplit("call recall with ", 1)[1].split(" for the next")[0])
    second = recall.call("recall", more) or ""
    assert second.startswith(f"[archived {handle}") and "chars 7700-" in second
    assert len(recall.call("recall", {"query": "line", "limit": 20}) or "") <= 8_000


def test_errors_are_answers_not_exceptions(store: SessionStore) -> None:
    sid = store.create_session([{"role": "user", "content": "x"}]).id
    recall = RecallTool(store, sid)
    assert recall.call("other_tool", {}) is None
    assert (recall.call("recall", {}) or "").startswith("error:")
    assert "no archived item" in (recall.call("recall", {"handle": "wk0000000000"}) or "")
    assert "no archived item" in (recall.call("recall", {"query": "zzzz"}) or "")
    assert RecallTool(store, "missing").call("recall", {"handle": "wk1"}) == (
        "error: recall failed: unknown session 'missing'"
    )
    schema = recall.schemas()[0]
    assert schema["type"] == "function" and schema["function"]["name"] == "recall"
    assert set(schema["function"]["parameters"]["properties"]) >= {"handle", "query", "limit"}


def test_compressor_exposes_recall(store: SessionStore) -> None:
    sid = store.create_session(round_messages("a") + round_messages("b")).id
    recall = RecallTool(store, sid)
    compressor = ContextCompressor(context_length=12_000, tool_providers=[recall])
    result = compact_session(store, sid, compressor, force=True).result
    assert [s["function"]["name"] for s in compressor.get_tool_schemas()] == ["recall"]
    handle = result.archived[0].handle
    assert compressor.handle_tool_call("recall", {"handle": handle}).startswith("[archived")


@pytest.mark.real_sessions
def test_largest_real_session_round_trip(durable_url: str) -> None:
    from windowkeeper.store import open_store

    paths = (
        sorted(SESSIONS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
        if (SESSIONS.is_dir())
        else []
    )
    if not paths:
        pytest.skip(f"real sessions not available at {SESSIONS.resolve()}")
    messages = load_conversation(paths[-1]).messages
    with open_store(durable_url) as store:
        sid = store.create_session(messages, title=paths[-1].name).id
        compressor = ContextCompressor(context_length=64_000)
        result = compact_session(store, sid, compressor, force=True).result
        assert result.report.compressed
        recall = _check_round_trip(store, sid, result)
        word, handle = _unique_pruned_word(result)
        _search_finds(recall, word, handle)
