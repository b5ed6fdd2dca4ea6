"""A body parsed whole by orjson, its units' offsets located later, is what the standard
library's scanner reads: the same values (``json.loads``'s, with the gateway's number
rules) and the same offsets and text after the list, in every writer's style."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_gateway_bodies import _STYLE, _VALUE, as_loads
from windowkeeper.core import hint_scan
from windowkeeper.core.hint_scan import FORCE_PURE_PYTHON
from windowkeeper.core.optional import FORCE_STDLIB_JSON, orjson
from windowkeeper.gateway import bodytext
from windowkeeper.gateway.bodies import BodyParser
from windowkeeper.gateway.bodytext import Known, parse_whole, scan_whole
from windowkeeper.gateway.protocols.base import loads

_UNIT = _VALUE | st.fixed_dictionaries({"role": st.just("user"), "content": _VALUE})
_WHOLE = pytest.mark.skipif(
    bodytext._LONG_NUMBERS is None, reason="the orjson path needs orjson and Hyperscan"
)


def _exact(value: Any) -> str:
    """``value`` written with its types (an integer and an equal float differ)."""
    return repr(value)


def _body(known: Known | Any, key: str = "messages") -> Any:
    return known.body(key) if isinstance(known, Known) else known


@_WHOLE
@settings(max_examples=400, deadline=None)
@given(
    head=st.dictionaries(st.sampled_from(["model", "stream", "x"]), _VALUE, max_size=2),
    units=st.lists(_UNIT, max_size=6),
    rest=st.dictionaries(st.sampled_from(["tools", "system", "y"]), _VALUE, max_size=2),
    style=_STYLE,
)
def test_orjson_and_the_scanner_read_the_same_values_and_offsets(
    head: dict[str, Any], units: list[Any], rest: dict[str, Any], style: Any
) -> None:
    raw = json.dumps({**head, "messages": units, **rest}, **style).encode()
    whole = parse_whole(raw, "messages")
    scanned = scan_whole(raw, "messages")
    assert isinstance(scanned, Known)
    assert _exact(_body(whole)) == _exact(loads(raw)) == _exact(_body(scanned))
    assert list(_body(whole)) == list(loads(raw))  # member order too
    assert isinstance(whole, Known)
    assert whole.ends == scanned.ends  # located when asked, as the scanner found them
    assert whole.rest_text == scanned.rest_text
    assert whole.probes == scanned.probes


@_WHOLE
def test_a_fresh_body_locates_no_more_than_its_probes_need() -> None:
    units = [{"role": "user", "content": f"turn {n} " + "x" * 500} for n in range(30)]
    raw = json.dumps({"model": "m", "messages": units, "tools": []}).encode()
    whole = parse_whole(raw, "messages")
    assert isinstance(whole, Known)
    assert len(whole._ends) == 2 and whole._rest_text is None
    assert whole.ends == scan_whole(raw, "messages").ends  # type: ignore[union-attr]
    assert whole._rest_text == ', "tools": []}'


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model":"m","messages":[{"n":18446744073709551617}]}',  # 2**64 + 1
        b'{"model":"m","messages":[{"n":-9223372036854775809}]}',  # -2**63 - 1
        b'{"model":"m","messages":[{"n":123456789012345678901234567890}],"x":1}',
        b'{"model":"m","messages":[{"c":"\\ud800"}]}',  # a lone surrogate
        b'{"model":"m","messages":[{"c":"\xed\xa0\x80"}]}',  # one encoded
        b'{"model":"m","messages":[{"n":1e400}]}',
        b'{"model":"m","messages":[{"n":NaN}]}',
        b'{"model":"m","messages":[{"n":-Infinity}]}',
        b'{"model":"m","messages":[{"c":"\xff"}]}',
        b'{"model":"m","messages":[{"a":1}],"messages":[{"b":2}]}',
        b'{"messages":"no","model":"m","messages":[{"b":2}]}',
        b'{"messages":[{"a":1}],"model":"m","messages":[{"b":2}],"z":0}',
        b'{"model":"m","messages":[{"a":1,"a":2},[1.00,10]],"t":{"k":1,"k":2}}',
        b'{"model":"m","messages":[{"c":"a\tb"}]}',  # a raw tab: not JSON
        b'{"model":"m","messages":[1.00,1.5e0,"s",[1.0],{"a":[]}]}',  # "1.0" starts "1.00"
    ],
)
def test_what_orjson_reads_otherwise_is_read_as_json_loads_does(raw: bytes) -> None:
    parser = BodyParser()
    for _ in range(2):  # parsed whole, then found again
        as_loads(parser, raw)
    as_loads(parser, raw.replace(b"}]", b'},{"more":[1]}]', 1))  # grown, when it parses


@_WHOLE
@settings(max_examples=200, deadline=None)
@given(units=st.lists(_UNIT, min_size=2, max_size=6), more=_UNIT, style=_STYLE)
def test_a_session_extending_a_body_parsed_whole_reuses_its_units(
    units: list[Any], more: Any, style: Any
) -> None:
    parser = BodyParser()
    units = [{"role": "system", "content": "s" * 40}, *units]  # past the bucket's 32 bytes
    first = json.dumps({"model": "m", "messages": units, "stream": True}, **style).encode()
    grown = json.dumps({"model": "m", "messages": [*units, more], "stream": True}, **style)
    before = parser.parse(first, "messages")
    after = parser.parse(grown.encode(), "messages")
    assert _exact(after) == _exact(loads(grown.encode()))
    assert all(a is b for a, b in zip(after["messages"], before["messages"], strict=False))


def test_without_orjson_or_hyperscan_every_body_is_scanned() -> None:
    # CI runs the tests with each pure-Python switch set: then every body takes the scanner.
    forced = os.environ.get(FORCE_PURE_PYTHON) == "1" or os.environ.get(FORCE_STDLIB_JSON) == "1"
    missing = orjson is None or hint_scan.hyperscan is None
    assert (bodytext._LONG_NUMBERS is None) == (forced or missing)
