"""Request bodies parsed incrementally: always what ``json.loads`` gives (with the
gateway's number rules), reusing an earlier body's units where the bytes agree."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core.errors import InvalidMessagesError
from windowkeeper.gateway.bodies import BodyParser
from windowkeeper.gateway.protocols.base import loads

_TEXT = st.text(st.sampled_from('ab "\\/\n\t\x1f\u2028é€😀{}[],:0-'), max_size=12)
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too, where orjson reads a float
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_UNIT = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": _VALUE})
_STYLE = st.sampled_from(
    [
        {"separators": (",", ":"), "ensure_ascii": False},  # as orjson, JavaScript, Rust
        {"separators": (", ", ": "), "ensure_ascii": True},  # Python's default
        {"indent": 1, "ensure_ascii": False},
    ]
)


def _dump(head: dict[str, Any], units: list[Any], rest: dict[str, Any], style: Any) -> bytes:
    return json.dumps({**head, "messages": units, **rest}, **style).encode()


def _same(parser: BodyParser, raw: bytes) -> Any:
    parsed = parser.parse(raw, "messages", "scope", "chat")
    expected = loads(raw)
    assert parsed == expected
    assert list(parsed) == list(expected)  # member order too
    return parsed


@settings(max_examples=150, deadline=None)
@given(
    head=st.dictionaries(st.sampled_from(["model", "stream", "x"]), _VALUE, max_size=2),
    units=st.lists(_UNIT, min_size=1, max_size=6),
    more=st.lists(_UNIT, max_size=3),
    rest=st.dictionaries(st.sampled_from(["tools", "system", "y"]), _VALUE, max_size=2),
    other_rest=st.dictionaries(st.sampled_from(["tools", "z"]), _VALUE, max_size=2),
    edit=st.integers(min_value=0, max_value=5),
    style=_STYLE,
)
def test_every_body_parses_as_json_loads_does(
    head: dict[str, Any],
    units: list[Any],
    more: list[Any],
    rest: dict[str, Any],
    other_rest: dict[str, Any],
    edit: int,
    style: Any,
) -> None:
    parser = BodyParser()
    first = _same(parser, _dump(head, units, rest, style))
    _same(parser, _dump(head, units, rest, style))  # the same body again
    grown = _same(parser, _dump(head, units + more, rest, style))  # the history grew
    if units:
        assert grown["messages"][0] is first["messages"][0]  # reused, not parsed again
    changed = [*units[: edit % len(units)], {"role": "user", "content": "edited"}, *more]
    _same(parser, _dump(head, changed, other_rest, style))  # an earlier unit changed
    _same(parser, _dump(head, units, other_rest, style))  # the members after the list changed


def test_a_resent_history_is_not_parsed_again() -> None:
    parser = BodyParser()
    units = [{"role": "user", "content": "x" * 1000} for _ in range(20)]
    first = _dump({"model": "m"}, units, {"tools": [{"type": "function"}]}, {})
    _same(parser, first)
    assert parser.reused_bytes == 0
    longer = _dump({"model": "m"}, [*units, {"role": "assistant", "content": "y"}], {}, {})
    parsed = _same(parser, longer)
    assert parser.reused_bytes > 20_000  # the twenty units came from the first body
    assert len(parsed["messages"]) == 21


@pytest.mark.parametrize(
    "tail",
    [
        b',{"role":"user","content":NaN}]}',
        b',{"role":"user","content":1e999}]}',
        b',{"role":"user","content":"x"}',
        b',{"role":"user","content":"x"}]}garbage',
        b',{"role":"user","content":"x"},]}',
        b',{"role":"user","content":"x"}],}',
    ],
)
def test_a_bad_tail_after_a_known_prefix_fails_as_the_full_parse_does(tail: bytes) -> None:
    parser = BodyParser()
    known = b'{"model":"m","messages":[{"role":"user","content":"' + b"a" * 300 + b'"}'
    _same(parser, known + b"]}")
    with pytest.raises(InvalidMessagesError) as incremental:
        parser.parse(known + tail, "messages", "scope", "chat")
    with pytest.raises(InvalidMessagesError) as whole:
        loads(known + tail)
    assert str(incremental.value) == str(whole.value)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"m","messages":[{"a":1}],"messages":[{"b":2}]}',  # the last one wins
        b'{"messages":"no","model":"m","messages":[{"b":2}]}',
        b'{"model":"m","model":"n","messages":[],"model":"o"}',
        '{"model":"m","messages":[{"c":"é"}]}'.encode("utf-16"),
        b'\xef\xbb\xbf{"model":"m","messages":[]}',
        b'  {"model":"m","messages" : [ {"a" : 1} , {"b":2} ] }  ',
        b'["not", "an", "object"]',
        b'{"model":"m"}',
    ],
)
def test_unusual_bodies_parse_as_json_loads_does(raw: bytes) -> None:
    parser = BodyParser()
    for _ in range(2):
        try:
            expected = loads(raw)
        except InvalidMessagesError:
            with pytest.raises(InvalidMessagesError):
                parser.parse(raw, "messages")
            continue
        assert parser.parse(raw, "messages") == expected


def test_remembered_bodies_stay_within_the_byte_budget() -> None:
    parser = BodyParser(max_bytes=50_000)
    for n in range(40):
        units = [{"role": "user", "content": f"{n}" + "z" * 5_000}]
        _same(parser, _dump({"model": "m"}, units, {}, {}))
    assert 0 < parser.remembered_bytes <= 50_000


def test_scopes_never_share_bodies() -> None:
    parser = BodyParser()
    raw = _dump({"model": "m"}, [{"role": "user", "content": "q" * 400}], {}, {})
    first = parser.parse(raw, "messages", "tenant-a", "chat")
    other = parser.parse(raw, "messages", "tenant-b", "chat")
    assert other == first
    assert other["messages"][0] is not first["messages"][0]
    assert parser.reused_bytes == 0


_BASE = _dump(
    {"model": "m"},
    [{"role": "user", "content": f"turn {n} é 😀 \\n"} for n in range(6)],
    {"tools": [{"type": "function", "function": {"name": "f"}}], "stream": False},
    {"separators": (",", ":"), "ensure_ascii": False},
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(_BASE) - 1), st.binary(max_size=3)),
        min_size=1,
        max_size=3,
    )
)
def test_a_damaged_body_after_a_known_one_parses_or_fails_as_json_loads_does(
    edits: list[tuple[int, bytes]],
) -> None:
    parser = BodyParser()
    parser.parse(_BASE, "messages")
    damaged = bytearray(_BASE)
    for at, replacement in edits:
        damaged[at : at + len(replacement)] = replacement
    as_loads(parser, bytes(damaged))


def as_loads(parser: BodyParser, raw: bytes) -> Any:
    """What ``parser`` reads of ``raw``, checked to be ``json.loads``'s value (its types and
    member order too), or ``None`` after checking it fails with ``json.loads``'s error."""
    try:
        expected = loads(raw)
    except InvalidMessagesError as exc:
        with pytest.raises(InvalidMessagesError) as caught:
            parser.parse(raw, "messages")
        assert str(caught.value) == str(exc)
        return None
    parsed = parser.parse(raw, "messages")
    assert repr(parsed) == repr(expected) and list(parsed) == list(expected)
    return parsed


def test_an_agent_moving_its_cache_marker_keeps_one_body_remembered() -> None:
    parser = BodyParser()
    history: list[Any] = [{"role": "user", "content": "task " + "t" * 2_000}]
    for turn in range(30):
        history = [*history, {"role": "assistant", "content": f"step {turn} " + "s" * 2_000}]
        marked = [*history[:-1], {**history[-1], "cache_control": {"type": "ephemeral"}}]
        _same(parser, _dump({"model": "m"}, marked, {}, {}))
    assert parser.remembered_bytes < 2 * len(_dump({"model": "m"}, history, {}, {}))
    assert parser.reused_bytes > 25 * 2_000 * 15  # most of every body came from the last


def test_sessions_sharing_a_system_prompt_each_reuse_their_own_body() -> None:
    # Every body lands in one bucket (the same first bytes); each session's next request
    # must find its own body among them, as long as the bucket still holds it.
    parser = BodyParser()
    system = {"role": "system", "content": "You are an agent. " * 40}

    def units(n: int, grown: bool) -> list[Any]:
        first = [system, {"role": "user", "content": f"task {n} " + "x" * (n % 7)}]
        return [*first, {"role": "assistant", "content": "done"}] if grown else first

    firsts = {n: _same(parser, _dump({"model": "m"}, units(n, False), {}, {})) for n in range(200)}
    kept = range(199, 199 - 128, -1)  # a bucket holds the newest 128 bodies
    for n in kept:
        before = parser.reused_bytes
        grown = _same(parser, _dump({"model": "m"}, units(n, True), {}, {}))
        assert grown["messages"][1] is firsts[n]["messages"][1]
        assert parser.reused_bytes > before
    for n in range(199 - 128, -1, -1):  # evicted: parsed whole, and still json.loads's value
        before = parser.reused_bytes
        grown = _same(parser, _dump({"model": "m"}, units(n, True), {}, {}))
        assert grown["messages"][1] is not firsts[n]["messages"][1]
        assert parser.reused_bytes == before


def test_an_older_body_of_a_bucket_is_found_again() -> None:
    # Two sessions with the same first units: a body equal to the older one is that one.
    parser = BodyParser()
    first = _dump({"model": "m"}, [{"role": "user", "content": "a" * 300}], {}, {})
    second = _dump({"model": "m"}, [{"role": "user", "content": "a" * 301}], {}, {})
    kept = _same(parser, first)
    _same(parser, second)
    again = _same(parser, first)
    assert again["messages"][0] is kept["messages"][0]
    assert parser.reused_bytes == len(first)
