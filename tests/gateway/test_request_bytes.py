"""The upstream request body written by orjson is byte for byte what json writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.gateway.protocols.base import dumps, request_bytes

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e-3, max_value=1e-3, allow_nan=False),
    st.text(),  # lone surrogates included: json escapes them, orjson refuses
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(), inner)),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(VALUES)
def test_the_same_bytes_as_json(value: Any) -> None:
    assert request_bytes(value) == dumps(value)


@pytest.mark.parametrize(
    "value",
    [1e-05, 1e-07, 1.5e-05, 0.0001, 1e-10, 1e16, -0.0, 2**64, -(2**63) - 1, "\ud800", "é😀"],
)
def test_values_orjson_writes_differently_or_refuses(value: object) -> None:
    body = {"model": "m", "temperature": value, "messages": [{"role": "user", "content": "x"}]}
    assert request_bytes(body) == dumps(body)
    text = request_bytes(body).decode("utf-8")
    assert json.loads(text)["messages"][0]["content"] == "x"
